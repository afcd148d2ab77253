"""Go string semantics that BuildKit's Dockerfile parser depends on, written for Python.

BuildKit is Go: "space" means `unicode.IsSpace`, lower-casing means `strings.ToLower`, error
messages quote with `%q` (`strconv.Quote`). Python's `str.isspace`, `str.lower` and `repr`
differ at the edges (`\\x1c`-`\\x1f` are spaces to Python, `İ` lowers to two characters,
`repr` escapes differently), and those edges decide where an instruction splits.
"""

from __future__ import annotations

import re

# unicode.IsSpace: the Latin-1 spaces plus the Unicode White_Space property.
SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
# unicode.IsSpace(rune(b)) for a single byte b: Go code that walks a string byte by byte.
SPACE_BYTES = frozenset(b"\t\n\v\f\r \x85\xa0")
# What `strconv.Quote` writes for the control characters it names.
_NAMED_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
}
# Bytes that were not valid UTF-8 travel through Python as surrogate escapes (U+DC80-U+DCFF).
_ESCAPED_BYTE = range(0xDC80, 0xDD00)
_ESCAPED_BYTES = re.compile("[\udc80-\udcff]")


def is_space(char: str) -> bool:
    """`unicode.IsSpace` for one character."""
    return len(char) == 1 and char in SPACE


def lower(text: str) -> str:
    """`strings.ToLower`: simple case mapping, so `İ` becomes `i`, not `i̇` as in Python."""
    if text.isascii() or "\u0130" not in text:
        return text.lower()
    return text.replace("\u0130", "i").lower()


def quote(text: str) -> str:
    """`strconv.Quote`: a double-quoted Go string literal."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif code in _ESCAPED_BYTE:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif char.isprintable():
            out.append(char)
        elif char in _NAMED_ESCAPES:
            out.append(_NAMED_ESCAPES[char])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def invalid_as_replacement(text: str) -> str:
    """What Go sees decoding `text` rune by rune: each byte that was not UTF-8 is U+FFFD."""
    return _ESCAPED_BYTES.sub("\ufffd", text)
