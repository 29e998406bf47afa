"""Extractors are `cortex.extractor` entry points: the built-ins are registered, and a plugin can add or replace."""

from collections.abc import Iterator
from importlib.metadata import entry_points

import pytest

from cortex_extractors import Extracted, extract, html_page, media_types, registry
from cortex_extractors.errors import CorruptFile, ExtractorFailed
from cortex_plugins.testing import FakeEntryPoint


@pytest.fixture(autouse=True)
def fresh_registry() -> Iterator[None]:
    registry._by_media_type.cache_clear()
    yield
    registry._by_media_type.cache_clear()


def test_the_built_ins_are_registered_as_entry_points() -> None:
    registered = {entry.name: entry.load() for entry in entry_points(group=registry.GROUP)}
    assert {"markdown", "plain-text", "html", "pdf", "docx", "xlsx", "pptx"} <= set(registered)
    covered = {kind for extractor in registered.values() for kind in extractor.media_types}
    assert {media_types.PDF, media_types.DOCX, media_types.XLSX, media_types.PPTX, media_types.HTML} <= covered


class Csv:
    media_types = frozenset({"text/csv"})

    def extract(self, data: bytes, filename: str | None) -> Extracted:
        return Extracted(title=filename, text=data.decode().replace(",", " | "))


def test_a_plugin_adds_a_media_type_and_a_broken_one_is_skipped(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    plugins = [
        FakeEntryPoint("broken", "missing_package:extractor", ImportError("no module named missing_package")),
        FakeEntryPoint("csv", "csv_plugin:extractor", Csv()),
    ]
    monkeypatch.setattr(registry, "entry_points", lambda group: plugins if group == registry.GROUP else [])

    assert extract("text/csv", b"a,b", "t.csv") == Extracted(title="t.csv", text="a | b")
    assert extract(media_types.PLAIN_TEXT, b"still here").text == "still here"
    assert "'broken'" in caplog.text


def test_a_plugin_replaces_a_built_in_for_its_media_type(monkeypatch: pytest.MonkeyPatch) -> None:
    class Shouting:
        media_types = frozenset({media_types.PLAIN_TEXT})

        def extract(self, data: bytes, filename: str | None) -> Extracted:
            return Extracted(title=None, text=data.decode().upper())

    plugins = [FakeEntryPoint("shout", "shout:extractor", Shouting())]
    monkeypatch.setattr(registry, "entry_points", lambda group: plugins)

    assert extract(media_types.PLAIN_TEXT, b"quiet").text == "QUIET"
    assert extract(media_types.MARKDOWN, b"# md").text == "# md"


def test_a_plugin_that_raises_is_named_as_the_failure_not_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    class Buggy:
        media_types = frozenset({"text/csv"})

        def extract(self, data: bytes, filename: str | None) -> Extracted:
            raise KeyError("delimiter")

    monkeypatch.setattr(registry, "entry_points", lambda group: [FakeEntryPoint("csv", "csv_plugin:x", Buggy())])

    with pytest.raises(ExtractorFailed) as failed:
        extract("text/csv", b"a,b", "t.csv")
    # Before: "corrupt: not a readable text/csv file (KeyError: 'delimiter')", blaming the file.
    assert failed.value.summary == "extractor failed: the 'csv' extractor plugin raised KeyError: 'delimiter'"
    with pytest.raises(CorruptFile):  # a built-in parser's exception is the malformed file's
        extract(media_types.PDF, b"%PDF-1.7 garbage")


class OutOfMemory:
    media_types = frozenset({"text/csv"})

    def extract(self, data: bytes, filename: str | None) -> Extracted:
        raise MemoryError


def test_running_out_of_memory_is_raised_as_it_is_not_blamed_on_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker process reports a MemoryError as too large and is replaced. Before: a built-in's became
    `corrupt: not a readable HTML file (MemoryError: )`, a plugin's `extractor failed`."""
    monkeypatch.setattr(html_page.extractor, "extract", OutOfMemory().extract)
    monkeypatch.setattr(registry, "entry_points", lambda group: [FakeEntryPoint("csv", "csv:x", OutOfMemory())])
    with pytest.raises(MemoryError):
        extract(media_types.HTML, b"<p>big</p>")
    with pytest.raises(MemoryError):
        extract("text/csv", b"a,b")
