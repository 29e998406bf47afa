"""Each built-in format, from files made in code: the text, its headings, and the title guess."""

import pytest

from cortex_extractors import extract, media_types, samples


def test_markdown_passes_through_with_its_first_heading_as_title() -> None:
    text = "intro line\n\n# Release plan\n\n## Risks\n\nNothing yet.\n"
    extracted = extract("text/markdown; charset=utf-8", text.encode())
    assert extracted.text == text
    assert extracted.title == "Release plan"


@pytest.mark.parametrize(
    ("data", "text"),
    [
        ("plain words ünïcode".encode(), "plain words ünïcode"),
        ("\ufeffwith a UTF-8 BOM".encode(), "with a UTF-8 BOM"),
        ("UTF-16 with its BOM".encode("utf-16"), "UTF-16 with its BOM"),
    ],
)
def test_plain_text_is_decoded(data: bytes, text: str) -> None:
    extracted = extract(media_types.PLAIN_TEXT, data)
    assert extracted.text == text
    assert extracted.title is None


def test_pdf_pages_in_order_and_the_metadata_title() -> None:
    data = samples.pdf_file(["First page: zebrafinch (in brackets)\nsecond line", "Page two: quokka"], title="Survey")
    extracted = extract(media_types.PDF, data)
    assert extracted.title == "Survey"
    assert extracted.text.index("zebrafinch (in brackets)") < extracted.text.index("second line")
    assert extracted.text.index("second line") < extracted.text.index("quokka")


def test_docx_headings_become_markdown_headings_and_tables_rows() -> None:
    data = samples.docx_file(
        "Quarterly review",
        [("Revenue", "Grew by wombat percent."), ("Hiring", "Two engineers.")],
        table=[["Region", "Lead"], ["North", "Ada"]],
    )
    extracted = extract(media_types.DOCX, data)
    assert extracted.title == "Quarterly review"
    assert extracted.text.split("\n\n") == [
        "# Quarterly review",
        "# Revenue",
        "Grew by wombat percent.",
        "# Hiring",
        "Two engineers.",
        "Region | Lead\nNorth | Ada",
    ]


def test_docx_core_properties_title_wins_over_the_first_heading() -> None:
    data = samples.docx_file("Heading title", [("Section", "text")], core_title="Properties title")
    assert extract(media_types.DOCX, data).title == "Properties title"


def test_xlsx_has_a_section_per_sheet_and_a_line_per_row() -> None:
    data = samples.xlsx_file(
        {
            "Budget": [["Item", "Cost"], ["Tea", 3.0], [None, None], ["Coffee", 4.5, None]],
            "People": [["Name"], ["Numbat"]],
        },
        title="Office costs",
    )
    extracted = extract(media_types.XLSX, data)
    assert extracted.title == "Office costs"
    assert extracted.text == "# Budget\n\nItem | Cost\nTea | 3\nCoffee | 4.5\n\n# People\n\nName\nNumbat"


def test_pptx_slide_titles_become_headings_with_body_and_notes_below() -> None:
    data = samples.pptx_file(
        [("Kickoff", "Goals\nTimeline"), ("Risks", "Platypus migration")], notes={1: "Say it slowly."}
    )
    extracted = extract(media_types.PPTX, data)
    assert extracted.title == "Kickoff"
    assert extracted.text.split("\n\n") == [
        "# Kickoff",
        "Goals\nTimeline",
        "# Risks",
        "Platypus migration",
        "Say it slowly.",
    ]


HTML_PAGE = b"""<!DOCTYPE html>
<html><head>
  <title>Field &amp; notes</title>
  <style>.secret { content: "styleword"; }</style>
  <script>var token = "scriptword";</script>
</head>
<body>
  <noscript>noscriptword</noscript>
  <template><p>templateword</p></template>
  <h1>Observations</h1>
  <p>We saw an <b>echidna</b> &lt;twice&gt;.<br>Then left.</p>
  <div hidden>hiddenword</div>
  <div style="display: none">displaynoneword</div>
  <ul><li>first</li><li>second</li></ul>
  <table><tr><th>Animal</th><th>Count</th></tr><tr><td>Echidna</td><td>2</td></tr></table>
  <script type="application/ld+json">{"jsonword": true}</script>
</body></html>"""


def test_html_keeps_only_visible_text() -> None:
    extracted = extract(media_types.HTML, HTML_PAGE)
    assert extracted.title == "Field & notes"
    assert extracted.text.split("\n\n") == [
        "# Observations",
        "We saw an echidna <twice>.\nThen left.",
        "- first",
        "- second",
        "Animal | Count",
        "Echidna | 2",
    ]
    for invisible in ("styleword", "scriptword", "noscriptword", "templateword", "hiddenword", "displaynone", "json"):
        assert invisible not in extracted.text


def test_html_in_a_declared_legacy_charset() -> None:
    page = '<html><head><meta charset="iso-8859-1"></head><body><p>Café</p></body></html>'.encode("latin-1")
    assert extract(media_types.HTML, page).text == "Café"


@pytest.mark.parametrize(
    "label",
    ["utf-16", "UTF-16LE", "utf-32", "rot13", "base64", "hex", "zlib", "utf-7", "cp037", "punycode", "unicode_escape"],
)
def test_html_declaring_a_charset_browsers_would_not_use_is_read_as_utf8(label: str) -> None:
    """As browsers do (WHATWG): a page declaring UTF-16 in ASCII bytes is UTF-8, and a codec that is no
    character set is ignored. Before: `utf-16` gave CJK-looking garbage, `rot13` failed the file."""
    page = f'<html><head><meta charset="{label}"></head><body><p>Café</p></body></html>'.encode()
    assert extract(media_types.HTML, page).text == "Café"


@pytest.mark.parametrize(
    ("label", "encoding"), [("windows-1251", "cp1251"), ("shift_jis", "shift_jis"), ("koi8-r", "koi8-r")]
)
def test_html_in_a_charset_browsers_know_is_read_in_it(label: str, encoding: str) -> None:
    word = "Привет" if encoding != "shift_jis" else "こんにちは"
    page = f'<html><head><meta charset="{label}"></head><body><p>{word}</p></body></html>'.encode(encoding)
    assert extract(media_types.HTML, page).text == word


def test_html_options_and_svg_text_stay_words_of_their_own() -> None:
    """Before: `<svg><text>svgtext</text></svg><select><option>…` gave one word, `svgtextoptionleak`."""
    page = b"<p>Pick<select><option>alpha</option><option>beta</option></select><svg><text>gamma</text></svg>delta</p>"
    assert extract(media_types.HTML, page).text.split() == ["Pick", "alpha", "beta", "gamma", "delta"]


def test_html_without_a_title_takes_its_first_heading() -> None:
    assert extract(media_types.HTML, b"<h2>Only heading</h2><p>x</p>").title == "Only heading"


def test_pptx_table_rows_keep_empty_cells_as_empty_fields() -> None:
    """Columns stay where they are, as in DOCX tables: an empty cell is an empty field between separators."""
    table = [["Owner", "Due", "Status"], ["Ada", "", "done"], ["", "", "open"], ["Bo", "May", ""]]
    extracted = extract(media_types.PPTX, samples.pptx_file([("Tasks", "This week")], table=table))
    assert extracted.text.split("\n\n")[-1].splitlines() == [
        "Owner | Due | Status",
        "Ada |  | done",
        "|  | open",
        "Bo | May |",
    ]
