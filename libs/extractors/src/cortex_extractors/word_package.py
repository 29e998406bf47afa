"""The parts of a DOCX package the text comes from: main document, its styles, notes, headers and footers, and
the core properties.

They are found as python-docx finds them, through relationships (`_rels/.rels`, then the main part's
own rels), and only they are read: python-docx parsed every XML part of the package.
"""

import io
import posixpath
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from lxml import etree

from cortex_extractors.errors import CorruptFile

RELATIONSHIP = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"
CORE_TITLE = "{http://purl.org/dc/elements/1.1/}title"

# Uploads are untrusted: no entity expansion, no network, no DTD loading, libxml2's size limits kept.
# Blank text between tags is dropped as python-docx's own parser drops it, so text nodes match.
PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False, remove_blank_text=True)


@dataclass(frozen=True)
class Part:
    name: str  # its ZIP member name, for messages
    data: bytes


@dataclass(frozen=True)
class WordPackage:
    document: etree._Element
    styles: Part | None  # left unparsed: `word_styles` parses a styles part once per distinct content
    title: str | None  # the core properties' dc:title, if there is one
    # Member names of the parts read after the body, one at a time (`read_parts`): several sections name
    # the same header, so each is named once.
    notes: tuple[str, ...]  # the footnotes part, then the endnotes part
    headers_and_footers: tuple[str, ...]  # the headers, then the footers


def _read(package: zipfile.ZipFile, name: str | None) -> Part | None:
    if name is None:
        return None
    try:
        return Part(name, package.read(name))
    except KeyError:
        return None
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        raise CorruptFile(f"not a readable DOCX file: its part {name} is damaged ({exc})") from exc


def parse(part: Part) -> etree._Element:
    try:
        return etree.fromstring(part.data, PARSER)
    except etree.XMLSyntaxError as exc:
        raise CorruptFile(f"not a readable DOCX file: {part.name} is not well-formed XML ({exc})") from exc


def _relationships(package: zipfile.ZipFile, source: str) -> list[tuple[str, str]]:
    """(kind, ZIP member name) of each part `source` ("" for the package) relates to, in order; the kind is
    the relationship type's last segment (`styles`, `header`…). External targets are left out."""
    folder, base = posixpath.split(source)
    rels = _read(package, posixpath.join(folder, "_rels", f"{base}.rels"))
    related = []
    for rel in parse(rels).iterchildren(RELATIONSHIP) if rels is not None else ():
        target = rel.get("Target")
        if rel.get("TargetMode") != "External" and target:
            # Relative to the source's folder, or absolute from the package root when it starts with /.
            name = posixpath.normpath(posixpath.join("/", folder, target)).lstrip("/")
            related.append((rel.get("Type", "").rsplit("/", 1)[-1], name))
    return related


def _named(related: list[tuple[str, str]], *kinds: str) -> tuple[str, ...]:
    """The member names of the parts of `kinds`, kind by kind, each name once."""
    return tuple(dict.fromkeys(name for wanted in kinds for kind, name in related if kind == wanted))


def _first(related: list[tuple[str, str]], kind: str) -> str | None:
    return next(iter(_named(related, kind)), None)


def open_package(data: bytes) -> WordPackage:
    """The parts of a DOCX that `check_package` accepted. Raises CorruptFile without a main part."""
    with zipfile.ZipFile(io.BytesIO(data)) as package:
        of_package = _relationships(package, "")
        main = _first(of_package, "officeDocument")
        if main is None:
            raise CorruptFile("not a readable DOCX file: its package names no main document part")
        document = _read(package, main)
        if document is None:
            raise CorruptFile(f"not a readable DOCX file: its main document part {main} is missing")
        of_main = _relationships(package, main)
        styles = _read(package, _first(of_main, "styles"))
        core = _read(package, _first(of_package, "core-properties"))
    title = None if core is None else parse(core).findtext(CORE_TITLE)
    notes = _named(of_main, "footnotes", "endnotes")
    return WordPackage(parse(document), styles, title, notes, _named(of_main, "header", "footer"))


def read_parts(data: bytes, names: tuple[str, ...]) -> Iterator[Part]:
    """The parts `names` names, read one at a time as they are asked for; those missing are left out."""
    if not names:
        return
    with zipfile.ZipFile(io.BytesIO(data)) as package:
        for name in names:
            if (part := _read(package, name)) is not None:
                yield part
