"""WordprocessingML names the DOCX reader looks for, as lxml spells them (`{namespace}tag`).

Imported as `w`, so `w.PARAGRAPH` reads like the `w:p` it stands for.
"""

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"

DOCUMENT = f"{W}document"
BODY = f"{W}body"
FOOTNOTE = f"{W}footnote"  # in the footnotes part (w:footnotes), as w:endnote in the endnotes part
ENDNOTE = f"{W}endnote"

PARAGRAPH = f"{W}p"
PARAGRAPH_PROPERTIES = f"{W}pPr"
PARAGRAPH_STYLE = f"{W}pStyle"
HYPERLINK = f"{W}hyperlink"
RUN = f"{W}r"
RUN_PROPERTIES = f"{W}rPr"  # of a run; in w:pPr, of the paragraph mark; in a style, of the runs it styles
RUN_STYLE = f"{W}rStyle"
VANISH = f"{W}vanish"  # hidden text: shown only with formatting marks on, never printed (w:webHidden is not)
TEXT = f"{W}t"
BREAK = f"{W}br"
TAB = f"{W}tab"
POSITIONAL_TAB = f"{W}ptab"
CARRIAGE_RETURN = f"{W}cr"
NO_BREAK_HYPHEN = f"{W}noBreakHyphen"

# Markup around runs, paragraphs, rows or cells whose content reads as if it stood in its place.
CONTENT_CONTROL = f"{W}sdt"
CONTENT_CONTROL_CONTENT = f"{W}sdtContent"  # its sibling w:sdtPr holds settings, no text
CUSTOM_XML = f"{W}customXml"
SMART_TAG = f"{W}smartTag"
INSERTED = f"{W}ins"  # a tracked insertion is part of the current text; w:del and w:moveFrom are not
MOVED_TO = f"{W}moveTo"
SIMPLE_FIELD = f"{W}fldSimple"  # its runs are the field's last result, as Word shows it
DIRECTION = f"{W}dir"
BIDI_OVERRIDE = f"{W}bdo"

DELETED = f"{W}del"
MOVED_FROM = f"{W}moveFrom"

# A text box's content, in a DrawingML shape (wps:txbx) or a VML one (v:textbox), anchored by a run.
TEXT_BOX_CONTENT = f"{W}txbxContent"
# Markup compatibility: Word writes a shape twice, as mc:Choice (DrawingML) and mc:Fallback (VML).
MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
ALTERNATE_CONTENT = f"{MC}AlternateContent"
CHOICE = f"{MC}Choice"
FALLBACK = f"{MC}Fallback"

TABLE = f"{W}tbl"
ROW = f"{W}tr"
ROW_PROPERTIES = f"{W}trPr"
GRID_BEFORE = f"{W}gridBefore"
CELL = f"{W}tc"
CELL_PROPERTIES = f"{W}tcPr"
GRID_SPAN = f"{W}gridSpan"
VERTICAL_MERGE = f"{W}vMerge"

STYLE = f"{W}style"
STYLE_NAME = f"{W}name"
BASED_ON = f"{W}basedOn"

# Attributes
VAL = f"{W}val"
TYPE = f"{W}type"
STYLE_ID = f"{W}styleId"
DEFAULT = f"{W}default"
