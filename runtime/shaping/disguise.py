"""Secrets disguised by what an ordinary command adds to its output.

``grep --color=always`` puts colour codes between a token's prefix and its body,
``json.dumps`` and ``repr`` print ``\\nAKIA...`` (no word boundary before the key),
and text can carry zero-width characters, soft hyphens, combining marks, NULs (UTF-16
output) or full-width letters inside a token. None of these is an encoding the reader
must undo: a person or a model reads the token straight through them. So each line
holding one is also read as its *skeleton* (escape sequences and invisible characters
dropped, ``\\n``-style escapes read as a space, ``\\u0041`` as ``A``, full-width forms as
ASCII), the redactor's patterns run on the skeletons, and what they find is replaced
in the original text, disguise included.

Only lines holding such a character are looked at again, all in one scan, so clean
output costs one regular-expression search.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable

import re2

from runtime.shaping._unicode import clean, to_utf8

#: The count name of secrets found only in a skeleton.
DISGUISED = "disguised_secret"
#: Spans a redactor finds in a text: (start, end, replacement) in characters.
Spans = Callable[[str], list[tuple[int, int, str]]]

_ANSI = r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]?"
_INVISIBLE = (
    "[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f"
    "\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0"
    "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]+"
)
_ESCAPE = r"\\(?:u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|[nrtbfv0\"'\\/])"
_FULLWIDTH = "[\uff01-\uff5e]"
#: One disguise: what the skeleton drops or rewrites.
_PIECE = re.compile(f"(?P<drop>{_ANSI}|[^\n]\x08|{_INVISIBLE})|(?P<esc>{_ESCAPE})|(?P<wide>{_FULLWIDTH})")
#: A line worth a second look (a backslash escape only when a token character follows it).
_TRIGGER = re.compile(
    f"{_ANSI}|{_INVISIBLE}|{_FULLWIDTH}|\\\\(?:u[0-9a-fA-F]{{4}}|x[0-9a-fA-F]{{2}}|[nrtbfv0\"'\\\\/])[A-Za-z0-9]"
)
#: The same test over a whole text, in RE2 (linear, and fast on text holding none).
_TRIGGER_FAST = re2.compile(_TRIGGER.pattern)
#: Any character a disguise starts with: ESC, the invisible ones, a backslash, a
#: full-width form. Text holding none (nearly all output) skips this module at the cost
#: of one character-class scan.
_DISGUISE_CHAR = re.compile("[\\\\\x1b\uff01-\uff5e" + _INVISIBLE[1:-2] + "]")
#: Lines looked at again per text at most (a flood of coloured lines is scanned in bounded time).
MAX_LINES_CHARS = 8 * 1024 * 1024


#: Printable ASCII but the backslash, and tab, newline, carriage return: never a disguise.
_PLAIN_BYTES = bytes(range(0x20, 0x7F)).replace(b"\\", b"") + b"\t\n\r"


def has_disguise(text: str, data: bytes | None = None) -> bool:
    """Whether ``text`` (``data``: its UTF-8, if already made) holds a character a
    disguise could be made of; False means :func:`redact_disguised` changes nothing.

    One ``bytes.translate`` drops the plain ASCII bytes in C (about 1 us per 4 KB); the
    regular expression only looks at what is left, usually nothing or a few letters."""
    rest = (to_utf8(text) if data is None else data).translate(None, _PLAIN_BYTES)
    if not rest:
        return False
    if rest.isascii():  # a backslash, ESC, NUL or another control character
        return True
    return _DISGUISE_CHAR.search(rest.decode("utf-8", "replace")) is not None


def redact_disguised(text: str, spans: Spans, *, inside: bool = False) -> tuple[str, int]:
    """``text`` with every secret found in its lines' skeletons replaced (disguise and
    all), and how many were replaced. With ``inside``, only secrets with a disguise
    inside them (a dropped character or a rewritten letter, not a ``\\n``-style
    separator): the pass before plain redaction, which must leave the rest to it."""
    if not has_disguise(text):  # the common case: one bytes.translate, no regex
        return text, 0
    if _TRIGGER_FAST.search(clean(text)) is None:  # RE2 encodes to UTF-8: lone surrogates as U+FFFD
        return text, 0
    # The skeleton in pieces; piece k starts at skeleton index sk[k] and original index
    # orig[k]; a plain run maps one for one, a rewritten disguise (width[k] > 0) is one
    # skeleton character standing for width[k] original ones.
    pieces: list[str] = []
    marks: list[int] = []  # original offsets of dropped characters and rewritten letters
    glued: set[int] = set()  # original offsets right after a separator escape (`\\n`)
    sk: list[int] = []
    orig: list[int] = []
    width: list[int] = []
    at = 0
    line_start = 0
    looked = 0
    for line in text.splitlines(keepends=True):
        if looked < MAX_LINES_CHARS and _TRIGGER.search(line) is not None:
            looked += len(line)
            at = _skeleton(line, line_start, at, pieces, (sk, orig, width, marks), glued)
            pieces.append("\n")
            sk.append(at)
            orig.append(line_start + len(line))
            width.append(0)
            at += 1
        line_start += len(line)
    found = spans("".join(pieces))
    if not found:
        return text, 0
    out: list[str] = []
    done = replaced = 0
    for start, end, replacement in found:
        begin, finish = _origin(start, sk, orig, width)[0], _origin(end - 1, sk, orig, width)[1]
        disguised = bisect.bisect_left(marks, begin) != bisect.bisect_left(marks, finish)
        if begin < done or not (disguised or (not inside and begin in glued)):
            continue
        out.append(text[done:begin])
        out.append(replacement)
        done = finish
        replaced += 1  # only what is replaced here: a span plain redaction finds is counted there
    if not replaced:
        return text, 0
    out.append(text[done:])
    return "".join(out), replaced


def _origin(index: int, sk: list[int], orig: list[int], width: list[int]) -> tuple[int, int]:
    """The original characters skeleton character ``index`` stands for: (start, end)."""
    k = bisect.bisect_right(sk, index) - 1
    if width[k]:
        return orig[k], orig[k] + width[k]
    here = orig[k] + index - sk[k]
    return here, here + 1


def _skeleton(line: str, offset: int, at: int, pieces: list[str], maps: tuple[list[int], ...], glued: set[int]) -> int:
    """Append ``line``'s skeleton (starting at skeleton index ``at``); the next index."""
    sk, orig, width, marks = maps
    done = 0
    for match in _PIECE.finditer(line):
        if match.start() > done:
            pieces.append(line[done : match.start()])
            sk.append(at)
            orig.append(offset + done)
            width.append(0)
            at += match.start() - done
        done = match.end()
        kind = match.lastgroup
        if kind == "drop":
            marks.append(offset + match.start())
            continue
        piece = match.group()
        if kind == "wide" or piece[1] in "ux":
            marks.append(offset + match.start())
        if kind == "wide":
            char = chr(ord(piece) - 0xFEE0)
        elif piece[1] in "ux":
            code = int(piece[2:], 16)
            char = chr(code) if 0x20 < code < 0x7F else " "
        else:
            char = " "  # \n, \t, \" ...: a separator, as the character it stands for is
            glued.add(offset + match.end())
        pieces.append(char)
        sk.append(at)
        orig.append(offset + match.start())
        width.append(match.end() - match.start())
        at += 1
    if done < len(line):
        pieces.append(line[done:])
        sk.append(at)
        orig.append(offset + done)
        width.append(0)
        at += len(line) - done
    return at
