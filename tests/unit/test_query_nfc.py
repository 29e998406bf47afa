"""A query is read in Unicode NFC, as the indexer keeps text: "café" typed either way finds the same words."""

import unicodedata
import uuid

from cortex_contracts.memory import RecallRequest
from cortex_contracts.rpc import FacetsRequest, FeedRequest

COMPOSED = "naïve café"
DECOMPOSED = unicodedata.normalize("NFD", COMPOSED)


def test_every_query_is_read_in_nfc() -> None:
    org = uuid.uuid4()
    assert DECOMPOSED != COMPOSED

    assert FeedRequest(organization_id=org, q=DECOMPOSED).q == COMPOSED
    assert FacetsRequest(organization_id=org, q=DECOMPOSED).q == COMPOSED
    assert RecallRequest(organization_id=org, q=DECOMPOSED).q == COMPOSED
