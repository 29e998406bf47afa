"""What counts as no text at all: content and titles made only of it are refused."""

import pytest

from cortex_contracts.base import is_blank


@pytest.mark.parametrize(
    "text",
    [
        "",
        "  \n\t",
        "\u200b\u200d\ufeff",
        "\u3164\u3164",
        "\uffa0",
        "\u115f\u1160",
        "\ufe0f\u034f",
        "\x01\x7f",
        "\u2800",
        "\u2065\ufff0",
        "\U000e0080",
    ],
)
def test_invisible_text_is_blank(text: str) -> None:
    assert is_blank(text)


@pytest.mark.parametrize("text", ["a", " \u200bx", "\u3164한", "🙂", "\u00a0·"])
def test_anything_visible_is_not_blank(text: str) -> None:
    assert not is_blank(text)
