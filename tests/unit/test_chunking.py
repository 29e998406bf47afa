"""Splitting a document into passages: heading paths, code fences, unit limits with overlap, NFC."""

import itertools
import unicodedata

from cortex_indexer.chunking import (
    MAX_HEADING_CHARS,
    MAX_UNIT_CHARS,
    MAX_WORDS,
    OVERLAP_WORDS,
    Chunk,
    chunk_document,
    file_name_passage,
    units_of,
)


def words(prefix: str, n: int) -> str:
    return " ".join(f"{prefix}{i}" for i in range(n))


def word_count(chunk: Chunk) -> int:
    return len(chunk.text.split())


def test_headings_become_the_heading_path() -> None:
    body = (
        "Intro before any heading.\n\n"
        "# Setup\n\nInstall the tools.\n\n"
        "## Linux ##\n\nUse the package manager.\n\n"
        "### Debian\n\nUse apt.\n\n"
        "# Usage\n\nRun it."
    )

    chunks = chunk_document("Guide", body)

    assert [(c.heading, c.text) for c in chunks] == [
        ("Guide", "Intro before any heading."),
        ("Guide › Setup", "Install the tools."),
        ("Guide › Setup › Linux", "Use the package manager."),
        ("Guide › Setup › Linux › Debian", "Use apt."),
        ("Guide › Usage", "Run it."),
    ]


def test_hash_lines_inside_code_fences_are_not_headings() -> None:
    body = (
        "# Build\n\n"
        "Run the script:\n\n"
        "```bash\n# not a heading, a shell comment\n\nmake all\n```\n\n"
        "~~~\n## also not a heading\n~~~\n\n"
        "Done."
    )

    chunks = chunk_document("Doc", body)

    assert {c.heading for c in chunks} == {"Doc › Build"}
    text = "\n".join(c.text for c in chunks)
    assert "# not a heading, a shell comment" in text
    assert "## also not a heading" in text
    # the blank line inside the fence does not split the code block
    assert any("# not a heading, a shell comment\n\nmake all" in c.text for c in chunks)


def test_a_long_paragraph_is_split_into_overlapping_windows() -> None:
    paragraph = words("w", 500)

    chunks = chunk_document("Long", paragraph)

    assert len(chunks) > 1
    assert all(word_count(c) <= MAX_WORDS for c in chunks)
    for before, after in itertools.pairwise(chunks):
        assert before.text.split()[-OVERLAP_WORDS:] == after.text.split()[:OVERLAP_WORDS]
    covered = {word for c in chunks for word in c.text.split()}
    assert covered == set(paragraph.split())


def test_paragraphs_are_packed_whole_and_never_over_max_words() -> None:
    paragraphs = [words("a", 60), words("b", 60), words("c", 60), words("d", 150), words("e", 20)]

    chunks = chunk_document("Packed", "\n\n".join(paragraphs))

    assert len(chunks) > 1
    counts = [word_count(c) for c in chunks]
    assert all(count <= MAX_WORDS for count in counts), counts
    text = " ".join(c.text for c in chunks).split()
    for paragraph in paragraphs:  # every paragraph survives in one piece
        assert any(paragraph in c.text for c in chunks)
    assert set(text) == {word for p in paragraphs for word in p.split()}


def test_consecutive_packed_passages_overlap() -> None:
    paragraphs = [words("a", 100), words("b", 100)]

    first, second = chunk_document("Overlap", "\n\n".join(paragraphs))

    assert first.text == paragraphs[0]
    assert second.text.split()[:OVERLAP_WORDS] == paragraphs[0].split()[-OVERLAP_WORDS:]
    assert second.text.endswith(paragraphs[1])


def test_an_empty_body_gives_one_chunk_holding_the_title() -> None:
    for body in ("", "   \n\n  \n"):
        assert chunk_document("Only a title", body) == [Chunk(ordinal=0, heading="Only a title", text="")]


def test_ordinals_run_from_zero_without_gaps() -> None:
    body = "\n\n".join(f"# Section {i}\n\n{words(f's{i}x', 200)}" for i in range(4))

    chunks = chunk_document("Many", body)

    assert len(chunks) >= 8
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))


def test_content_hash_is_stable_and_follows_the_text() -> None:
    body = "# Part\n\nSome words here."
    (one,) = chunk_document("T", body)
    (again,) = chunk_document("T", body)
    (edited,) = chunk_document("T", "# Part\n\nSome other words here.")
    (renamed,) = chunk_document("T2", body)

    assert one.content_hash == again.content_hash
    assert len(one.content_hash) == 64
    assert edited.content_hash != one.content_hash
    assert renamed.content_hash != one.content_hash


def units(chunk: Chunk) -> int:
    return len(units_of(chunk.text))


def test_text_without_spaces_is_cut_into_bounded_passages_that_keep_it_whole() -> None:
    minified = '{"k":' * 60_000  # 300,000 characters, not one space: one word to a whitespace splitter
    cjk = "東京都は日本の首都であり、人口が最も多い都市です。" * 400

    for body in (minified, cjk):
        chunks = chunk_document("Doc", body)

        assert len(chunks) > 10
        assert all(units(c) <= MAX_WORDS for c in chunks)
        assert all(len(c.text) <= MAX_WORDS * MAX_UNIT_CHARS for c in chunks)
        assert all(c.text in body for c in chunks)  # nothing inserted between characters
        assert body.startswith(chunks[0].text) and body.endswith(chunks[-1].text)


def test_a_heading_line_of_spaces_is_read_in_linear_time_and_kept_short() -> None:
    # "# x", 100,000 spaces, "y": the backtracking heading pattern took hours on this line.
    chunks = chunk_document("Doc", "# x" + " " * 100_000 + "y\n\nBody.")

    assert {c.heading for c in chunks} == {"Doc › x" + " " * (MAX_HEADING_CHARS - 2) + "…"}
    text = " ".join(c.text for c in chunks).split()
    assert text == ["x", "y", "Body."]  # the heading's whole text is kept as text: nothing lost


def test_setext_and_closed_atx_headings_become_the_heading_path() -> None:
    body = "Setup\n=====\n\nInstall.\n\nLinux\n-----\n\nUse apt.\n\n## Usage ##\n\nRun it.\n\n---\n\nAfter a rule."

    chunks = chunk_document("Guide", body)

    assert [(c.heading, c.text) for c in chunks] == [
        ("Guide › Setup", "Install."),
        ("Guide › Setup › Linux", "Use apt."),
        ("Guide › Setup › Usage", "Run it.\n\n---\n\nAfter a rule."),
    ]


def test_text_is_kept_in_nfc() -> None:
    decomposed = unicodedata.normalize("NFD", "Café crème")

    (chunk,) = chunk_document(decomposed, decomposed)

    assert (chunk.heading, chunk.text) == ("Café crème", "Café crème")


def test_sibling_headings_replace_each_other_whatever_level_the_document_starts_at() -> None:
    body = "## Install\n\nRun it.\n\n## Usage\n\nUse it.\n\n#### Deep\n\nDown.\n\n### Middle\n\nBetween."

    chunks = chunk_document("Doc", body)

    assert [c.heading for c in chunks] == [
        "Doc › Install",
        "Doc › Usage",  # before: Usage under Install
        "Doc › Usage › Deep",
        "Doc › Usage › Middle",
    ]


def test_a_heading_with_nothing_under_it_is_a_passage_of_its_own() -> None:
    """Before (QA 47): `## Xylophone…` right before `## Contacts` was in no passage, so no search found it."""
    body = (
        "# Security checklist\n\nGeneral rules apply.\n\n## Xylophone escalation procedure\n\n"
        "## Contacts\n\nCall the desk.\n\n# Parent\n\n## Child\n\nUnder both.\n\n## Last words"
    )

    chunks = chunk_document("Doc", body)

    assert [(c.heading, c.text) for c in chunks] == [
        ("Doc › Security checklist", "General rules apply."),
        ("Doc › Security checklist › Xylophone escalation procedure", ""),
        ("Doc › Security checklist › Contacts", "Call the desk."),
        ("Doc › Parent › Child", "Under both."),  # a heading above a subsection is in the subsection's path
        ("Doc › Parent › Last words", ""),
    ]


def test_front_matter_lists_quotes_and_long_lines_are_not_headings() -> None:
    long_line = "Supercalifragilistic " * 12  # over MAX_HEADING_CHARS
    body = (
        "---\ntitle: Guide\n\ndescription: How to deploy\n# generated\n---\n\n"
        "- only item\n---\n\n> a quote\n---\n\n"
        f"{long_line}\n---\n\nAfter."
    )

    chunks = chunk_document("Doc", body)

    assert {c.heading for c in chunks} == {"Doc"}
    text = "\n".join(c.text for c in chunks)
    for kept in ("description: How to deploy", "# generated", "- only item", "> a quote", long_line.strip(), "After."):
        assert kept in text


def test_a_heading_every_few_words_costs_what_the_words_alone_would() -> None:
    """Before: a 1 MB body of `# h` / `t` lines made 170,000 passages (hours of embedding for one event)."""
    body = "# h\nt\n" * 170_000

    chunks = chunk_document("Doc", body)

    assert len(chunks) < 5_000
    assert all(units(c) <= MAX_WORDS for c in chunks)
    assert sum(c.text.count("t") for c in chunks) >= 170_000  # every word kept (the overlap repeats some)


def test_many_short_sections_keep_their_headings() -> None:
    body = "".join(f"## Question {i}\n\nShort answer {i}.\n\n" for i in range(3_000))

    chunks = chunk_document("FAQ", body)

    assert len(chunks) == 3_000
    assert chunks[1234].heading == "FAQ › Question 1234"


def test_units_are_words_runs_of_32_characters_and_cjk_characters_not_spaces() -> None:
    assert len(units_of("plain words here")) == 3
    assert len(units_of("x" * 80)) == 3  # 32 + 32 + 16
    assert len(units_of("internationalization")) == 1  # an ordinary long word is one, as before
    assert len(units_of("東京\u3000大阪")) == 4  # the ideographic space (U+3000) between them is white space


def test_a_file_name_is_a_passage_with_its_words_and_a_blank_one_none() -> None:
    assert file_name_passage("Review", " q3_budget.docx ", ordinal=4) == [
        Chunk(ordinal=4, heading="Review", text="q3_budget.docx (q3 budget docx)")
    ]
    assert file_name_passage("Review", "plan", ordinal=0) == [Chunk(ordinal=0, heading="Review", text="plan")]
    assert file_name_passage("Review", " \u200b ", ordinal=0) == []
