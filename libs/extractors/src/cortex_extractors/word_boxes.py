"""Text boxes: their paragraphs and tables are moved out of the drawing that holds them to stand right after
the paragraph that anchors it, where blocks and cells are read, so they read in document order.

A text box is a `w:txbxContent` in a DrawingML shape (`wps:txbx`) or a VML one (`v:textbox`), in a run.
Word writes each twice, as the two alternatives of an `mc:AlternateContent`: only the one taken is read.
"""

from lxml import etree

from cortex_extractors import wordml as w

DELETED = frozenset({w.DELETED, w.MOVED_FROM})


def _taken(alternatives: etree._Element) -> etree._Element | None:
    """The alternative a reader takes: the first mc:Choice (its shapes are what this reader looks into),
    else the mc:Fallback."""
    choice = alternatives.find(w.CHOICE)
    return choice if choice is not None else alternatives.find(w.FALLBACK)


def _anchor(box: etree._Element) -> etree._Element | None:
    """The paragraph whose run holds `box`; None when the box is no current text: deleted, or in the
    alternative not taken, or outside any paragraph."""
    anchor = None
    child, parent = box, box.getparent()
    while parent is not None:
        if parent.tag in DELETED or (parent.tag == w.ALTERNATE_CONTENT and child is not _taken(parent)):
            return None
        if anchor is None and parent.tag == w.PARAGRAPH:
            anchor = parent
        child, parent = parent, parent.getparent()
    return anchor


def lift_text_boxes(root: etree._Element) -> None:
    """Moves each text box's blocks after its anchoring paragraph. Boxes come in document order, so a box
    inside another is lifted after its own anchor, once that has been lifted. lxml finds none at no cost in
    a part that has none (it knows the part names no `w:txbxContent`)."""
    for box in list(root.iter(w.TEXT_BOX_CONTENT)):
        anchor = _anchor(box)
        if anchor is not None and anchor.getparent() is not None:  # a part's root has no place after it
            for block in reversed(box):  # each goes right after the anchor: last first keeps their order
                anchor.addnext(block)
