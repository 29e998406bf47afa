"""`cortex ingest` as a user runs it, against the running services: a file that changes form while its
first form is still being read, file names that are not UTF-8, and a file that cannot be read."""

import asyncio
import hashlib
import os
import random
import string
import uuid
from pathlib import Path

import httpx
import pytest
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

from cortex_cli.ingest import FILE_NAMESPACE, IngestOptions, forms_of
from cortex_contracts import subjects
from cortex_contracts.subjects import STREAM_KB
from cortex_contracts.uploads import upload_document_id
from cortex_indexer.bootstrap import CONSUMER
from tests.acks import AckLog
from tests.cli_runs import cli
from tests.conftest import Org
from tests.details import detail_when
from tests.infrastructure import Infrastructure
from tests.slow_pdf import slow_pdf

pytestmark = pytest.mark.e2e


def word(prefix: str) -> str:
    """A word no other document has."""
    return prefix + "".join(random.choices(string.ascii_lowercase, k=12))


def options_for(org: Org) -> IngestOptions:
    return IngestOptions(organization_id=org.id, work_id=None, doc_class=None, tags=())


async def status_of(client: httpx.AsyncClient, document_id: uuid.UUID) -> int:
    return (await client.get(f"/api/memory/documents/{document_id}")).status_code


async def last_seqs(js: JetStreamContext, subject: str) -> set[int]:
    """The stream sequence of the last event on `subject`, if there is one."""
    try:
        seq = (await js.get_last_msg(STREAM_KB, subject)).seq
    except NotFoundError:
        return set()
    return {seq} if seq is not None else set()


async def test_a_file_that_changes_form_while_its_first_form_is_being_read_stays_one_item(
    migrated: Infrastructure, org: Org, js: JetStreamContext, nats_client: NATS, tmp_path: Path
) -> None:
    """The CLI deleted the other form only if it was stored already. A file sent as an upload and, before the
    indexer had stored it, sent again as text (QA: the same file edited and ingested again) was two items:
    the upload was stored after the check, and nothing deleted it."""
    path = tmp_path / "report.txt"
    path.write_bytes(slow_pdf())  # PDF bytes: an upload, which the indexer reads for seconds
    as_text, as_upload = forms_of(options_for(org), path)
    acks = await AckLog(STREAM_KB, CONSUMER).start(nats_client)
    try:
        assert await cli(migrated, ["ingest", str(path), "--org", org.slug]) == 0
        (upload_event,) = await last_seqs(js, subjects.kb_upload_created(org.id))

        said = word("edited")
        path.write_text(f"The {said} report.")
        assert await cli(migrated, ["ingest", str(path), "--org", org.slug]) == 0
        # The race happened: the second ingest was over while the indexer still held the upload's event.
        assert upload_event not in {ack.stream_seq for ack in acks.acks}
        assert await status_of(org.member, as_upload) == 404

        handled = {upload_event} | await last_seqs(js, subjects.kb_document_deleted(org.id))  # the upload's deletion
        async with asyncio.timeout(60):
            while not handled <= {ack.stream_seq for ack in acks.acks}:
                await asyncio.sleep(0.2)
    finally:
        await acks.stop()

    detail = await detail_when(org.member, as_text, status="published")
    assert said in detail["body"]
    assert await status_of(org.member, as_upload) == 404  # before: stored as failed ("too slow"), beside the text
    stats = (await org.member.get("/api/memory/stats")).json()
    assert (stats["documentsIndexed"], stats["documentsFailed"]) == (1, 0)


async def test_a_deletion_is_sent_only_where_the_other_form_may_exist(
    migrated: Infrastructure, org: Org, js: JetStreamContext, tmp_path: Path
) -> None:
    """A first ingest of `notes.md` (no upload of it in the bucket) or of `report.pdf` (a name that holds no
    text) has no other form to delete; `report.txt` holding PDF bytes may have been text a moment ago."""
    (tmp_path / "notes.md").write_text(f"# Notes\n\nAbout {word('notes')}.")
    (tmp_path / "report.pdf").write_bytes(slow_pdf())
    subject = subjects.kb_document_deleted(org.id)
    assert (
        await cli(migrated, ["ingest", str(tmp_path / "notes.md"), str(tmp_path / "report.pdf"), "--org", org.slug])
        == 0
    )
    assert await last_seqs(js, subject) == set()  # before: one deletion per file

    (tmp_path / "report.txt").write_bytes(slow_pdf())
    assert await cli(migrated, ["ingest", str(tmp_path / "report.txt"), "--org", org.slug]) == 0
    assert len(await last_seqs(js, subject)) == 1


def id_from_bytes(name: bytes) -> uuid.UUID:
    """uuid5 of the name's bytes, as the file system holds them."""
    digest = hashlib.sha1(FILE_NAMESPACE.bytes + name, usedforsecurity=False).digest()
    return uuid.UUID(bytes=digest[:16], version=5)


async def test_file_names_that_are_not_utf8_are_ingested_with_the_others(
    migrated: Infrastructure, org: Org, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a traceback (uuid5 cannot encode the name's surrogate escapes), and no file of the run published."""
    words = {kind: word(kind) for kind in ("text", "html", "plain")}
    directory = os.fsencode(tmp_path)
    text = Path(os.fsdecode(directory + b"/caf\xe9.md"))  # Latin-1, as an older system wrote it
    html = Path(os.fsdecode(directory + b"/r\xe9sum\xe9.html"))
    plain = tmp_path / "café.md"  # UTF-8: its id is what it always was
    text.write_text(f"Ordered {words['text']} here.")
    html.write_text(f"<html><body><p>Written {words['html']}.</p></body></html>")
    plain.write_text(f"Kept {words['plain']}.")

    code = await cli(migrated, ["ingest", str(text), str(html), str(plain), "--org", org.slug])

    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert f"published 3 file(s) for {org.slug}" in out
    prefix = f"{org.id}:".encode()
    text_id = id_from_bytes(prefix + os.fsencode(text.resolve()))
    detail = await detail_when(org.member, text_id, status="published")
    assert (detail["item"]["title"], words["text"] in detail["body"]) == ("caf\ufffd", True)
    upload_id = id_from_bytes(b"upload:" + prefix + os.fsencode(html.resolve()))
    detail = await detail_when(org.member, upload_document_id(upload_id), status="published")
    upload = detail["provenance"]["upload"]
    assert (upload["id"], upload["filename"]) == (str(upload_id), "r\ufffdsum\ufffd.html")
    assert words["html"] in detail["body"]
    plain_id = uuid.uuid5(FILE_NAMESPACE, f"{org.id}:{plain.resolve()}")  # as ids were made before
    detail = await detail_when(org.member, plain_id, status="published")
    assert detail["item"]["title"] == "café"


async def test_a_file_that_cannot_be_read_is_one_error_line_and_the_others_are_published(
    migrated: Infrastructure, org: Org, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: the first error was a traceback, and the files after it were not published."""
    unreadable = Path("/proc/self/mem")  # a regular file whose first bytes cannot be read (EIO), even by root
    after = tmp_path / "after.md"
    said = word("after")
    after.write_text(f"Published {said} anyway.")

    code = await cli(migrated, ["ingest", str(unreadable), str(after), "--org", org.slug])

    out, err = capsys.readouterr()
    assert code == 1
    assert err.splitlines() == [
        "error: /proc/self/mem: Input/output error",
        "error: 1 of 2 file(s) not published",
    ]
    assert f"published 1 file(s) for {org.slug}" in out
    detail = await detail_when(org.member, forms_of(options_for(org), after)[0], status="published")
    assert said in detail["body"]
