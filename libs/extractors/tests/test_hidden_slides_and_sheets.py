"""Hidden slides of a PPTX deck and hidden sheets of an XLSX workbook are not read: before, their text was indexed
as if shown; so were shapes hidden on a shown slide. Hidden rows and columns of a shown sheet are read."""

import io

from openpyxl import Workbook
from pptx import Presentation
from pptx.util import Inches

from cortex_extractors import extract, media_types, samples


def test_a_hidden_slide_is_left_out_with_its_notes_and_does_not_title_the_deck() -> None:
    data = samples.pptx_file(
        [("Draft pitch", "hiddenslidewombat"), ("Roadmap", "Q1 goals"), ("Cut idea", "hiddenquokka"), ("", "Thanks")],
        notes={0: "hiddennotesbilby", 1: "Mention the budget."},
        hidden={0, 2},
    )
    extracted = extract(media_types.PPTX, data)
    assert extracted.title == "Roadmap"
    # An untitled slide keeps its number in the deck, hidden slides counted, as PowerPoint numbers it.
    assert extracted.text.split("\n\n") == ["# Roadmap", "Q1 goals", "Mention the budget.", "# Slide 4", "Thanks"]


def test_shapes_hidden_on_a_shown_slide_are_left_out() -> None:
    """The Selection Pane's hidden shapes (`p:cNvPr hidden="1"`), a group's members with it."""
    presentation = Presentation(io.BytesIO(samples.pptx_file([("Plan", "Shown words")])))
    shapes = presentation.slides[0].shapes
    box = shapes.add_textbox(Inches(1), Inches(1), Inches(2), Inches(1))
    box.text_frame.text = "hiddenshapenumbat"
    box._element.xpath("./*[1]/p:cNvPr")[0].set("hidden", "1")
    group = shapes.add_group_shape()
    group.shapes.add_textbox(Inches(1), Inches(3), Inches(2), Inches(1)).text_frame.text = "hiddengroupquoll"
    group._element.xpath("./*[1]/p:cNvPr")[0].set("hidden", "true")
    shapes.add_textbox(Inches(1), Inches(5), Inches(2), Inches(1)).text_frame.text = "Also shown"
    out = io.BytesIO()
    presentation.save(out)

    text = extract(media_types.PPTX, out.getvalue()).text

    assert "Shown words" in text and "Also shown" in text
    assert "hidden" not in text


def test_a_hidden_title_shape_titles_neither_its_slide_nor_the_deck() -> None:
    presentation = Presentation(io.BytesIO(samples.pptx_file([("Draft title", "body")])))
    title = presentation.slides[0].shapes.title
    assert title is not None
    title._element.xpath("./*[1]/p:cNvPr")[0].set("hidden", "1")
    out = io.BytesIO()
    presentation.save(out)

    extracted = extract(media_types.PPTX, out.getvalue())

    assert (extracted.title, extracted.text) == (None, "# Slide 1\n\nbody")


def test_hidden_and_very_hidden_sheets_are_left_out() -> None:
    data = samples.xlsx_file(
        {
            "Lists": [["hiddendropdownnumbat"]],
            "Summary": [["Region", "Total"], ["North", 12]],
            "Macro data": [["veryhiddenpotoroo"]],
            "Notes": [["Checked"]],
        },
        states={"Lists": "hidden", "Macro data": "veryHidden"},
    )
    assert extract(media_types.XLSX, data).text == "# Summary\n\nRegion | Total\nNorth | 12\n\n# Notes\n\nChecked"


def test_hidden_rows_and_columns_of_a_shown_sheet_are_read() -> None:
    """Mostly rows a filter or an outline hides: the sheet's own data, whatever filter it was saved with."""
    workbook = Workbook()
    sheet = workbook.active
    assert sheet is not None
    for row in [["Name", "Secret column"], ["Filtered out", "x"], ["Shown", "y"]]:
        sheet.append(row)
    sheet.row_dimensions[2].hidden = True
    sheet.column_dimensions["B"].hidden = True
    out = io.BytesIO()
    workbook.save(out)
    assert extract(media_types.XLSX, out.getvalue()).text.splitlines()[2:] == [
        "Name | Secret column",
        "Filtered out | x",
        "Shown | y",
    ]
