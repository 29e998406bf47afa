"""DOCX hidden text (`w:vanish`, set on a run or through its paragraph or character style) is not read: no
reader of the document sees it. Before, it was indexed as if it were visible."""

from docx.oxml.ns import nsdecls

from cortex_extractors import extract, media_types, samples

HIDDEN = "<w:rPr><w:vanish/></w:rPr>"
STYLES = (
    '<w:style w:type="paragraph" w:styleId="Secret"><w:name w:val="Secret"/><w:rPr><w:vanish/></w:rPr></w:style>'
    '<w:style w:type="paragraph" w:styleId="SecretChild"><w:name w:val="Secret child"/>'
    '<w:basedOn w:val="Secret"/></w:style>'
    '<w:style w:type="paragraph" w:styleId="ShownChild"><w:name w:val="Shown child"/><w:basedOn w:val="Secret"/>'
    '<w:rPr><w:vanish w:val="0"/></w:rPr></w:style>'
    '<w:style w:type="character" w:styleId="SecretChars"><w:name w:val="Secret chars"/><w:rPr><w:vanish/></w:rPr>'
    "</w:style>"
    '<w:style w:type="character" w:styleId="LoopA"><w:name w:val="Loop A"/><w:basedOn w:val="LoopB"/></w:style>'
    '<w:style w:type="character" w:styleId="LoopB"><w:name w:val="Loop B"/><w:basedOn w:val="LoopA"/></w:style>'
)


def _docx(body: str, *, styles: str = "", parts: dict[str, str] | None = None) -> bytes:
    return samples.docx_with_body(body, namespaces=nsdecls("w"), styles=styles, parts=parts)


def _text(body: str, *, styles: str = "", parts: dict[str, str] | None = None) -> str:
    return extract(media_types.DOCX, _docx(body, styles=styles, parts=parts)).text


def _r(text: str, properties: str = "") -> str:
    return f'<w:r>{properties}<w:t xml:space="preserve">{text}</w:t></w:r>'


def _p(*runs: str, properties: str = "") -> str:
    return f"<w:p>{properties}{''.join(runs)}</w:p>"


def _styled(style_id: str) -> str:
    return f'<w:pPr><w:pStyle w:val="{style_id}"/></w:pPr>'


def test_a_run_hidden_by_its_own_properties_is_not_read_and_one_that_says_not_hidden_is() -> None:
    hidden = ["<w:vanish/>", '<w:vanish w:val="true"/>', '<w:vanish w:val="1"/>', '<w:vanish w:val="on"/>']
    shown = [
        '<w:vanish w:val="0"/>',
        '<w:vanish w:val="false"/>',
        '<w:vanish w:val="off"/>',
        "<w:webHidden/>",  # hidden in a web layout only: printed, and shown in print and normal views
        # Tracked formatting: the run was hidden before the change, and is not now.
        "<w:rPrChange w:id='1' w:author='a'><w:rPr><w:vanish/></w:rPr></w:rPrChange>",
    ]
    runs = [_r(f"hidden{n} ", f"<w:rPr><w:b/>{vanish}</w:rPr>") for n, vanish in enumerate(hidden)]
    runs += [_r(f"shown{n} ", f"<w:rPr><w:b/>{vanish}</w:rPr>") for n, vanish in enumerate(shown)]
    assert _text(_p(_r("Start "), *runs, _r("end"))) == "Start shown0 shown1 shown2 shown3 shown4 end"


def test_hidden_runs_inside_markup_and_cells_and_a_hidden_heading_are_not_read() -> None:
    body = (
        _p(_r("Secret heading", HIDDEN), properties=_styled("Heading1"))
        + _p(_r("Before "), f"<w:hyperlink><w:ins>{_r('hiddenlink', HIDDEN)}</w:ins></w:hyperlink>", _r("after"))
        + "<w:tbl><w:tblGrid><w:gridCol/><w:gridCol/></w:tblGrid><w:tr>"
        + f"<w:tc>{_p(_r('cell'))}</w:tc><w:tc>{_p(_r('hiddencell', HIDDEN))}</w:tc></w:tr></w:tbl>"
        + _p(_r("Visible heading"), properties=_styled("Heading1"))
    )
    extracted = extract(media_types.DOCX, _docx(body))
    assert extracted.text.split("\n\n") == ["Before after", "cell |", "# Visible heading"]
    assert extracted.title == "Visible heading"  # the hidden heading does not title the document


def test_a_hidden_paragraph_mark_hides_only_the_mark() -> None:
    """A paragraph hidden whole (its runs and its mark) is gone; one whose mark alone is hidden runs on into the
    next in Word, its text shown: Word's style separator after a run-in heading is such a paragraph."""
    hidden_mark = f"<w:pPr>{HIDDEN}</w:pPr>"
    body = (
        _p(_r("gone whole", HIDDEN), properties=hidden_mark)
        + _p(_r("Run-in heading."), properties=hidden_mark)
        + _p(_r("Its text."))
    )
    assert _text(body).split("\n\n") == ["Run-in heading.", "Its text."]


def test_text_hidden_by_a_paragraph_or_character_style_is_not_read() -> None:
    body = (
        _p(_r("paragraphstylehidden"), properties=_styled("Secret"))
        + _p(_r("basedonhidden"), properties=_styled("SecretChild"))
        + _p(_r("Shown by a style that turns vanish off"), properties=_styled("ShownChild"))
        + _p(_r("Shown by direct formatting", '<w:rPr><w:vanish w:val="0"/></w:rPr>'), properties=_styled("Secret"))
        + _p(_r("Words "), _r("characterstylehidden", '<w:rPr><w:rStyle w:val="SecretChars"/></w:rPr>'), _r("stay"))
        + _p(_r("Toggled back on: a hidden character style in a hidden paragraph style shows", ""))
        + _p(_r("shown twice hidden", '<w:rPr><w:rStyle w:val="SecretChars"/></w:rPr>'), properties=_styled("Secret"))
        + _p(_r("Styles based on each other in a loop hide nothing", '<w:rPr><w:rStyle w:val="LoopA"/></w:rPr>'))
    )
    assert _text(body, styles=STYLES).split("\n\n") == [
        "Shown by a style that turns vanish off",
        "Shown by direct formatting",
        "Words stay",
        "Toggled back on: a hidden character style in a hidden paragraph style shows",
        "shown twice hidden",
        "Styles based on each other in a loop hide nothing",
    ]


def test_a_hidden_default_paragraph_style_hides_unstyled_paragraphs() -> None:
    styles = (
        '<w:style w:type="paragraph" w:default="1" w:styleId="HiddenDefault"><w:name w:val="Hidden default"/>'
        "<w:rPr><w:vanish/></w:rPr></w:style>"
    )
    body = _p(_r("unstyledhidden")) + _p(_r("Normal text"), properties=_styled("Normal"))
    assert _text(body, styles=styles) == "Normal text"


def test_hidden_text_in_notes_headers_and_text_boxes_is_not_read() -> None:
    footnotes = (
        f"<w:footnotes {nsdecls('w')}><w:footnote w:id='1'>"
        + _p(_r("A note "), _r("hiddennote", HIDDEN))
        + "</w:footnote></w:footnotes>"
    )
    header = f"<w:hdr {nsdecls('w')}>{_p(_r('Header '), _r('hiddenheader', HIDDEN))}</w:hdr>"
    footer = f"<w:ftr {nsdecls('w')}>{_p(_r('hiddenfooter'), properties=_styled('Secret'))}</w:ftr>"
    box = (
        '<w:r><w:pict><v:shape xmlns:v="urn:schemas-microsoft-com:vml"><v:textbox><w:txbxContent>'
        + _p(_r("Boxed "), _r("hiddenboxed", HIDDEN))
        + "</w:txbxContent></v:textbox></v:shape></w:pict></w:r>"
    )
    text = _text(_p(_r("Body"), box), styles=STYLES, parts={"footnotes": footnotes, "header": header, "footer": footer})
    assert text.split("\n\n") == ["Body", "Boxed", "A note", "Header"]


def test_a_text_box_anchored_in_a_hidden_run_is_hidden_with_it() -> None:
    """Before (QA 45): the box was lifted out of its run before hidden runs were dropped, and read."""
    box = (
        f"<w:r>{HIDDEN}"
        '<w:pict><v:shape xmlns:v="urn:schemas-microsoft-com:vml"><v:textbox><w:txbxContent>'
        + _p(_r("hiddenanchoredbox"))
        + "</w:txbxContent></v:textbox></v:shape></w:pict></w:r>"
    )
    assert _text(_p(_r("Visible"), box)).split("\n\n") == ["Visible"]
