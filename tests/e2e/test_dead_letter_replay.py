"""`cortex dlq list | replay`: an operator sees an organization's dead letters and, the cause fixed (a body
uploaded late, an organization created late), sends them again; the events are indexed, the letters are
gone, and another organization's stay where they are."""

import asyncio
import json
import os
import signal
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.api import ObjectStoreConfig

from cortex_cli import dead_letters
from cortex_contracts import subjects
from cortex_contracts.uploads import upload_document_id
from cortex_gateway.tokens import issue_token
from cortex_messaging.dead_letter import DeadLetter, send_dead_letter
from tests.cli_runs import cli, cli_process
from tests.conftest import Org
from tests.dlq import read_dead_letters
from tests.events import IndexedWatcher, publish_upload, publish_upsert, search_ids, upload_event, upsert_event
from tests.infrastructure import Infrastructure
from tests.org_clients import client_for
from tests.services import RunningServices

pytestmark = pytest.mark.e2e


async def test_letters_are_listed_and_replayed_once_the_cause_is_fixed(
    org: Org, migrated: Infrastructure, js: JetStreamContext, nats_client: NATS, capsys: pytest.CaptureFixture[str]
) -> None:
    bucket, document = f"late-{uuid.uuid4().hex[:12]}", uuid.uuid4()
    # The upstream service published the event before its upload of the body had finished.
    late = upsert_event(org.id, document, title="Zebra report", body="", version=1)
    late = late.model_copy(
        update={"data": {**late.data, "body": None, "bodyRef": {"bucket": bucket, "name": f"{org.id}/b"}}}
    )
    await publish_upsert(js, late)
    other_org = uuid.uuid4()
    await js.publish(subjects.kb_document_upserted(other_org), b"not an event")
    (letter,) = await read_dead_letters(js, org.id, 1)
    assert letter.record["error"] == f"body object {bucket}/{org.id}/b not found"

    assert await cli(migrated, ["dlq", "list", "--org", org.slug]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    number, _, subject, about, reason = line.strip().split("  ")
    assert subject == subjects.kb_document_upserted(org.id)
    assert about == f'document "{document}"'
    assert reason == f"poison message: body object {bucket}/{org.id}/b not found"
    assert await cli(migrated, ["dlq", "list", "--org", org.slug, "--json"]) == 0
    (listed,) = map(json.loads, capsys.readouterr().out.splitlines())
    assert (str(listed["sequence"]), listed["subject"]) == (number.strip(), subject)
    assert listed["about"] == {"kind": "document", "name": str(document)}
    assert json.loads(listed["payload"])["data"]["bodyRef"]["bucket"] == bucket

    assert await cli(migrated, ["dlq", "replay", "--org", org.slug]) == 2  # neither numbers nor --all
    assert await cli(migrated, ["dlq", "replay", "--org", org.slug, "999999"]) == 1
    assert "no dead letter of" in capsys.readouterr().err

    store = await js.create_object_store(bucket, ObjectStoreConfig())
    await store.put(f"{org.id}/b", b"The zebra migration report, uploaded at last.")
    watcher = await IndexedWatcher().start(nats_client, org.id)
    assert await cli(migrated, ["dlq", "replay", "--org", org.slug, number]) == 0
    assert capsys.readouterr().out == f"replayed {number}: {subject}\n"

    await watcher.wait_for(document, 1)
    await watcher.stop()
    assert await search_ids(org.member, "zebra migration") == [str(document)]
    assert await cli(migrated, ["dlq", "list", "--org", org.slug]) == 0
    assert capsys.readouterr().out == "no dead letters\n"
    # The other organization's letter was neither listed nor replayed.
    (kept,) = await read_dead_letters(js, other_org, 1)
    assert kept.record["reason"] == "poison message"


async def test_letters_naming_no_organization_are_listed_as_unowned(
    org: Org, migrated: Infrastructure, js: JetStreamContext, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: an event whose subject names no organization (no UUID, or no organization's) was dead-lettered
    where no `cortex dlq list --org` could show it."""
    mark = uuid.uuid4().hex[:12]
    strays = [f"kb.not-an-org-{mark}.document.upserted", subjects.kb_document_upserted(uuid.uuid4())]
    for subject in [*strays, subjects.kb_document_upserted(org.id)]:
        await js.publish(subject, f"not an event {mark}".encode())
    await read_dead_letters(js, org.id, 1)

    async with asyncio.timeout(30):
        while True:
            assert await cli(migrated, ["dlq", "list", "--unowned"]) == 0
            listed = [line.split()[2] for line in capsys.readouterr().out.splitlines() if line != "no dead letters"]
            if all(subject in listed for subject in strays):
                break
            await asyncio.sleep(0.2)
    assert subjects.kb_document_upserted(org.id) not in listed
    for both_or_neither in (["dlq", "list"], ["dlq", "list", "--org", org.slug, "--unowned"]):
        with pytest.raises(SystemExit) as usage:
            await cli(migrated, both_or_neither)
        assert usage.value.code == 2


async def test_events_for_an_organization_created_late_are_replayed_to_it(
    services: RunningServices, migrated: Infrastructure, js: JetStreamContext, nats_client: NATS
) -> None:
    """Upstream names its organizations by their own ids: one that Cortex does not know yet has its events
    retried, then dead-lettered; created with that id (`cortex token --create --org-id`), it gets them."""
    upstream_id, slug, document = uuid.uuid4(), f"late-{uuid.uuid4().hex[:12]}", uuid.uuid4()
    await publish_upsert(js, upsert_event(upstream_id, document, title="Early news", body="Quokka census.", version=1))
    (letter,) = await read_dead_letters(js, upstream_id, 1, timeout=40)
    assert letter.record["error"] == f"UnknownOrganization: no organization {upstream_id} (yet)"

    create = ["token", "--org", slug, "--user", "ops", "--role", "admin", "--create"]
    assert await cli(migrated, [*create[:-1], "--org-id", str(upstream_id)]) == 2  # only with --create
    assert await cli(migrated, [*create, "--org-id", str(upstream_id)]) == 0
    assert await cli(migrated, [*create, "--org-id", str(uuid.uuid4())]) == 1  # the slug has its id already
    watcher = await IndexedWatcher().start(nats_client, upstream_id)
    assert await cli(migrated, ["dlq", "replay", "--org", slug, "--all"]) == 0

    await watcher.wait_for(document, 1)
    await watcher.stop()
    async with client_for(services.base_url, issue_token("ops", services.secret), slug) as ops:
        assert await search_ids(ops, "quokka census") == [str(document)]


async def test_an_upload_stored_as_failed_is_indexed_when_its_letter_is_replayed(
    org: Org, migrated: Infrastructure, js: JetStreamContext, nats_client: NATS, capsys: pytest.CaptureFixture[str]
) -> None:
    """The file was announced before it was uploaded: the document is stored as failed and dead-lettered.
    Before, the replay was dropped silently (the event id claimed, the failed version counted as stored)."""
    upload_id, bucket = uuid.uuid4(), f"uploads-{uuid.uuid4().hex[:12]}"
    document = upload_document_id(upload_id)
    content = b"The narwhal tusk survey, uploaded at last.\n"
    event = upload_event(
        org.id, upload_id, filename="survey.txt", size=len(content), bucket=bucket, name=f"{org.id}/survey.txt"
    )
    watcher = await IndexedWatcher().start(nats_client, org.id)
    try:
        await publish_upload(js, event)
        (letter,) = await read_dead_letters(js, org.id, 1)
        assert letter.record["error"] == f"missing: object {bucket}/{org.id}/survey.txt not found"
        failed = (await org.member.get(f"/api/memory/documents/{document}")).json()
        assert failed["failureReason"] == letter.record["error"]

        # Replayed while the file is still missing, it fails again and comes back as a new letter.
        assert await cli(migrated, ["dlq", "list", "--org", org.slug]) == 0
        (first,) = capsys.readouterr().out.splitlines()
        assert await cli(migrated, ["dlq", "replay", "--org", org.slug, "--all"]) == 0
        capsys.readouterr()
        async with asyncio.timeout(30):
            while not (again := await _listed(migrated, org, capsys)):
                await asyncio.sleep(0.2)
        assert [line.split()[0] for line in again] != [first.split()[0]]
        assert again[0].strip().split("  ")[2:] == first.strip().split("  ")[2:]

        store = await js.create_object_store(bucket, ObjectStoreConfig())
        await store.put(f"{org.id}/survey.txt", content)
        assert await cli(migrated, ["dlq", "replay", "--org", org.slug, "--all"]) == 0
        assert "replayed" in capsys.readouterr().out
        await watcher.wait_for(document, 1)  # once for the failure, once now: the last is the success
        async with asyncio.timeout(30):
            while await search_ids(org.member, "narwhal tusk") != [str(document)]:
                await asyncio.sleep(0.2)
    finally:
        await watcher.stop()
    indexed = (await org.member.get(f"/api/memory/documents/{document}")).json()
    assert indexed.get("failureReason") is None
    assert "narwhal tusk survey" in indexed["body"]
    assert await cli(migrated, ["dlq", "list", "--org", org.slug]) == 0
    assert capsys.readouterr().out == "no dead letters\n"


async def _listed(migrated: Infrastructure, org: Org, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The lines of `cortex dlq list`: one a letter, none when there are none."""
    assert await cli(migrated, ["dlq", "list", "--org", org.slug]) == 0
    out = capsys.readouterr().out
    return [] if out == "no dead letters\n" else out.splitlines()


async def test_replaying_all_ends_with_the_letters_it_found_though_their_events_fail_again(
    org: Org, migrated: Infrastructure, js: JetStreamContext, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Before: `--all` went on to the DLQ's end as it moved, which its own replays, failing again, kept pushing
    further: 4,434 replays of 22 letters in 40 s, and it did not end."""
    count, subject = 20, subjects.kb_document_upserted(org.id)
    for _ in range(count):
        await js.publish(subject, b'{"id": "1", "type": ')  # dead-lettered at once, and again when replayed
    await read_dead_letters(js, org.id, count)
    numbers = [line.split()[0] for line in await _listed(migrated, org, capsys)]
    assert len(numbers) == count

    done = await cli_process(migrated, tmp_path, ["dlq", "replay", "--org", org.slug, "--all"])

    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [f"replayed {number}: {subject}" for number in numbers]
    # The events did fail again: as many new letters, after those replayed, and left for the next run.
    async with asyncio.timeout(30):
        while len(again := await _listed(migrated, org, capsys)) < count:
            await asyncio.sleep(0.2)
    assert len(again) == count
    assert min(int(line.split()[0]) for line in again) > max(map(int, numbers))


class Interrupted(Exception):
    pass


async def test_each_replay_is_told_as_soon_as_it_is_done(js: JetStreamContext, migrated: Infrastructure) -> None:
    """So that a run cut short (Ctrl-C, a lost connection) leaves a record of what it sent: `cortex dlq replay`
    prints each line as it is told. Before: nothing was said until the end."""
    org_id = uuid.uuid4()
    for n in range(4):
        letter = DeadLetter(
            subjects.kb_document_upserted(org_id), "tests", "poison message", f"letter {n}", 1, {}, b"{}"
        )
        await send_dead_letter(js, letter)
    numbers = [letter.sequence for letter in await dead_letters.list_letters(migrated.nats_url, org_id)]
    told: list[int] = []

    def interrupt_at_the_second(letter: dead_letters.Letter) -> None:
        told.append(letter.sequence)
        if len(told) == 2:
            raise Interrupted

    with pytest.raises(Interrupted):
        await dead_letters.replay_letters(migrated.nats_url, org_id, None, interrupt_at_the_second)

    assert told == numbers[:2]
    # (Where the indexer runs, the two replayed fail again: new letters, after these.)
    left = [
        letter
        for letter in await dead_letters.list_letters(migrated.nats_url, org_id)
        if letter.sequence <= numbers[-1]
    ]
    assert [(letter.sequence, letter.error) for letter in left] == [(numbers[2], "letter 2"), (numbers[3], "letter 3")]


async def test_two_replays_at_once_send_each_letter_once(js: JetStreamContext, migrated: Infrastructure) -> None:
    """Before: both published every letter, and the one that came second to delete it ended in a traceback."""
    org_id = uuid.uuid4()
    subject = subjects.kb_document_upserted(org_id)
    for n in range(10):
        await send_dead_letter(js, DeadLetter(subject, "tests", "poison message", f"letter {n}", 1, {}, b"{}"))
    numbers = [letter.sequence for letter in await dead_letters.list_letters(migrated.nats_url, org_id)]
    told: list[list[int]] = [[], []]

    def teller(n: int) -> Callable[[dead_letters.Letter], None]:
        return lambda letter: told[n].append(letter.sequence)

    await asyncio.gather(*(dead_letters.replay_letters(migrated.nats_url, org_id, None, teller(n)) for n in (0, 1)))

    assert sorted(told[0] + told[1]) == numbers  # each told by the replay that took it
    stream = await js.stream_info(subjects.STREAM_KB, subjects_filter=subject)
    assert (stream.state.subjects or {}).get(subject) == len(numbers)


async def test_a_listing_into_a_closed_pipe_ends_quietly(
    migrated: Infrastructure, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`cortex dlq list --org X | head -1`. Before: "error: cannot connect to the database: [Errno 32] Broken pipe"
    and exit code 1 (a long listing), or Python's "Exception ignored" and exit code 120 (a short one)."""
    slug = f"pipe-{uuid.uuid4().hex[:12]}"
    assert await cli(migrated, ["token", "--org", slug, "--user", "ops", "--create"]) == 0
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = await cli_process(migrated, tmp_path, ["dlq", "list", "--org", slug], stdout=write_end)
    finally:
        os.close(write_end)

    assert (done.returncode, done.stderr) == (128 + signal.SIGPIPE, "")


async def test_one_message_lettered_twice_is_one_letter(js: JetStreamContext, migrated: Infrastructure) -> None:
    """Its ack lost when NATS restarted, a message is delivered and dead-lettered again. Before (QA 46), the DLQ
    held 307 letters for 300 events, and a replay of them all published those events twice."""
    org_id = uuid.uuid4()
    subject = subjects.kb_document_upserted(org_id)
    for error in ("first delivery", "delivered again"):
        letter = DeadLetter(subject, "tests", "poison message", error, 1, {}, b"{}", origin="KB/4242")
        await send_dead_letter(js, letter)
    other = DeadLetter(subject, "tests", "poison message", "another message", 1, {}, b"{}", origin="KB/4243")
    await send_dead_letter(js, other)

    letters = await dead_letters.list_letters(migrated.nats_url, org_id)
    assert [letter.error for letter in letters] == ["first delivery", "another message"]


async def test_letters_that_can_never_succeed_are_dropped_and_only_the_named_ones(
    org: Org, migrated: Infrastructure, js: JetStreamContext, capsys: pytest.CaptureFixture[str]
) -> None:
    """QA 47: a poison letter stayed its 30 days, and `replay --all` sent it round again each time; an unowned
    one could not be acted on at all."""
    stray = f"kb.not-an-org-{uuid.uuid4().hex[:12]}.document.upserted"
    mine = subjects.kb_document_upserted(org.id)
    for subject in (mine, mine, stray):
        await send_dead_letter(js, DeadLetter(subject, "tests", "poison message", "never an event", 1, {}, b"{}"))
    first, second = [letter.sequence for letter in await dead_letters.list_letters(migrated.nats_url, org.id)]
    unowned = await dead_letters.list_unowned_letters(migrated.nats_url, {org.id})
    (stray_number,) = [letter.sequence for letter in unowned if letter.subject == stray]

    # Another organization's letter, or the unowned one, is not this organization's to drop.
    assert await cli(migrated, ["dlq", "drop", "--org", org.slug, str(first), str(stray_number)]) == 1
    said = capsys.readouterr()
    assert said.out == f"dropped {first}: {mine}\n"
    assert said.err == f"error: no dead letter of {org.slug} numbered {stray_number}\n"
    assert await cli(migrated, ["dlq", "drop", "--unowned", str(stray_number), str(second)]) == 1
    assert capsys.readouterr().out == f"dropped {stray_number}: {stray}\n"

    assert [letter.sequence for letter in await dead_letters.list_letters(migrated.nats_url, org.id)] == [second]
    assert stray not in [letter.subject for letter in await dead_letters.list_unowned_letters(migrated.nats_url, set())]
