"""Where an invisible HTML element ends, even when its end tag is left out (as HTML allows for p, li, td…).

Waiting for `</p>` after `<p hidden>x<p>y` would hide the rest of the page: the second `<p>` ends the
first. The rules are the HTML spec's on optional end tags, kept to what changes which text is seen.
"""

VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"})
_P_ENDERS = frozenset(
    {
        "address", "article", "aside", "blockquote", "details", "dialog", "div", "dl", "fieldset", "figcaption",
        "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hgroup", "hr", "main", "menu",
        "nav", "ol", "p", "pre", "search", "section", "table", "ul",
    }
)  # fmt: skip
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
MAX_DEPTH = 64  # bounds the work per tag; deeper elements inside are not tracked


class InvisibleElement:
    """The elements open inside an invisible element, from it down, as its subtree is parsed."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self._open = [tag]
        self._contexts: list[int] = []  # indices in `_open` of nested contexts: a start tag ends none below

    def start(self, tag: str) -> bool:
        """Takes a start tag; True when it ends the invisible element (and so is itself outside of it)."""
        if ends := _ENDS.get(tag):
            base = self._contexts[-1] + 1 if self._contexts else 0
            scope = self._open[base:]
            if found := ends.intersection(scope):
                self._close_from(base + min(map(scope.index, found)))
        if not self._open:
            return True
        if tag not in VOID and len(self._open) < MAX_DEPTH:
            if tag in _NESTED_CONTEXTS:
                self._contexts.append(len(self._open))
            self._open.append(tag)
        return False

    def end(self, tag: str) -> bool:
        """Takes an end tag; True when it ends the invisible element: its own, or its container's."""
        if tag in self._open:
            self._close_from(len(self._open) - 1 - self._open[::-1].index(tag))
        elif self.tag in _ENDED_BY and tag in _CONTAINER_ENDS:
            self._close_from(0)
        return not self._open

    def _close_from(self, index: int) -> None:
        del self._open[index:]
        while self._contexts and self._contexts[-1] >= index:
            self._contexts.pop()
