"""`cortex ingest`'s ids per file: the same as ever for a UTF-8 name (documents already stored keep theirs),
and one per file for a name that is not UTF-8 (before: uuid5 raised on its surrogate escapes)."""

import os
import uuid
from pathlib import Path

import pytest

from cortex_cli.ingest import FILE_NAMESPACE, IngestOptions, document_id_for, title_of, upload_id_for

OPTIONS = IngestOptions(organization_id=uuid.UUID(int=7), work_id=None, doc_class=None, tags=())


@pytest.mark.parametrize("name", ["notes.md", "café.md", "报告 2024.pdf", "ﬁle\u200b.txt"])
def test_a_utf8_name_keeps_the_ids_it_had(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    org = OPTIONS.organization_id
    assert document_id_for(OPTIONS, path) == uuid.uuid5(FILE_NAMESPACE, f"{org}:{path.resolve()}")
    assert upload_id_for(OPTIONS, path) == uuid.uuid5(FILE_NAMESPACE, f"upload:{org}:{path.resolve()}")


def test_a_name_that_is_not_utf8_has_ids_of_its_own(tmp_path: Path) -> None:
    latin1 = Path(os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9.md"))
    utf8 = tmp_path / "café.md"

    ids = {document_id_for(OPTIONS, latin1), upload_id_for(OPTIONS, latin1)}

    assert ids == {document_id_for(OPTIONS, Path(str(latin1))), upload_id_for(OPTIONS, Path(str(latin1)))}
    assert len(ids | {document_id_for(OPTIONS, utf8), upload_id_for(OPTIONS, utf8)}) == 4
    assert title_of(latin1, "no heading") == "caf\ufffd"
    assert title_of(latin1, "# Menu\n") == "Menu"


@pytest.mark.parametrize(
    ("body", "title"),
    [
        ("---\ntitle: Release plan\n---\n\n# Heading\n", "Release plan"),
        ("```sh\n# a comment\n```\n\n# Deploying\n", "Deploying"),
        ("Overview\n========\n\nText.", "Overview"),
        ("# Notes #\n", "Notes"),
        ("## A section only\n", "plan"),
        ("# \u200b\n", "plan"),  # a blank title would be refused
    ],
)
def test_a_text_files_title_is_read_as_the_markdown_extractor_reads_it(body: str, title: str) -> None:
    """Before: only a line starting with "# " counted, so a shell comment in a code block titled the file."""
    assert title_of(Path("/notes/plan.md"), body) == title
