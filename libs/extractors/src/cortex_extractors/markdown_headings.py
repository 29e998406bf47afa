"""Markdown headings, read line by line in linear time (a backtracking regex took minutes on a long line).

ATX headings (`## Title ##`) and setext underlines (`Title` over `===` or `---`) as CommonMark reads
them: up to three spaces of indent, a closing run of `#` only after a space; code fences; YAML front matter.
"""

MAX_INDENT = 3
FRONT_MATTER = "---"
FRONT_MATTER_ENDS = ("---", "...")
MAX_FRONT_MATTER_LINES = 100
LIST_MARKERS = ("- ", "* ", "+ ", ">")


def _outdented(line: str) -> str | None:
    stripped = line.lstrip(" ")
    return stripped if len(line) - len(stripped) <= MAX_INDENT else None


def atx_heading(line: str) -> tuple[int, str] | None:
    """(level, text) of an ATX heading line; None for any other line, and for an empty heading."""
    stripped = _outdented(line)
    if stripped is None:
        return None
    level = len(stripped) - len(stripped.lstrip("#"))
    rest = stripped[level:]
    if not 1 <= level <= 6 or (rest and rest[0] not in " \t"):
        return None
    text = rest.strip()
    unclosed = text.rstrip("#")
    if unclosed != text and (not unclosed or unclosed[-1] in " \t"):
        text = unclosed.rstrip()
    return (level, text) if text else None


def setext_level(line: str) -> int | None:
    """1 for a `===` underline, 2 for `---`: a heading when it follows a paragraph's single line (one that
    `can_be_setext_text`)."""
    stripped = _outdented(line)
    marks = stripped.strip() if stripped is not None else ""
    if marks and marks == "=" * len(marks):
        return 1
    if marks and marks == "-" * len(marks):
        return 2
    return None


def is_fence(line: str) -> bool:
    """Any indent: a fence opened inside a list item is still a fence."""
    return line.lstrip().startswith(("```", "~~~"))


def can_be_setext_text(line: str) -> bool:
    """Whether a line over an underline is a heading's text: not a list item or a quote, which the
    underline follows as a rule."""
    stripped = line.strip()
    digits = len(stripped) - len(stripped.lstrip("0123456789"))
    numbered = 0 < digits <= 9 and stripped[digits : digits + 2] in (". ", ") ")
    return bool(stripped) and not numbered and not stripped.startswith(LIST_MARKERS) and stripped not in ("-", "*", "+")


def front_matter_end(lines: list[str]) -> int:
    """The index of the first line after YAML front matter (a `---` first line, closed by `---` or `...`
    within 100 lines); 0 without front matter."""
    if not lines or lines[0].rstrip() != FRONT_MATTER:
        return 0
    for index, line in enumerate(lines[1:MAX_FRONT_MATTER_LINES], start=1):
        if line.rstrip() in FRONT_MATTER_ENDS:
            return index + 1
    return 0
