"""A Markdown file's title: front matter's `title:`, else its first level-1 heading as CommonMark reads it."""

import pytest

from cortex_extractors import extract


def title_of(text: str) -> str | None:
    return extract("text/markdown", text.encode()).title


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("# Release notes #\n\nBody.", "Release notes"),
        ("# C# in depth\n\nBody.", "C# in depth"),
        ("   # Indented up to three spaces\n", "Indented up to three spaces"),
        ("Setext title\n============\n\nBody.", "Setext title"),
        ('---\ntitle: "From front matter"\ndate: 2026-01-01\n---\n\n# Heading\n', "From front matter"),
        ("---\ndate: 2026-01-01\n---\n\n# After front matter\n", "After front matter"),
        ("```bash\n# a shell comment\n```\n\n# The real title\n", "The real title"),
        ("## Only a section\n\nBody.", None),
        ("#hashtag, not a heading\n", None),
        ("```\ncode\n```\n===\n", None),  # before: "```"
        ("## Sub\n===\n", None),  # before: "## Sub"
        ("- item\n===\n", None),
        ("---\nseo:\n  title: Nested\ntitle: >-\n  folded\n---\n\n# The heading\n", "The heading"),
        ("# Real Title\n\n```yaml\ntitle: Your awesome title\n```\n", "Real Title"),  # before: a config's title
        ("# Guide\n\ntitle: is the key of the page\n", "Guide"),
        ('---\ntitle: "Quoted" # a comment\n---\n', "Quoted"),
        ("---\ntitle: 'It''s here'\n---\n", "It's here"),
        ("---\ntitle: Plain words # a comment\n---\n", "Plain words"),
    ],
)
def test_the_title_is_read_as_markdown_reads_it(text: str, title: str | None) -> None:
    assert title_of(text) == title
