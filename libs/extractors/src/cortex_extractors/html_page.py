"""HTML: the text a reader sees. Never the content of script, style, template, noscript or hidden elements,
of a dialog not open, nor the fallback content of media, canvas, iframe and object elements.

Headings become `#` lines, list items `- ` lines, table cells are joined with ` | `; the page's first
`<title>` (else the first heading) is the title, not the title of an inline SVG icon.
"""

import codecs
import re
from html.parser import HTMLParser

from cortex_extractors.extracted import Extracted
from cortex_extractors.html_invisible import FOREIGN_ROOTS, VOID, InvisibleElement
from cortex_extractors.limits import BoundedText, short_title
from cortex_extractors.media_types import HTML
from cortex_extractors.plain_text import decode_text

# Not rendered: raw text, inert or no-script content, what the HTML spec's rendering section says is display:
# none (datalist, noembed, noframes), and the fallback content of elements that show something else instead.
INVISIBLE = frozenset(
    {
        "script", "style", "template", "noscript", "noembed", "noframes", "datalist",
        "iframe", "object", "video", "audio", "canvas",
    }
)  # fmt: skip
FOREIGN_LABELS = frozenset({"title", "desc"})  # an SVG's name and description: a tooltip at most, never shown
HEADINGS = {f"h{level}": level for level in range(1, 7)}
BLOCKS = frozenset(
    {
        "address", "article", "aside", "blockquote", "caption", "dd", "details", "div", "dl", "dt", "fieldset",
        "figcaption", "figure", "footer", "form", "header", "hr", "li", "main", "nav", "ol", "p", "pre",
        "section", "summary", "table", "tr", "ul", "body", "html", "head",
        # shown apart from their neighbours, though not blocks: run together, their words would be one word
        "option", "optgroup", "select", "svg", "legend", "menu", "dialog", "hgroup", "center", "search",
    }
)  # fmt: skip
CELLS = frozenset({"td", "th"})
LINE_BREAK = "\ue000"  # stands for <br> until a block is flushed
DISPLAY_NONE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
META_CHARSET = re.compile(rb"<meta[^>]+charset\s*=\s*[\"']?\s*([A-Za-z0-9_.:-]+)", re.IGNORECASE)
SNIFF_BYTES = 2048
# The encodings browsers read a page in (the WHATWG Encoding Standard), as Python names them. Any other label
# (utf-7, EBCDIC, rot13, punycode) is ignored, as browsers ignore it; ASCII and Latin-1 mean windows-1252.
BROWSER_ENCODINGS = frozenset(
    {
        "utf-8", "cp866", "koi8-r", "koi8-u", "mac-roman", "mac-cyrillic", "cp874", "gbk", "gb18030", "big5",
        "big5hkscs", "euc_jp", "iso2022_jp", "shift_jis", "euc_kr",
        *(f"iso8859-{part}" for part in (2, 3, 4, 5, 6, 7, 8, 10, 13, 14, 15, 16)),
        *(f"cp{page}" for page in range(1250, 1259)),
    }
)  # fmt: skip
AS_IN_BROWSERS = {"ascii": "cp1252", "iso8859-1": "cp1252", "iso8859-9": "cp1254", "iso8859-11": "cp874"}
LABELS_PYTHON_LACKS = {"windows-874": "cp874", "x-mac-cyrillic": "mac-cyrillic"}


def _hidden(tag: str, attrs: list[tuple[str, str | None]]) -> bool:
    if tag == "dialog" and all(name != "open" for name, _ in attrs):
        return True  # a closed dialog: `dialog:not([open]) { display: none }` in browsers' own style sheet
    return any(name == "hidden" or (name == "style" and value and DISPLAY_NONE.search(value)) for name, value in attrs)


class _VisibleText(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out = BoundedText()
        self.title: list[str] | None = None  # the text of the page's first <title>, once it starts
        self.first_heading: str | None = None
        self._in_title = False
        self._foreign = 0  # svg and math elements open around the text
        self._skipping: InvisibleElement | None = None
        self._inline: list[str] = []
        self._heading = 0
        self._pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._skipping:
            if not self._skipping.start(tag):
                return
            self._skipping = None  # the tag ended the invisible element, and is itself outside it
        if tag not in VOID and (tag in INVISIBLE or _hidden(tag, attrs) or self._not_the_title(tag)):
            self._skipping = InvisibleElement(tag, in_foreign=self._foreign > 0)
            return
        if tag in FOREIGN_ROOTS:
            self._foreign += 1
        if tag == "title":
            self._in_title = True
            self.title = []
        elif tag in HEADINGS:
            self._flush()
            self._heading = HEADINGS[tag]
        elif tag == "br":
            self._inline.append(LINE_BREAK)
        elif tag in CELLS:
            if "".join(self._inline).strip():
                self._inline.append(" | ")
        elif tag in BLOCKS:
            self._flush()
            if tag == "li":
                self._inline.append("- ")
            self._pre += tag == "pre"

    def handle_endtag(self, tag: str) -> None:
        if self._skipping:
            if not self._skipping.end(tag):
                return
            own_end, self._skipping = tag == self._skipping.tag, None
            if own_end:
                return
            # else its container's end tag ended it, and ends that container too: handled below
        if tag in FOREIGN_ROOTS:
            self._foreign = max(self._foreign - 1, 0)
        if tag == "title":
            self._in_title = False
        elif tag in HEADINGS or tag in BLOCKS:
            self._flush()
            if tag == "pre":
                self._pre = max(self._pre - 1, 0)

    def handle_data(self, data: str) -> None:
        if self._skipping:
            return
        if self.title is not None and self._in_title:
            self.title.append(data)
        else:
            self._inline.append(data)

    def close(self) -> None:
        # What the parser still holds at the end of the page is text whose last character reference might
        # have gone on, or an unfinished tag or comment (`<div title="x`, `<!-- note`), which close() would
        # pass on as text. Browsers show neither: a comment runs to the end of the file, the tag is dropped.
        if self.rawdata.startswith("<"):
            self.rawdata = ""
        super().close()
        self._flush()

    def _not_the_title(self, tag: str) -> bool:
        """A title or desc in SVG or MathML, or a page <title> after the first: neither the page's title
        (browsers take the first <title>) nor text shown on the page."""
        if self._foreign:
            return tag in FOREIGN_LABELS
        return tag == "title" and self.title is not None

    def _flush(self) -> None:
        raw, self._inline = "".join(self._inline), []
        if self._pre:
            text = raw.replace(LINE_BREAK, "\n").strip("\n")
        else:
            text = "\n".join(" ".join(line.split()) for line in raw.split(LINE_BREAK))
        if self._heading:
            if text.strip():  # else a block inside the heading: its text is still to come
                self.out.heading(self._heading, text)
                self.first_heading = self.first_heading or short_title(text)
                self._heading = 0
        elif text.strip(" -|\n"):
            self.out.add(text)


def _declared_encoding(data: bytes) -> str | None:
    """The `<meta charset>`'s encoding, as browsers take it (WHATWG): one of theirs, a UTF-16 or UTF-32 label
    meaning UTF-8 (a page that declares it in ASCII bytes is not UTF-16); None for any other label."""
    found = META_CHARSET.search(data[:SNIFF_BYTES])
    if found is None:
        return None
    label = found.group(1).decode("ascii").lower()
    try:
        name = codecs.lookup(LABELS_PYTHON_LACKS.get(label, label)).name
    except LookupError:
        return None
    if name.startswith(("utf-16", "utf-32")):
        return "utf-8"
    name = AS_IN_BROWSERS.get(name, name)
    return name if name in BROWSER_ENCODINGS else None


class HtmlExtractor:
    media_types = frozenset({HTML, "application/xhtml+xml"})

    def extract(self, data: bytes, filename: str | None) -> Extracted:
        parser = _VisibleText()
        parser.feed(decode_text(data, _declared_encoding(data)))
        parser.close()
        title = short_title("".join(parser.title or ()))
        return Extracted(title=title or parser.first_heading, text=parser.out.text())


extractor = HtmlExtractor()
