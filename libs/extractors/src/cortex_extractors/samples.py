"""Small files of each supported type, made in code — for tests and benchmarks, which ship no binary fixtures."""

import io
import zipfile
from collections.abc import Collection, Mapping, Sequence

from docx import Document
from openpyxl import Workbook
from pptx import Presentation
from pptx.util import Inches
from pypdf import PdfReader, PdfWriter

TITLE_AND_CONTENT = 1  # slide layout of python-pptx's default template


def _pdf_string(text: str) -> bytes:
    escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return b"(" + escaped.encode("latin-1", "replace") + b")"


def pdf_file(pages: Sequence[str], *, title: str | None = None, password: str | None = None) -> bytes:
    """A PDF with one page per string (lines in Helvetica); encrypted with AES-256 when `password` is given."""
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"",  # the page tree, once the pages' numbers are known
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    kids = []
    for text in pages:
        lines = b" T* ".join(_pdf_string(line) + b" Tj" for line in text.splitlines() or [""])
        content = b"BT /F1 12 Tf 14 TL 72 720 Td " + lines + b" ET"
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content))
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
            b"/Contents %d 0 R >>" % len(objects)
        )
        kids.append(b"%d 0 R" % len(objects))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(kids), len(kids))
    info = b""
    if title is not None:
        objects.append(b"<< /Title " + _pdf_string(title) + b" >>")
        info = b" /Info %d 0 R" % len(objects)
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n%s\nendobj\n" % (number, body))
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    out.writelines(b"%010d 00000 n \n" % offset for offset in offsets)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R%s >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, info, xref))
    if password is None:
        return out.getvalue()
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(out.getvalue())))
    writer.encrypt(user_password=password, algorithm="AES-256")
    encrypted = io.BytesIO()
    writer.write(encrypted)
    return encrypted.getvalue()


def docx_file(
    title: str, sections: Sequence[tuple[str, str]], *, table: Sequence[Sequence[str]] = (), core_title: str = ""
) -> bytes:
    """A DOCX: `title` in the Title style, then per section a Heading 1 and a paragraph, then a table."""
    document = Document()
    document.core_properties.title = core_title
    document.add_heading(title, level=0)
    for heading, paragraph in sections:
        document.add_heading(heading, level=1)
        document.add_paragraph(paragraph)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for row, values in zip(grid.rows, table, strict=True):
            for cell, value in zip(row.cells, values, strict=True):
                cell.text = value
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def xlsx_file(
    sheets: Mapping[str, Sequence[Sequence[object]]],
    *,
    title: str | None = None,
    states: Mapping[str, str] | None = None,
) -> bytes:
    """An XLSX with one worksheet per entry, rows as given; `states` maps a sheet's name to its state, `hidden` or
    `veryHidden` (else it is visible)."""
    workbook = Workbook()
    workbook.remove(workbook.active)  # type: ignore[arg-type]
    for name, rows in sheets.items():
        sheet = workbook.create_sheet(name)
        for row in rows:
            sheet.append(list(row))
        if states and name in states:
            sheet.sheet_state = states[name]
    workbook.properties.title = title
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


DOCX_RELATIONSHIPS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


def docx_with_body(body: str, *, namespaces: str, styles: str = "", parts: Mapping[str, str] | None = None) -> bytes:
    """A DOCX (styles naming Heading1) whose main part's body is the XML `body`, declaring `namespaces`;
    `styles` added to its styles part, and `parts` (relationship kind → the part's XML, `kind.xml` in word/,
    related to the main part as `kind`; `kind-2` for a second one of a kind): for what python-docx cannot write."""
    parts = parts or {}
    document = f"<w:document {namespaces}><w:body>{body}<w:sectPr/></w:body></w:document>"
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(docx_file("t", [("h", "p")]))) as source, zipfile.ZipFile(out, "w") as target:
        for name in source.namelist():
            content = source.read(name)
            if name == "word/document.xml":
                content = document.encode()
            elif name == "word/styles.xml":
                content = content.replace(b"</w:styles>", f"{styles}</w:styles>".encode())
            elif name == "word/_rels/document.xml.rels":
                relationships = "".join(
                    f'<Relationship Id="rIdX{n}" Type="{DOCX_RELATIONSHIPS}/{kind.split("-")[0]}" Target="{kind}.xml"/>'
                    for n, kind in enumerate(parts)
                )
                content = content.replace(b"</Relationships>", f"{relationships}</Relationships>".encode())
            target.writestr(name, content)
        for kind, xml in parts.items():
            target.writestr(f"word/{kind}.xml", xml)
    return out.getvalue()


def xlsx_with_parts(parts: Mapping[str, bytes], content_types: str = "") -> bytes:
    """A one-sheet XLSX (sheet `S`, cell A1 `a`) with `parts` added or replaced, `content_types` added to its
    manifest: for sheets written as raw XML, which openpyxl would not write."""
    with zipfile.ZipFile(io.BytesIO(xlsx_file({"S": [["a"]]}))) as package:
        merged = {name: package.read(name) for name in package.namelist()}
    merged.update(parts)
    merged["[Content_Types].xml"] = merged["[Content_Types].xml"].replace(
        b"</Types>", f"{content_types}</Types>".encode()
    )
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package:
        for name, data in merged.items():
            package.writestr(name, data)
    return out.getvalue()


def pptx_file(
    slides: Sequence[tuple[str, str]],
    *,
    notes: Mapping[int, str] | None = None,
    table: Sequence[Sequence[str]] = (),
    core_title: str = "",
    hidden: Collection[int] = (),
) -> bytes:
    """A PPTX with a Title-and-Content slide per (title, body); `notes` maps slide index → speaker notes, a
    `table` goes on the last slide, below its body; the slides whose indexes are in `hidden` are hidden."""
    presentation = Presentation()
    presentation.core_properties.title = core_title
    for index, (title, body) in enumerate(slides):
        slide = presentation.slides.add_slide(presentation.slide_layouts[TITLE_AND_CONTENT])
        assert slide.shapes.title is not None
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
        if notes and index in notes:
            slide.notes_slide.notes_text_frame.text = notes[index]
        if index in hidden:
            slide.element.set("show", "0")
    if table:
        shapes = presentation.slides[-1].shapes
        grid = shapes.add_table(len(table), len(table[0]), Inches(1), Inches(5), Inches(8), Inches(2)).table
        for row, values in zip(grid.rows, table, strict=True):
            for cell, value in zip(row.cells, values, strict=True):
                cell.text = value
    out = io.BytesIO()
    presentation.save(out)
    return out.getvalue()
