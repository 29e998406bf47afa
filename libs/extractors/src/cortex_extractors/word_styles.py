"""Paragraph style names as python-docx's `paragraph.style.name` gives them, from styles.xml; and which
paragraph and character styles hide the text of the runs they style (`w:vanish`)."""

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
OFF = ("0", "false", "off")


def style_id_of(paragraph: etree._Element) -> str | None:
    """The id in `w:pPr/w:pStyle/@w:val`; None when the paragraph names no style."""
    properties = paragraph.find(w.PARAGRAPH_PROPERTIES)
    style = properties.find(w.PARAGRAPH_STYLE) if properties is not None else None
    return style.get(w.VAL) if style is not None else None


def is_on(toggle: etree._Element) -> bool:
    """Whether a toggle property such as `w:vanish` is set: it is unless its val says off (no val means on)."""
    return toggle.get(w.VAL, "1") not in OFF


def _own_vanish(style: etree._Element) -> bool | None:
    """What the style's own run properties say of `w:vanish`; None when they say nothing."""
    properties = style.find(w.RUN_PROPERTIES)
    vanish = properties.find(w.VANISH) if properties is not None else None
    return is_on(vanish) if vanish is not None else None


def _hides(style: etree._Element, by_id: dict[str, etree._Element]) -> bool:
    """Whether `style` hides text: the nearest of it and the styles it is based on (of its type; a loop ends
    the chain) that says anything of `w:vanish` says it on."""
    kind = style.get(w.TYPE)
    chain: set[str] = set()
    current: etree._Element | None = style
    while current is not None and current.get(w.TYPE) == kind:
        current_id = current.get(w.STYLE_ID) or ""
        if current_id in chain:
            return False
        chain.add(current_id)
        if (vanish := _own_vanish(current)) is not None:
            return vanish
        based_on = current.find(w.BASED_ON)
        current = by_id.get(based_on.get(w.VAL) or "") if based_on is not None else None
    return False


def _hiding(by_id: dict[str, etree._Element], kind: str) -> frozenset[str]:
    """The ids of the styles of `kind` (paragraph, character) that hide text."""
    return frozenset(
        style_id for style_id, style in by_id.items() if style.get(w.TYPE) == kind and _hides(style, by_id)
    )


def _name(style: etree._Element | None) -> str:
    name = style.find(w.STYLE_NAME) if style is not None else None
    value = (name.get(w.VAL) if name is not None else None) or ""
    return UI_NAMES.get(value, value)


class ParagraphStyles:
    """Style id → name. An id that is unknown, or names a style of another type, gets the default
    paragraph style (the last one marked default), as does a paragraph that names none. Without
    styles.xml every paragraph is body text, as under the stand-in styles python-docx used (Normal only).
    Also which paragraph styles, and which character styles, hide the text of their runs."""

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
        self._hiding_paragraphs = _hiding(first_by_id, "paragraph")
        self._hiding_characters = _hiding(first_by_id, "character")
        self._default_hides = default is not None and default.get(w.STYLE_ID) in self._hiding_paragraphs
        self.hides_any = bool(self._hiding_paragraphs or self._hiding_characters)

    def name(self, style_id: str | None) -> str:
        return self._names.get(style_id, self._default) if style_id else self._default

    def hides_paragraph(self, style_id: str | None) -> bool:
        """Whether the paragraph style `style_id` (the default one, as for `name`) hides its runs' text."""
        if style_id and style_id in self._names:
            return style_id in self._hiding_paragraphs
        return self._default_hides

    def hides_characters(self, style_id: str | None) -> bool:
        """Whether the character style `style_id` hides its runs' text (an unknown one does not)."""
        return style_id in self._hiding_characters


# Parsing styles.xml is most of the time a DOCX takes (python-docx's template's is 350 KB, 9,000
# elements), and documents made from one template share it byte for byte: each distinct one is parsed
# once. What is kept is a name per paragraph style and the ids of the styles that hide text, from at most
# 64 parts (emptied when full) of at most 1 MiB each, so it stays small whatever is uploaded.
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
