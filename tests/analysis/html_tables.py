"""Reading the report's HTML tables back, for tests: cell texts and a width estimate."""

from __future__ import annotations

import re
from html.parser import HTMLParser

#: px per character at the report's table font (0.85em sans-serif, bold headers): an upper
#: bound of Arial/DejaVu digit and letter widths, so the estimate errs on the wide side
PX_PER_CHAR = 8.0
#: px per cell beyond its text: 2 x 6 px padding + border
CELL_EXTRA = 14.0


class _Tables(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tables: list[list[list[tuple[str, str]]]] = []   # table -> row -> (tag, text)
        self._cell: list[str] | None = None
        self._tag = ""

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
            self._tag = ("td.n" if tag == "td" and ("class", "n") in attrs
                         else "td.id" if tag == "td" and ("class", "id") in attrs else tag)
        elif tag == "br" and self._cell is not None:
            self._cell.append("\n")

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append((self._tag, "".join(self._cell)))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def tables(html: str) -> list[list[list[tuple[str, str]]]]:
    """Every table: rows of (tag, text) cells, tag ``td.n`` for number cells, ``td.id`` for
    ids (not wrapped); ``<br>`` becomes a newline."""
    parser = _Tables()
    parser.feed(html)
    return parser.tables


def min_width(table) -> float:
    """The narrowest the browser can lay the table out: per column, its longest unbreakable
    piece (a number cell's line, which does not wrap; a text cell's or header's longest
    word) times ``PX_PER_CHAR``, plus padding."""
    widths: dict[int, float] = {}
    for row in table:
        for i, (tag, text) in enumerate(row):
            if tag == "th":
                pieces = re.split(r"[\s\u00ad]+", text)
            elif tag == "td.n":
                pieces = text.split("\n")                 # number cells do not wrap
            elif tag == "td.id":
                pieces = [text]                           # ids do not wrap
            else:
                pieces = re.split(r"(?<=-)|\s+", text)    # text wraps at - and spaces
            chars = max((len(p) for p in pieces), default=0)
            widths[i] = max(widths.get(i, 0.0), chars * PX_PER_CHAR + CELL_EXTRA)
    return sum(widths.values())
