"""Hidden text in a DOCX: runs whose properties set `w:vanish`, which Word shows only with formatting marks on
and never prints, are taken out of a part before it is read, as no reader of the document sees them.

A run is hidden by its own properties (`w:vanish`; with `w:val` "0", "false" or "off" it is not, whatever its
styles say), else by its paragraph's style and its character style (`w:rStyle`), each hiding through the styles
it is based on; as `w:vanish` is a toggle, a hidden character style in a hidden paragraph style shows its text.
`w:vanish` in a paragraph's own run properties (`w:pPr/w:rPr`) hides its mark only: the paragraph runs on into
the next, its text shown (Word's style separator, which runs a heading into the paragraph after it, is such a
mark). `w:webHidden` hides nothing on paper or in Word's print and normal views: it is read. Document defaults
and table styles are not looked at.
"""

from collections.abc import Iterator

from lxml import etree

from cortex_extractors import wordml as w
from cortex_extractors.word_styles import ParagraphStyles, is_on, style_id_of


def _paragraph_of(run: etree._Element) -> etree._Element | None:
    parent = run.getparent()
    while parent is not None and parent.tag != w.PARAGRAPH:
        parent = parent.getparent()
    return parent


class _Hiding:
    def __init__(self, styles: ParagraphStyles) -> None:
        self._styles = styles
        self._paragraphs: dict[etree._Element, bool] = {}  # paragraph → whether its style hides its runs

    def _by_paragraph(self, run: etree._Element) -> bool:
        if not self._styles.hides_any:
            return False
        paragraph = _paragraph_of(run)
        if paragraph is None:
            return False
        if paragraph not in self._paragraphs:
            self._paragraphs[paragraph] = self._styles.hides_paragraph(style_id_of(paragraph))
        return self._paragraphs[paragraph]

    def hides(self, run: etree._Element) -> bool:
        properties = run.find(w.RUN_PROPERTIES)
        vanish = properties.find(w.VANISH) if properties is not None else None
        if vanish is not None:  # direct formatting sets it, whatever the styles say
            return is_on(vanish)
        style = properties.find(w.RUN_STYLE) if properties is not None else None
        by_character = style is not None and self._styles.hides_characters(style.get(w.VAL))
        return self._by_paragraph(run) != by_character


def _run_of(vanish: etree._Element) -> etree._Element | None:
    """The run whose own properties hold `vanish`; None for a paragraph mark's, a style's, a revision's."""
    properties = vanish.getparent()
    run = properties.getparent() if properties is not None and properties.tag == w.RUN_PROPERTIES else None
    return run if run is not None and run.tag == w.RUN else None


def _candidates(root: etree._Element, styles: ParagraphStyles) -> Iterator[etree._Element]:
    """The runs that may be hidden: all of them when a style hides text, else those whose own properties
    name `w:vanish` (lxml finds none at no cost in a part that names none, the usual case)."""
    if styles.hides_any:
        yield from root.iter(w.RUN)
    else:
        yield from (run for vanish in root.iter(w.VANISH) if (run := _run_of(vanish)) is not None)


def drop_hidden_runs(root: etree._Element, styles: ParagraphStyles) -> None:
    """Removes the hidden runs from the tree of a body, note, header or footer part. Run before
    `lift_text_boxes`: a text box anchored in a hidden run goes with it, and the runs inside a box are judged
    by the box's own paragraphs, their nearest, all the same."""
    hiding = _Hiding(styles)
    for run in [run for run in _candidates(root, styles) if hiding.hides(run)]:
        parent = run.getparent()
        if parent is not None:
            parent.remove(run)
