"""The three parts of a DOCX package the text comes from: main document, its styles, core properties.

They are found as python-docx finds them, through relationships (`_rels/.rels`, then the main part's
own rels), and only they are read: python-docx parsed every XML part of the package.
"""

import io
import posixpath
import zipfile
import zlib
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


def _related(package: zipfile.ZipFile, source: str, kind: str) -> str | None:
    """The ZIP member name of the part `source` ("" for the package) relates to by type `…/kind`."""
    folder, base = posixpath.split(source)
    rels = _read(package, posixpath.join(folder, "_rels", f"{base}.rels"))
    if rels is None:
        return None
    for rel in parse(rels).iterchildren(RELATIONSHIP):
        target = rel.get("Target")
        if rel.get("Type", "").endswith(f"/{kind}") and rel.get("TargetMode") != "External" and target:
            # Relative to the source's folder, or absolute from the package root when it starts with /.
            return posixpath.normpath(posixpath.join("/", folder, target)).lstrip("/")
    return None


def open_package(data: bytes) -> WordPackage:
    """The parts of a DOCX that `check_package` accepted. Raises CorruptFile without a main part."""
    with zipfile.ZipFile(io.BytesIO(data)) as package:
        main = _related(package, "", "officeDocument")
        if main is None:
            raise CorruptFile("not a readable DOCX file: its package names no main document part")
        document = _read(package, main)
        if document is None:
            raise CorruptFile(f"not a readable DOCX file: its main document part {main} is missing")
        styles = _read(package, _related(package, main, "styles"))
        core = _read(package, _related(package, "", "core-properties"))
    title = None if core is None else parse(core).findtext(CORE_TITLE)
    return WordPackage(parse(document), styles, title)
