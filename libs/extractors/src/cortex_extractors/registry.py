"""`extract`: pick the extractor for a media type — an installed `cortex.extractor` plugin, else a built-in.

Plugins are found once, on first use. One that fails to load is logged and skipped; the rest still work.
"""

import functools
import logging
from importlib.metadata import entry_points

from cortex_extractors import html_page, markdown, pdf, plain_text, presentation, spreadsheet, word
from cortex_extractors.errors import (
    CorruptFile,
    EmptyFile,
    ExtractionError,
    ExtractorFailed,
    TooLarge,
    UnsupportedMediaType,
)
from cortex_extractors.extracted import Extracted, Extractor
from cortex_extractors.limits import MAX_INPUT_BYTES
from cortex_extractors.media_types import OLE_MAGIC, label, normalize

log = logging.getLogger(__name__)

GROUP = "cortex.extractor"
BUILT_IN: tuple[Extractor, ...] = (
    markdown.extractor,
    plain_text.extractor,
    html_page.extractor,
    pdf.extractor,
    word.extractor,
    spreadsheet.extractor,
    presentation.extractor,
)
BUILT_IN_MODULE = "cortex_extractors."


@functools.cache
def _by_media_type() -> dict[str, tuple[Extractor, str | None]]:
    """Media type → (extractor, its plugin's entry-point name, None for a built-in): the built-ins,
    overridden by other packages' entry points."""
    by_type: dict[str, tuple[Extractor, str | None]] = {
        normalize(kind): (built_in, None) for built_in in BUILT_IN for kind in built_in.media_types
    }
    for entry in entry_points(group=GROUP):
        if entry.value.startswith(BUILT_IN_MODULE):
            continue
        try:
            plugin: Extractor = entry.load()
            by_type |= {normalize(kind): (plugin, entry.name) for kind in plugin.media_types}
        except Exception:
            log.exception("extractor plugin %r (%s) failed to load; skipped", entry.name, entry.value)
    return by_type


def supported_media_types() -> frozenset[str]:
    return frozenset(_by_media_type())


def extract(media_type: str, data: bytes, filename: str | None = None) -> Extracted:
    """The text of a file. Raises an `ExtractionError` subclass, with a reason, for anything it cannot read;
    a `MemoryError` as it is: the caller's process limit was reached, which says nothing about the file."""
    kind = normalize(media_type)
    found = _by_media_type().get(kind)
    if found is None and data.startswith(OLE_MAGIC):  # .doc, .xls, .ppt: say what would be read
        raise UnsupportedMediaType("a legacy binary Office file: save it as DOCX, XLSX or PPTX and upload again")
    if found is None:
        raise UnsupportedMediaType(f"no extractor for media type {kind!r}")
    if len(data) > MAX_INPUT_BYTES:
        raise TooLarge(f"the file is over {MAX_INPUT_BYTES // 2**20} MiB")
    if not data:  # of any type: a 0-byte PDF was "corrupt: not a readable PDF file" (QA 47)
        raise EmptyFile
    extractor, plugin = found
    try:
        return extractor.extract(data, filename)
    except (ExtractionError, MemoryError):  # out of memory is the worker's to report (as too large), not the file's
        raise
    except Exception as exc:  # parsers fail on malformed input with any exception at all
        raised = f"{type(exc).__name__}: {exc}"
        if plugin is not None:
            raise ExtractorFailed(f"the {plugin!r} extractor plugin raised {raised}") from exc
        raise CorruptFile(f"not a readable {label(kind)} file ({raised})") from exc
