"""PPTX: one `#` section per slide (its title, else `Slide N`), then its text boxes, tables and notes.

A hidden slide (`<p:sld show="0">`) is left out, notes and all: the presenter took it out of the deck as it
is shown, so its words are not what the deck says. Its number is still counted for the `Slide N` of the others,
as PowerPoint numbers them.
"""

import io
from collections.abc import Iterable, Iterator

from pptx import Presentation
from pptx.shapes.base import BaseShape
from pptx.shapes.graphfrm import GraphicFrame
from pptx.shapes.group import GroupShape
from pptx.shapes.shapetree import SlideShapes
from pptx.slide import Slide

from cortex_extractors.extracted import Extracted
from cortex_extractors.limits import MAX_PARSED_PART_BYTES, MAX_SLIDES, BoundedText, check_count, short_title
from cortex_extractors.media_types import PPTX
from cortex_extractors.office_package import check_package

# Core-properties titles that name no deck: PowerPoint's for a new presentation, in English (python-pptx's
# too, for a package without core properties) and in the commonest other languages. In lower case, as
# `short_title` compares them.
PLACEHOLDER_TITLES = frozenset(
    {
        "powerpoint presentation",
        "powerpoint-präsentation",
        "présentation powerpoint",
        "presentación de powerpoint",
        "presentazione standard di powerpoint",
        "apresentação do powerpoint",
    }
)


def flattened(shapes: Iterable[BaseShape]) -> Iterator[BaseShape]:
    """Shapes in reading order, with the members of groups in place of the groups; hidden ones (and the
    members of a hidden group) left out."""
    for shape in shapes:
        if _shape_hidden(shape):
            continue
        if isinstance(shape, GroupShape):
            yield from flattened(shape.shapes)
        else:
            yield shape


def _shape_hidden(shape: BaseShape) -> bool:
    """Whether the Selection Pane hid the shape: `hidden` on its non-visual properties (`p:cNvPr`)."""
    properties = shape._element.xpath("./*[1]/p:cNvPr")  # every shape's first child holds them
    return bool(properties) and properties[0].get("hidden", "0") in ("1", "true")


def is_hidden(slide: Slide) -> bool:
    """Whether the slide is hidden: `show` is an XML boolean, true when absent."""
    return slide.element.get("show", "1") in ("0", "false")


def _slide_title(shapes: SlideShapes) -> str:
    title = shapes.title
    shown = title is not None and title.has_text_frame and not _shape_hidden(title)
    return " ".join(title.text_frame.text.split()) if shown else ""  # type: ignore[union-attr]


def _add_shape(out: BoundedText, shape: BaseShape) -> None:
    if shape.has_text_frame:
        out.add(shape.text_frame.text)  # type: ignore[attr-defined]
    elif isinstance(shape, GraphicFrame) and shape.has_table:
        out.add_lines(" | ".join(" ".join(cell.text.split()) for cell in row.cells) for row in shape.table.rows)


class PresentationExtractor:
    media_types = frozenset({PPTX})

    def extract(self, data: bytes, filename: str | None) -> Extracted:
        check_package(data, "PPTX", max_part_bytes=MAX_PARSED_PART_BYTES)
        presentation = Presentation(io.BytesIO(data))
        check_count("slides", len(presentation.slides), MAX_SLIDES)
        out = BoundedText()
        first_title = None
        for number, slide in enumerate(presentation.slides, 1):
            if is_hidden(slide):
                continue
            slide_title = _slide_title(slide.shapes)
            first_title = first_title or short_title(slide_title)
            out.heading(1, slide_title or f"Slide {number}")
            title_id = slide.shapes.title.shape_id if slide.shapes.title is not None else None
            for shape in flattened(slide.shapes):
                if shape.shape_id != title_id:
                    _add_shape(out, shape)
            if slide.has_notes_slide and (notes := slide.notes_slide.notes_text_frame) is not None:
                out.add(notes.text)
        title = short_title(presentation.core_properties.title, placeholders=PLACEHOLDER_TITLES) or first_title
        return Extracted(title=title, text=out.text())


extractor = PresentationExtractor()
