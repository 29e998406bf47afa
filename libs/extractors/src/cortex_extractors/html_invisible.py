"""Where an invisible HTML element ends, even when its end tag is left out (as HTML allows for p, li, td…).

Waiting for `</p>` after `<p hidden>x<p>y` would hide the rest of the page: the second `<p>` ends the
first. The rules are the HTML spec's on optional end tags, kept to what changes which text is seen.
"""

import sys

VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"})
_P_ENDERS = frozenset(
    {
        "address", "article", "aside", "blockquote", "details", "dialog", "div", "dl", "fieldset", "figcaption",
        "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hgroup", "hr", "main", "menu",
        "nav", "ol", "p", "pre", "search", "section", "table", "ul",
    }
)  # fmt: skip
FOREIGN_ROOTS = frozenset({"svg", "math"})  # SVG and MathML: their end tag closes all that is open inside
_TABLE_PARTS = frozenset({"caption", "col", "colgroup", "tbody", "tfoot", "thead"})
_ROW_PARTS = frozenset({"tr", "td", "th"})
# The start tags that end an open element whose end tag may be left out.
_ENDED_BY: dict[str, frozenset[str]] = {
    "p": _P_ENDERS,
    "li": frozenset({"li"}),
    "dt": frozenset({"dt", "dd"}),
    "dd": frozenset({"dt", "dd"}),
    "rt": frozenset({"rt", "rp"}),
    "rp": frozenset({"rt", "rp"}),
    "option": frozenset({"option", "optgroup", "hr"}),
    "optgroup": frozenset({"optgroup", "hr"}),
    "thead": _TABLE_PARTS,
    "tbody": _TABLE_PARTS,
    "tfoot": _TABLE_PARTS,
    "tr": _TABLE_PARTS | {"tr"},
    "td": _TABLE_PARTS | _ROW_PARTS,
    "th": _TABLE_PARTS | _ROW_PARTS,
    "caption": _TABLE_PARTS | _ROW_PARTS,
    "colgroup": (_TABLE_PARTS - {"col"}) | _ROW_PARTS,
}
# The same turned around: for a start tag, the elements it ends.
_ENDS = {
    tag: frozenset(name for name, enders in _ENDED_BY.items() if tag in enders)
    for tag in {tag for enders in _ENDED_BY.values() for tag in enders}
}
# Open inside one of those, these start a context of their own: a `<li>` in a nested list ends no outer li.
_NESTED_CONTEXTS = frozenset({"table", "ul", "ol", "menu", "dl", "select", "datalist", "ruby", "button", "object"})
# End tags of the containers such an element sits in: one that matches nothing open inside it ends it along
# with its container. Not `</p>`, which pages often leave stray after a block that already ended the paragraph.
_CONTAINER_ENDS = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "caption", "datalist", "dd", "details", "dialog",
        "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "header", "html", "li", "main",
        "menu", "nav", "ol", "optgroup", "ruby", "search", "section", "select", "table", "tbody", "td", "tfoot",
        "th", "thead", "tr", "ul",
    }
)  # fmt: skip


class InvisibleElement:
    """The elements open inside an invisible element, from it down, as its subtree is parsed.

    All of them, at any depth: one left untracked would let its end tag close the invisible element early,
    showing the rest of it. An open element costs a list slot, a tag constant work (amortized): open tags
    are counted, and a start tag looks only at the elements it may end in the current nested context, at
    most one per name in `_ENDED_BY` (a start tag ends an open element of its own name).
    """

    def __init__(self, tag: str, *, in_foreign: bool = False) -> None:
        self.tag = tag
        # An end tag that matches nothing open inside ends it with its container, as browsers close what is
        # left open in a cell, an item or a block at its end (before, QA 45, only an element whose end tag may
        # be left out was: an unclosed `<span hidden>` in a `<td>` hid the rest of the page); inside SVG or
        # MathML, the end of the svg or math element does.
        self._container_ends = _CONTAINER_ENDS | (FOREIGN_ROOTS if in_foreign else frozenset())
        self._open: list[str] = []
        self._counts: dict[str, int] = {}
        self._contexts: list[int] = []  # indices in `_open` of nested contexts: a start tag ends none below
        self._endable: list[int] = []  # indices in `_open` of elements a start tag may end (`_ENDED_BY`)
        self._push(tag)

    def start(self, tag: str) -> bool:
        """Takes a start tag; True when it ends the invisible element (and so is itself outside of it)."""
        if (ends := _ENDS.get(tag)) and (index := self._lowest_open(ends)) is not None:
            self._close_from(index)
        if not self._open:
            return True
        if tag not in VOID:
            self._push(tag)
        return False

    def end(self, tag: str) -> bool:
        """Takes an end tag; True when it ends the invisible element: its own, or its container's."""
        if self._counts.get(tag):
            while self._pop() != tag:
                pass
        elif tag in self._container_ends:
            self._close_from(0)
        return not self._open

    def _lowest_open(self, tags: frozenset[str]) -> int | None:
        """The index of the outermost element named in `tags` open in the current nested context, if any."""
        base = self._contexts[-1] + 1 if self._contexts else 0
        lowest = None
        for index in reversed(self._endable):
            if index < base:
                break
            if self._open[index] in tags:
                lowest = index
        return lowest

    def _push(self, tag: str) -> None:
        tag = sys.intern(tag)  # one string per name: the parser makes a new one for each tag it reads
        if tag in _NESTED_CONTEXTS:
            self._contexts.append(len(self._open))
        if tag in _ENDED_BY:
            self._endable.append(len(self._open))
        self._open.append(tag)
        self._counts[tag] = self._counts.get(tag, 0) + 1

    def _pop(self) -> str:
        tag = self._open.pop()
        self._counts[tag] -= 1
        index = len(self._open)
        if self._contexts and self._contexts[-1] == index:
            self._contexts.pop()
        if self._endable and self._endable[-1] == index:
            self._endable.pop()
        return tag

    def _close_from(self, index: int) -> None:
        while len(self._open) > index:
            self._pop()
