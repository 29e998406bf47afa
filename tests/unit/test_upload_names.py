"""What an upload is called: a NUL in its event's names is a malformed event (dead-lettered at once), and a
NUL in the title a file gives itself is dropped (PostgreSQL text cannot hold one)."""

import uuid
from typing import Any

import pytest
from pydantic import ValidationError

from cortex_contracts.uploads import UploadCreated
from cortex_indexer.uploads import _title


def upload(**fields: Any) -> dict[str, Any]:
    event = {
        "uploadId": str(uuid.uuid4()),
        "organizationId": str(uuid.uuid4()),
        "filename": "plan.pdf",
        "mediaType": "application/pdf",
        "sizeBytes": 10,
    }
    return event | fields


@pytest.mark.parametrize("field", ["filename", "mediaType", "docClass"])
def test_a_nul_in_an_upload_events_names_makes_it_malformed(field: str) -> None:
    UploadCreated.model_validate(upload(**{field: "plain"}))
    # Before: accepted, then the document's title failed validation on every delivery (retried for 81 s, each
    # time fetching and reading the file again) and the event was dead-lettered with no document made.
    with pytest.raises(ValidationError, match="String should match pattern"):
        UploadCreated.model_validate(upload(**{field: "nul\x00name"}))


def test_a_nul_in_a_files_own_title_is_dropped() -> None:
    assert _title("Quarterly\x00 report", "q.pdf") == "Quarterly report"
    assert _title("\x00", "q.pdf") == "q"  # nothing left: the file's name
    assert _title(None, "q.pdf") == "q"
