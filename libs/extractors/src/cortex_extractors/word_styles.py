"""Paragraph style names as python-docx's `paragraph.style.name` gives them, from styles.xml."""

import hashlib

from lxml import etree

from cortex_extractors import word_package
from cortex_extractors import wordml as w
from cortex_extractors.word_package import Part

# styles.xml names some built-in styles in lower case; python-docx (BabelFish) shows them capitalized.
UI_NAMES = {"caption": "Caption", "footer": "Footer", "header": "Header"} | {
    f"heading {level}": f"Heading {level}" for level in range(1, 10)
}
ON = ("1", "true", "on")


def style_id_of(paragraph: etree._Element) -> str | None:
    """The id in `w:pPr/w:pStyle/@w:val`; None when the paragraph names no style."""
    properties = paragraph.find(w.PARAGRAPH_PROPERTIES)
    style = properties.find(w.PARAGRAPH_STYLE) if properties is not None else None
    return style.get(w.VAL) if style is not None else None


def _name(style: etree._Element | None) -> str:
    name = style.find(w.STYLE_NAME) if style is not None else None
    value = (name.get(w.VAL) if name is not None else None) or ""
    return UI_NAMES.get(value, value)


class ParagraphStyles:
    """Style id → name. An id that is unknown, or names a style of another type, gets the default
    paragraph style (the last one marked default), as does a paragraph that names none. Without
    styles.xml every paragraph is body text, as under the stand-in styles python-docx used (Normal only)."""

    def __init__(self, styles: etree._Element | None) -> None:
        first_by_id: dict[str, etree._Element] = {}
        default = None
        for style in styles.iterchildren(w.STYLE) if styles is not None else ():
            first_by_id.setdefault(style.get(w.STYLE_ID) or "", style)
            if style.get(w.TYPE) == "paragraph" and style.get(w.DEFAULT) in ON:
                default = style
        self._default = _name(default)
        self._names = {
            style_id: _name(style) for style_id, style in first_by_id.items() if style.get(w.TYPE) == "paragraph"
        }

    def name(self, style_id: str | None) -> str:
        return self._names.get(style_id, self._default) if style_id else self._default


# Parsing styles.xml is most of the time a DOCX takes (python-docx's template's is 350 KB, 9,000
# elements), and documents made from one template share it byte for byte: each distinct one is parsed
# once. What is kept is a name per paragraph style, from at most 64 parts (emptied when full) of at most
# 1 MiB each, so it stays small whatever is uploaded.
REMEMBERED_STYLES = 64
REMEMBERED_STYLES_MAX_BYTES = 1024 * 1024
_remembered: dict[bytes, ParagraphStyles] = {}


def paragraph_styles(part: Part | None) -> ParagraphStyles:
    """The styles of `part`, from memory when a part with the same bytes was parsed before."""
    if part is None:
        return ParagraphStyles(None)
    if len(part.data) > REMEMBERED_STYLES_MAX_BYTES:
        return ParagraphStyles(word_package.parse(part))
    digest = hashlib.sha256(part.data).digest()
    styles = _remembered.get(digest)
    if styles is None:
        styles = ParagraphStyles(word_package.parse(part))
        if len(_remembered) >= REMEMBERED_STYLES:
            _remembered.clear()
        _remembered[digest] = styles
    return styles
