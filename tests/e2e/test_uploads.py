"""Files through the real upload path: `cortex ingest` puts the bytes in the Object Store and publishes
`kb.<org>.upload.created`; the indexer extracts the text — or stores the document as failed with the
reason, and dead-letters a copy of the event — and the next upload still flows."""

import asyncio
import codecs
import contextlib
import json
import random
import string
import uuid
from pathlib import Path

import httpx
import psutil
import pytest
from nats.js import JetStreamContext
from nats.js.api import ObjectStoreConfig

from cortex_cli.ingest import IngestOptions, document_id_for, ingest_files, upload_id_for
from cortex_contracts import subjects
from cortex_contracts.documents import ObjectRef
from cortex_contracts.envelope import new_envelope
from cortex_contracts.uploads import TYPE_UPLOAD_CREATED, UploadCreated, upload_document_id
from cortex_extractors import media_types, samples
from cortex_messaging.buckets import BODY_BUCKET, INLINE_BODY_LIMIT, UPLOAD_BUCKET
from cortex_messaging.publisher import publish_event
from tests.conftest import Org, OrgFactory
from tests.details import detail_when
from tests.dlq import read_dead_letters
from tests.events import publish_upsert, search_ids, upsert_event
from tests.infrastructure import Infrastructure
from tests.services import EXTRACTION_TIMEOUT
from tests.slow_pdf import slow_pdf

pytestmark = pytest.mark.e2e

CONSUMER = "indexer-kb"


def word(prefix: str) -> str:
    """A word no other document has (letters only, so every text parser keeps it whole)."""
    return prefix + "".join(random.choices(string.ascii_lowercase, k=12))


def options_for(org: Org) -> IngestOptions:
    return IngestOptions(organization_id=org.id, work_id=None, doc_class=None, tags=())


async def ingest(infra: Infrastructure, org: Org, directory: Path, files: dict[str, bytes]) -> dict[str, Path]:
    """Write the files and run the CLI's ingest on them, as `cortex ingest` does."""
    paths = {}
    for name, data in files.items():
        paths[name] = directory / name
        paths[name].write_bytes(data)
    assert await ingest_files(infra.nats_url, infra.database_url, list(paths.values()), options_for(org)) == len(files)
    return paths


def upload_document(org: Org, path: Path) -> uuid.UUID:
    return upload_document_id(upload_id_for(options_for(org), path))


async def announce_file(js: JetStreamContext, org: Org, data: bytes, filename: str, media_type: str) -> uuid.UUID:
    """Put the bytes in a bucket of their own and announce them as an upstream service would; the upload id."""
    upload_id = uuid.uuid4()
    store = await js.create_object_store(f"upstream-{uuid.uuid4().hex[:12]}", ObjectStoreConfig())
    await store.put(f"{org.id}/{upload_id}", data)
    upload = UploadCreated(
        upload_id=upload_id,
        organization_id=org.id,
        filename=filename,
        media_type=media_type,
        size_bytes=len(data),
        object=ObjectRef.owned(store._name, org.id, str(upload_id)),
    )
    await announce(js, upload)
    return upload_id


async def lexical_ids(client: httpx.AsyncClient, q: str) -> list[str]:
    """Documents that contain the words (BM25 alone: the dense leg ranks every document, matching or not)."""
    response = await client.get("/api/memory", params={"q": q, "mode": "lexical"})
    assert response.status_code == 200, response.text
    return [item["id"] for item in response.json()["items"]]


async def announce(js: JetStreamContext, upload: UploadCreated) -> None:
    """Publish `kb.<orgId>.upload.created` for the upload, as the upload service would."""
    event = new_envelope(
        event_type=TYPE_UPLOAD_CREATED,
        source="tests/upstream",
        org_id=upload.organization_id,
        subject=str(upload.upload_id),
        data=upload.model_dump(mode="json", by_alias=True, exclude_none=True),
    )
    await publish_event(js, subjects.kb_upload_created(upload.organization_id), event)


async def test_every_file_type_is_extracted_and_found_by_its_own_words(
    migrated: Infrastructure, org: Org, tmp_path: Path
) -> None:
    words = {kind: word(kind) for kind in ("pdf", "docx", "xlsx", "pptx", "html", "script", "style", "md")}
    page = f"""<!doctype html><html><head><title>Field guide</title>
        <style>.x {{ content: "{words["style"]}" }}</style><script>const t = "{words["script"]}";</script></head>
        <body><h1>Birds</h1><p>The {words["html"]} sings at dawn.</p></body></html>"""
    files = {
        "survey.pdf": samples.pdf_file([f"Results: {words['pdf']} everywhere."], title="Survey results"),
        "review.docx": samples.docx_file("Quarterly review", [("Revenue", f"Driven by {words['docx']} sales.")]),
        "budget.xlsx": samples.xlsx_file({"Costs": [["Item", "Cost"], [words["xlsx"], 12]]}),
        "kickoff.pptx": samples.pptx_file([("Kickoff", f"Goal: ship {words['pptx']}")]),
        "guide.html": page.encode(),
        "notes.md": f"# Notes\n\nPlain markdown still goes inline: {words['md']}.\n".encode(),
    }
    paths = await ingest(migrated, org, tmp_path, files)

    expected = {
        "survey.pdf": ("Survey results", media_types.PDF, words["pdf"]),
        "review.docx": ("Quarterly review", media_types.DOCX, words["docx"]),
        "budget.xlsx": ("budget", media_types.XLSX, words["xlsx"]),
        "kickoff.pptx": ("Kickoff", media_types.PPTX, words["pptx"]),
        "guide.html": ("Field guide", media_types.HTML, words["html"]),
    }
    for name, (title, media_type, unique) in expected.items():
        document_id = upload_document(org, paths[name])
        detail = await detail_when(org.member, document_id, status="published")
        assert detail["item"]["title"] == title
        assert detail["item"]["source"] == "upload"
        assert "failureReason" not in detail
        upload = detail["provenance"]["upload"]
        assert upload["filename"] == name
        assert upload["mediaType"] == media_type
        assert upload["sizeBytes"] == len(files[name])
        assert unique in detail["body"]
        assert await lexical_ids(org.member, unique) == [str(document_id)], name
        assert (await search_ids(org.member, unique))[0] == str(document_id), name

    markdown = document_id_for(options_for(org), paths["notes.md"])
    await detail_when(org.member, markdown, status="published")
    assert await lexical_ids(org.member, words["md"]) == [str(markdown)]
    assert (await search_ids(org.member, words["md"]))[0] == str(markdown)

    assert await lexical_ids(org.member, words["script"]) == []
    assert await lexical_ids(org.member, words["style"]) == []


async def gone(client: httpx.AsyncClient, document_id: uuid.UUID) -> None:
    async with asyncio.timeout(30):
        while (await client.get(f"/api/memory/documents/{document_id}")).status_code != 404:
            await asyncio.sleep(0.2)


async def test_a_file_that_changes_form_stays_one_item(
    migrated: Infrastructure, org: Org, js: JetStreamContext, tmp_path: Path
) -> None:
    """A text file is a document; emptied it goes as an upload (failed: no text), and filled again as text.
    Before: each form was an item of its own, so the old text stayed found beside the failed upload, and
    the failed upload stayed beside the text again, counted in documentsFailed for good (QA 32)."""
    before, after = word("before"), word("after")
    paths = await ingest(migrated, org, tmp_path, {"a.txt": f"The {before} report.".encode()})
    as_text, as_upload = document_id_for(options_for(org), paths["a.txt"]), upload_document(org, paths["a.txt"])
    await detail_when(org.member, as_text, status="published")

    await ingest(migrated, org, tmp_path, {"a.txt": b""})
    assert (await detail_when(org.member, as_upload, status="failed"))["failureReason"].startswith("empty:")
    await gone(org.member, as_text)
    assert await lexical_ids(org.member, before) == []

    await ingest(migrated, org, tmp_path, {"a.txt": f"The {after} report.".encode()})
    await detail_when(org.member, as_text, status="published")
    await gone(org.member, as_upload)
    assert await lexical_ids(org.member, after) == [str(as_text)]
    stats = (await org.member.get("/api/memory/stats")).json()
    assert (stats["documentsIndexed"], stats["documentsFailed"]) == (1, 0)
    uploads = await js.object_store(UPLOAD_BUCKET)
    kept = [info.name for info in await uploads.list() if info.name.startswith(f"{org.id}/") and not info.deleted]
    assert kept == []  # the empty file's object went with its document


async def test_a_markdown_body_too_large_for_an_event_travels_through_the_object_store_whole(
    migrated: Infrastructure, org: Org, tmp_path: Path
) -> None:
    first, last = word("first"), word("last")
    # Long words: many bytes in few passages, so that embedding it stays quick.
    filler = "".join(" ".join(["wide" * 25] * 100) + "\n\n" for _ in range(30))
    body = f"# Handbook\n\nIt opens with {first}.\n\n{filler}It closes with {last}.\n"
    assert len(body.encode()) > INLINE_BODY_LIMIT  # ~300 KB: three of the Object Store's 128 KiB chunks
    paths = await ingest(migrated, org, tmp_path, {"handbook.md": body.encode()})

    document_id = document_id_for(options_for(org), paths["handbook.md"])
    await detail_when(org.member, document_id, status="published")
    assert await lexical_ids(org.member, first) == [str(document_id)]
    assert await lexical_ids(org.member, last) == [str(document_id)]  # from the last chunk


async def test_text_without_spaces_is_indexed_in_bounded_passages(
    migrated: Infrastructure, org: Org, tmp_path: Path
) -> None:
    """Before: minified JSON was one passage whose words overflowed PostgreSQL's 1 MB tsvector, and the
    upload was retried, then dead-lettered, with no item at all (QA 42)."""
    first, last = word("first"), word("last")
    # Two-byte letters: words enough to overflow the tsvector in fewer characters (fewer passages to embed).
    fields = ",".join(f'"ключ{i}":"значение{i}"' for i in range(30_000))
    minified = f'{{"opening":"{first}",{fields},"closing":"{last}"}}'
    assert " " not in minified
    paths = await ingest(migrated, org, tmp_path, {"minified.txt": minified.encode()})

    document_id = document_id_for(options_for(org), paths["minified.txt"])
    detail = await detail_when(org.member, document_id, status="published")
    assert detail["body"] == minified
    assert await lexical_ids(org.member, first) == [str(document_id)]
    assert await lexical_ids(org.member, last) == [str(document_id)]


async def test_a_large_body_ingested_again_replaces_its_object(
    migrated: Infrastructure, org: Org, js: JetStreamContext, tmp_path: Path
) -> None:
    """Before: each ingest stored the body under a new name, and every version stayed in the bucket (QA 32)."""
    filler = "".join(" ".join(["wide" * 25] * 100) + "\n\n" for _ in range(30))
    first, second = word("first"), word("second")
    for said in (first, second):
        paths = await ingest(migrated, org, tmp_path, {"big.md": f"# Big\n\n{said}\n\n{filler}".encode()})
    document_id = document_id_for(options_for(org), paths["big.md"])

    async with asyncio.timeout(30):
        while await lexical_ids(org.member, second) != [str(document_id)]:
            await asyncio.sleep(0.2)
    assert await lexical_ids(org.member, first) == []
    bodies = await js.object_store(BODY_BUCKET)
    names = [info.name for info in await bodies.list() if info.name.startswith(f"{org.id}/{document_id}/")]
    assert names == [f"{org.id}/{document_id}/body"]


async def test_text_goes_as_its_extractor_reads_it_and_text_too_long_for_a_body_is_failed(
    migrated: Infrastructure, org: Org, js: JetStreamContext, tmp_path: Path
) -> None:
    """Before: the byte-order mark stayed in the body (its heading no title, its snippet starting with
    U+FEFF), and text over a body's length went as a document event, only to be dead-lettered."""
    said = word("bom")
    files = {
        "bom.md": codecs.BOM_UTF8 + f"# With a mark\n\nIt says {said}.\n".encode(),
        "long.txt": ("filler " * 150_000).encode(),  # 1,050,000 characters
    }
    paths = await ingest(migrated, org, tmp_path, files)

    marked = await detail_when(org.member, document_id_for(options_for(org), paths["bom.md"]), status="published")
    assert marked["item"]["title"] == "With a mark"
    assert marked["body"].startswith("# With a mark")
    assert (await search_ids(org.member, said))[0] == marked["item"]["id"]
    long = await detail_when(org.member, upload_document(org, paths["long.txt"]), status="failed")
    assert long["failureReason"] == "too large: the text is over 1,048,576 characters"
    (letter,) = await read_dead_letters(js, org.id, 1)
    assert letter.record["reason"] == "extraction failed"


async def test_an_upload_declared_as_another_type_is_read_as_what_its_bytes_are(
    org: Org, js: JetStreamContext, tmp_path: Path
) -> None:
    """Upstream says `application/pdf` and names it `report.pdf`; the bytes are a DOCX. Before: failed,
    `corrupt: not a readable PDF file`."""
    said = word("mislabelled")
    data = samples.docx_file("Quarterly report", [("Summary", f"It mentions {said}.")])
    upload_id = await announce_file(js, org, data, "report.pdf", media_types.PDF)

    detail = await detail_when(org.member, upload_document_id(upload_id), status="published")
    assert detail["item"]["title"] == "Quarterly report"
    assert await lexical_ids(org.member, said) == [str(upload_document_id(upload_id))]


async def test_an_upload_without_a_title_or_a_name_to_show_is_untitled(org: Org, js: JetStreamContext) -> None:
    """A document's title must not be blank: a file with no title of its own and a name of white space and
    zero-width characters is "untitled", not dead-lettered."""
    said = word("nameless")
    upload_id = await announce_file(
        js, org, f"No heading here, only {said}.".encode(), " \u200b ", media_types.PLAIN_TEXT
    )

    detail = await detail_when(org.member, upload_document_id(upload_id), status="published")
    assert detail["item"]["title"] == "untitled"
    assert await lexical_ids(org.member, said) == [str(upload_document_id(upload_id))]


async def test_unreadable_files_are_failed_with_their_reason_and_dead_lettered_and_the_next_still_indexed(
    migrated: Infrastructure, org: Org, js: JetStreamContext, tmp_path: Path
) -> None:
    hidden, after = word("locked"), word("after")
    docx = samples.docx_file("Broken", [("Section", "text")])
    paths = await ingest(
        migrated,
        org,
        tmp_path,
        {
            "locked.pdf": samples.pdf_file([f"Secret {hidden}"], password="hunter2"),
            "broken.docx": docx[: len(docx) // 2],
            "photo.png": b"\x89PNG\r\n\x1a\n" + bytes(64),
            "scan.pdf": samples.pdf_file([""]),  # pages without text, as a scanned document's
            "empty.md": b"",  # before: published as an empty document, where an empty upload failed
            "nothing.pdf": b"",  # before (QA 47): "corrupt: not a readable PDF file (EmptyFileError…)"
            "blank.txt": b" \n\t\n",
            "invisible.md": "\u200b\u3164\ufe0f\n".encode(),  # before: published blank, as an upload
        },
    )
    good = await ingest(migrated, org, tmp_path, {"after.pdf": samples.pdf_file([f"Indexed {after} anyway."])})

    reasons = {
        "locked.pdf": "encrypted: the PDF needs a password to open",
        "broken.docx": "corrupt: not a valid DOCX file: damaged ZIP package",
        "photo.png": "unsupported: no extractor for media type 'image/png'",
        "scan.pdf": "empty: the file holds no text (a scanned PDF or an image needs OCR first)",  # before: published
        "empty.md": "empty: the file holds no text",
        "nothing.pdf": "empty: the file holds no text",
        "blank.txt": "empty: the file holds no text",
        "invisible.md": "empty: the file holds no text",
    }
    failed = {}
    for name, reason in reasons.items():
        document_id = upload_document(org, paths[name])
        detail = await detail_when(org.member, document_id, status="failed")
        assert detail["failureReason"].startswith(reason), detail["failureReason"]
        assert detail["body"] == ""
        assert detail["item"]["title"] == Path(name).stem
        assert detail["provenance"]["upload"]["filename"] == name
        failed[str(upload_id_for(options_for(org), paths[name]))] = detail["failureReason"]

    good_id = upload_document(org, good["after.pdf"])
    await detail_when(org.member, good_id, status="published")
    listed = (await org.member.get("/api/memory", params={"status": "failed"})).json()["items"]
    assert {item["id"] for item in listed} == {str(upload_document(org, paths[name])) for name in reasons}
    assert {(item["kind"], item["status"]) for item in listed} == {("upload", "failed")}  # before: "document", none
    assert await lexical_ids(org.member, after) == [str(good_id)]
    assert (await search_ids(org.member, after))[0] == str(good_id)
    assert await lexical_ids(org.member, hidden) == []
    stats = (await org.member.get("/api/memory/stats")).json()
    assert (stats["documentsIndexed"], stats["documentsFailed"]) == (1, len(reasons))  # before: 8 indexed

    letters = await read_dead_letters(js, org.id, len(reasons))
    by_upload = {json.loads(letter.record["payload"])["data"]["uploadId"]: letter for letter in letters}
    assert set(by_upload) == set(failed)
    for upload_id, reason in failed.items():
        letter = by_upload[upload_id]
        assert letter.subject == f"dlq.{subjects.kb_upload_created(org.id)}"
        assert letter.record["reason"] == "extraction failed"
        assert letter.record["error"] == reason
        assert letter.record["consumer"] == CONSUMER
        assert letter.record["deliveries"] == 1  # handled on the first delivery: recorded, not retried
        assert letter.headers["Cortex-Dlq-Reason"] == "extraction failed"


async def test_an_upload_is_found_by_its_file_name_and_a_failed_one_too(
    migrated: Infrastructure, org: Org, tmp_path: Path
) -> None:
    """Two files made from one template share its title; their owner knows them by their names. Before (QA 47):
    no search found a file by its name, and a file that could not be read was found by nothing at all."""
    budget, vendors, broken = word("budget"), word("vendors"), word("broken")
    names = {"budget": f"{budget}_2025_v3.docx", "vendors": f"{vendors}.docx", "broken": f"{broken}.pdf"}
    files = {
        names["budget"]: samples.docx_file("Quarterly Vendor Review", [("Costs", "Costs went down.")]),
        names["vendors"]: samples.docx_file("Quarterly Vendor Review", [("Vendors", "Two vendors left.")]),
        names["broken"]: b"%PDF-1.7 cut short",
    }
    paths = await ingest(migrated, org, tmp_path, files)
    ids = {key: upload_document(org, paths[name]) for key, name in names.items()}
    for key in ("budget", "vendors"):
        await detail_when(org.member, ids[key], status="published")
    await detail_when(org.member, ids["broken"], status="failed")

    for key, said in (("budget", budget), ("vendors", vendors), ("broken", broken)):
        assert await lexical_ids(org.member, said) == [str(ids[key])], key
    # Lexical: the dense leg may find the other names near enough too (random letters, as these are).
    found = await org.member.get("/api/memory", params={"q": names["broken"], "mode": "lexical"})
    assert [(item["id"], item["status"], item["snippet"]) for item in found.json()["items"]] == [
        (str(ids["broken"]), "failed", f"{names['broken']} ({broken} pdf)")
    ]


async def test_a_fixed_file_uploaded_again_replaces_its_failed_document(
    migrated: Infrastructure, org: Org, js: JetStreamContext, tmp_path: Path
) -> None:
    fixed = word("fixed")
    paths = await ingest(migrated, org, tmp_path, {"plan.docx": b"PK\x03\x04 not really a document"})
    document_id = upload_document(org, paths["plan.docx"])
    await detail_when(org.member, document_id, status="failed")

    await ingest(migrated, org, tmp_path, {"plan.docx": samples.docx_file("Plan", [("Goal", f"Ship {fixed}.")])})

    detail = await detail_when(org.member, document_id, status="published")
    assert "failureReason" not in detail
    assert detail["item"]["title"] == "Plan"
    assert await lexical_ids(org.member, fixed) == [str(document_id)]
    assert len(await read_dead_letters(js, org.id, 1)) == 1  # the first, failed upload only


async def test_a_file_too_slow_to_read_fails_as_too_slow_and_holds_up_no_one_else(
    migrated: Infrastructure, org: Org, js: JetStreamContext, tmp_path: Path
) -> None:
    paths = await ingest(migrated, org, tmp_path, {f"slow{i}.pdf": slow_pdf() for i in range(3)})
    slow = [upload_document(org, path) for path in paths.values()]
    said = word("during")

    note = await org.admin.post(
        "/api/memory/documents", params={"wait": "true"}, json={"title": "During", "body": f"Written {said}."}
    )

    assert note.status_code == 201, note.text  # before: it waited for the files' parsers (QA: 5 minutes)
    statuses = [(await org.member.get(f"/api/memory/documents/{id_}")).status_code for id_ in slow]
    assert statuses == [404, 404, 404]  # still being read: the note did not wait for them
    reason = f"too slow: reading it took over {EXTRACTION_TIMEOUT:g} s"
    for document_id in slow:  # two are read at once, the third after them
        detail = await detail_when(org.member, document_id, status="failed")
        assert detail["failureReason"] == reason
    letters = await read_dead_letters(js, org.id, len(slow))
    assert {letter.record["error"] for letter in letters} == {reason}
    assert await lexical_ids(org.member, said) == [note.json()["id"]]


async def test_an_event_naming_another_organizations_object_is_refused(
    migrated: Infrastructure, make_org: OrgFactory, js: JetStreamContext, tmp_path: Path
) -> None:
    """The buckets are shared and `cortex ingest` names its objects predictably. Before, an event of one
    organization naming another's object indexed that organization's file, or body, as its own."""
    owner, intruder = await make_org(), await make_org()
    secret = word("secret")
    plans = samples.docx_file("Plans", [("Next", f"Acquire {secret}.")])
    paths = await ingest(migrated, owner, tmp_path, {"plans.docx": plans})
    await detail_when(owner.member, upload_document(owner, paths["plans.docx"]), status="published")
    owners = ObjectRef.owned(UPLOAD_BUCKET, owner.id, str(upload_id_for(options_for(owner), paths["plans.docx"])))

    upload_id = uuid.uuid4()
    upload = UploadCreated(
        upload_id=upload_id,
        organization_id=intruder.id,
        filename="plans.docx",
        media_type=media_types.DOCX,
        size_bytes=len(plans),
        object=owners,
    )
    await announce(js, upload)
    body_event = upsert_event(intruder.id, uuid.uuid4(), title="Plans", body="", version=1)
    refs = {**body_event.data, "body": None, "bodyRef": owners.model_dump(by_alias=True)}
    await publish_upsert(js, body_event.model_copy(update={"data": refs}))

    refusal = (
        f"object {owners.bucket}/{owners.name} is not this organization's: its name must start with {intruder.id}/"
    )
    detail = await detail_when(intruder.member, upload_document_id(upload_id), status="failed")
    assert detail["failureReason"] == f"refused: {refusal}"
    assert detail["body"] == ""
    letters = await read_dead_letters(js, intruder.id, 2)
    assert sorted(letter.record["error"] for letter in letters) == [f"body {refusal}", f"refused: {refusal}"]
    assert await lexical_ids(intruder.member, secret) == []
    assert await lexical_ids(owner.member, secret) == [str(upload_document(owner, paths["plans.docx"]))]


async def test_a_file_whose_extraction_process_dies_at_every_try_is_failed_at_the_last(
    migrated: Infrastructure, org: Org, js: JetStreamContext, tmp_path: Path
) -> None:
    """As the OOM killer would end them, every extraction process is killed while the file is read. Before,
    the event was dead-lettered after its last try and the file was nowhere: no failed document."""
    before = await ingest(migrated, org, tmp_path, {"before.pdf": samples.pdf_file(["The indexer is up."])})
    await detail_when(org.member, upload_document(org, before["before.pdf"]), status="published")
    paths = await ingest(migrated, org, tmp_path, {"doomed.pdf": slow_pdf()})
    document_id = upload_document(org, paths["doomed.pdf"])
    reading = asyncio.create_task(detail_when(org.member, document_id, status="failed"))
    while not reading.done():
        for process in psutil.Process().children():
            with contextlib.suppress(psutil.Error):
                if "cortex_indexer.extraction_workers" in process.cmdline():
                    process.kill()
        await asyncio.wait([reading], timeout=0.2)
    reason = "unreadable: the extraction process ended (killed by signal 9), at every try"
    assert (await reading)["failureReason"] == reason
    (letter,) = await read_dead_letters(js, org.id, 1)
    assert (letter.record["reason"], letter.record["error"]) == ("extraction failed", reason)
    assert letter.record["deliveries"] == 3  # the test indexer's max_deliver

    # The pool serves the next file with a live worker: at the first try, so no second letter.
    after = await ingest(migrated, org, tmp_path, {"after.pdf": samples.pdf_file(["Read at once."])})
    await detail_when(org.member, upload_document(org, after["after.pdf"]), status="published")
