"""The gateway's event ids: stable for the same request, and not derivable without the gateway's secret."""

import uuid

from cortex_gateway.event_ids import event_id

ORG, OTHER_ORG, ENTRY = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()


def test_the_same_entry_has_the_same_id_so_twins_are_one_event() -> None:
    assert event_id("s" * 32, "entry", ORG, ENTRY) == event_id("s" * 32, "entry", ORG, ENTRY)


def test_the_id_depends_on_the_secret_the_organization_and_the_kind() -> None:
    ids = {
        event_id("s" * 32, "entry", ORG, ENTRY),
        event_id("t" * 32, "entry", ORG, ENTRY),
        event_id("s" * 32, "entry", OTHER_ORG, ENTRY),
        event_id("s" * 32, "note", ORG, ENTRY),
    }
    assert len(ids) == 4
    assert str(ENTRY) not in "".join(ids)  # before: `entry-<id>`, which anyone who knew the entry's id could send
