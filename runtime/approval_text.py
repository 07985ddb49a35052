"""What a person asked to approve a call reads: all of its arguments, every character visible.

An approval is only worth what the person sees, and the model chooses the arguments,
so it also chooses how they look: 600 spaces push ``; touch X`` past the end of what
is shown, a carriage return or an ANSI sequence rewrites the terminal line, U+202E
turns the rest of a line around, a zero-width space or a no-break space hides inside
a word. :func:`describe` shows the arguments so that none of that works:

- the whole text of every argument; only a run of more than
  :data:`LONGEST_RUN_SHOWN` spaces or tabs, and whitespace at the edge of a value or at
  the end of a line, is written as a counted marker (``⟨600 spaces⟩``);
- every control, format (bidi, zero-width), separator other than the plain space,
  private-use, unassigned or otherwise invisible character as a marker (``⟨ESC⟩``,
  ``⟨CR⟩``, ``⟨U+202E⟩``), explained in a legend at the end; so no character of the
  arguments reaches a terminal as a control sequence. The marker brackets themselves are
  marked when an argument contains them, so a marker is always this module's;
- a string of several lines as its lines, each after ``|`` (a line cannot pass for
  another argument), more than two empty lines in a row as a count;
- for a tool with a ``command_line``, each command the line runs, on a line of its own,
  as the policy split it, with non-ASCII characters marked in words that mix them with
  ASCII letters (a Cyrillic ``о`` in ``оrigin``).

Only a string whose shown text would exceed :data:`LONGEST_SHOWN` characters is
shortened: its beginning and end are shown with the count of characters left out, and
a warning comes first. The commands of a command line are always all shown.

The terminal approver and the MCP elicitation approver both use :func:`describe`, so
that what a person sees cannot differ between them.
"""

from __future__ import annotations

import json
import re
import shlex
import unicodedata
from collections.abc import Iterator, Mapping
from typing import Any

from runtime.policy.commands import split_cached
from runtime.records import Decision, ValidatedCall

#: Spaces and tabs in a row shown as they are; a longer run is written as a count.
LONGEST_RUN_SHOWN = 32
#: Characters of one string's shown text before its middle is left out.
LONGEST_SHOWN = 100_000
#: Kinds of marked characters the legend explains one by one.
_LEGEND_ENTRIES = 40

_OPEN, _CLOSE = "\u27e8", "\u27e9"  # ⟨ ⟩: only markers may contain them as they are
_NAMED = {
    0x00: ("NUL", "null character"),
    0x07: ("BEL", "bell"),
    0x08: ("BS", "backspace: moves the cursor back, so what follows overwrites what was shown"),
    0x09: ("TAB", "tab"),
    0x0A: ("LF", "line feed: a new line"),
    0x0B: ("VT", "vertical tab"),
    0x0C: ("FF", "form feed"),
    0x0D: ("CR", "carriage return: moves the cursor to the start of the line, so what follows overwrites it"),
    0x1B: ("ESC", "escape: starts a terminal control sequence that can move the cursor, erase or recolor text"),
    0x7F: ("DEL", "delete"),
}
_MARKED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"})
# Letters and symbols that draw as nothing (Hangul fillers, the Braille blank) and
# marks that change no letter but may change how a word is read (variation
# selectors, the combining grapheme joiner, invisible Khmer vowels).
_INVISIBLE = frozenset(
    [0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x2800, 0x3164, 0xFFA0, ord(_OPEN), ord(_CLOSE)]
    + list(range(0x180B, 0x1810))
    + list(range(0xFE00, 0xFE10))
    + list(range(0xE0100, 0xE01F0))
)
# One token: a run of spaces/tabs, a run of line feeds, one character that is not
# printable ASCII, or printable ASCII (bounded, so that shortening never splits a long token).
_TOKEN = re.compile(r"[ \t]+|\n+|[^\x20-\x7e\n]|[\x21-\x7e]{1,256}")
#: Line feeds in a row shown as they are; more are shown as a count of empty lines.
_MOST_LINE_FEEDS_SHOWN = 3
_NUMBERISH = re.compile(r"-?\d+(\.\d+)?([eE][+-]?\d+)?")


class _Legend:
    """The kinds of characters that were marked, in order of appearance."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}

    def add(self, marker: str, meaning: str) -> None:
        self.seen.setdefault(marker, meaning)

    def text(self) -> str | None:
        if not self.seen:
            return None
        entries = [f"  {marker} {meaning}" for marker, meaning in list(self.seen.items())[:_LEGEND_ENTRIES]]
        if len(self.seen) > _LEGEND_ENTRIES:
            entries.append(f"  and {len(self.seen) - _LEGEND_ENTRIES:,} more kinds of marked characters")
        return "Marked characters (the text holds them where their marker stands):\n" + "\n".join(entries)


def _marked(char: str, after_ascii: bool, all_non_ascii: bool) -> bool:
    code = ord(char)
    if code < 0x20 or code == 0x7F or code in _INVISIBLE or (all_non_ascii and code > 0x7F):
        return True
    category = unicodedata.category(char)
    if category in _MARKED_CATEGORIES:
        return True
    # A combining mark on an ASCII character changes how it reads (= with U+0338 shows as ≠).
    return category[0] == "M" and after_ascii


def _marker(char: str, legend: _Legend) -> str:
    code = ord(char)
    if code in _NAMED:
        short, meaning = _NAMED[code]
        marker = f"{_OPEN}{short}{_CLOSE}"
    else:
        marker = f"{_OPEN}U+{code:04X}{_CLOSE}"
        meaning = unicodedata.name(char, f"(no name; Unicode category {unicodedata.category(char)})")
    legend.add(marker, meaning)
    return marker


def _whitespace(run: str) -> str:
    if "\t" not in run:
        noun = "space" if len(run) == 1 else "spaces"
    elif " " not in run:
        noun = "tab" if len(run) == 1 else "tabs"
    else:
        noun = "spaces and tabs"
    return f"{_OPEN}{len(run):,} {noun}{_CLOSE}"


def _tokens(
    text: str, legend: _Legend, *, newline: str | None, all_non_ascii: bool = False
) -> Iterator[tuple[int, str]]:
    """``(characters of text, what is shown for them)`` for the whole of ``text``, in order.

    ``newline``: what a line feed is shown as (a line break and the next line's
    prefix); None: the text is shown on one line, its line feeds marked and the
    whitespace at its start counted too.
    """
    lines = newline is not None
    after_ascii = True  # the character before is ASCII or marked (a combining mark would change it)
    pending: tuple[str, int] | None = None  # a marked character, and how often it repeats
    for match in _TOKEN.finditer(text):
        token = match.group()
        if pending and token == pending[0]:
            pending = (token, pending[1] + 1)
            continue
        if pending:
            yield pending[1], _repeated(pending[0], pending[1], legend)
            pending = None
        if token[0] in " \t":
            end = match.end()
            edge = end == len(text) or text[end] == "\n" or (not lines and match.start() == 0)
            if edge or len(token) > LONGEST_RUN_SHOWN:
                yield len(token), _whitespace(token)
            else:
                yield len(token), token.replace("\t", _marker("\t", legend)) if "\t" in token else token
            after_ascii = True
        elif token[0] == "\n":
            if newline is None:
                shown = _repeated("\n", len(token), legend)
            elif len(token) <= _MOST_LINE_FEEDS_SHOWN:
                shown = newline * len(token)
            else:
                shown = f"{newline}{_OPEN}{len(token) - 1:,} empty lines{_CLOSE}{newline}"
            yield len(token), shown
            after_ascii = True
        elif len(token) == 1 and _marked(token, after_ascii, all_non_ascii):
            pending = (token, 1)
            after_ascii = True
        else:
            yield len(token), token
            after_ascii = token[-1].isascii()
    if pending:
        yield pending[1], _repeated(pending[0], pending[1], legend)


def _full(text: str, legend: _Legend, *, all_non_ascii: bool = False) -> str:
    """``text`` on one line, all of it (for names, reasons and the words of commands)."""
    return "".join(shown for _, shown in _tokens(text, legend, newline=None, all_non_ascii=all_non_ascii))


def _repeated(char: str, count: int, legend: _Legend) -> str:
    marker = _marker(char, legend)
    return marker if count == 1 else f"{marker[:-1]} \u00d7{count:,}{_CLOSE}"


def _shown(text: str, legend: _Legend, *, newline: str | None, limit: int) -> tuple[str, int]:
    """``text`` as shown (see :func:`_tokens`), and how many of its characters were left out (0: none)."""
    if len(text) <= limit:
        tokens = list(_tokens(text, legend, newline=newline))
        if sum(len(shown) for _, shown in tokens) <= limit:
            return "".join(shown for _, shown in tokens), 0
        head_tokens, tail_tokens = tokens, tokens
    else:  # only the two ends are looked at: their shown text fills the limit anyway
        window = min(limit, len(text) // 2)
        head_tokens = list(_tokens(text[:window], legend, newline=newline))
        tail_tokens = list(_tokens(text[-window:], legend, newline=newline))
    head, head_chars = _take(head_tokens, limit // 2)
    tail, tail_chars = _take(reversed(tail_tokens), limit // 2)
    left_out = len(text) - head_chars - tail_chars
    middle = f"{_OPEN}\u2026 {left_out:,} characters not shown here \u2026{_CLOSE}"
    return "".join(head) + middle + "".join(reversed(tail)), left_out


def _take(tokens: Any, budget: int) -> tuple[list[str], int]:
    taken: list[str] = []
    chars = size = 0
    for count, shown in tokens:
        if size + len(shown) > budget:
            break
        taken.append(shown)
        chars += count
        size += len(shown)
    return taken, chars


class _Writer:
    """Lays out the arguments as indented ``name: value`` lines."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.legend = _Legend()
        self.lines: list[str] = []
        self.shortened: list[tuple[str, int, int]] = []  # (which value, its length, characters left out)

    def name(self, key: Any) -> str:
        return _shown(str(key), self.legend, newline=None, limit=self.limit)[0]

    def value(self, prefix: str, value: Any, indent: str, where: str) -> None:
        """``value`` after ``prefix`` (nested values on lines indented past ``indent``);
        ``where`` names it (as shown) in a warning."""
        if isinstance(value, Mapping):
            self.lines.append(prefix + "{}" if not value else prefix.rstrip())
            for key, item in value.items():
                name = self.name(key)
                self.value(f"{indent}  {name}: ", item, indent + "  ", f"{where}.{name}")
        elif isinstance(value, (list, tuple)):
            self.lines.append(prefix + "[]" if not value else prefix.rstrip())
            for number, item in enumerate(value):
                self.value(f"{indent}  - ", item, indent + "    ", f"{where}[{number}]")
        elif isinstance(value, str):
            self.string(prefix, value, indent, where)
        else:  # a number, true, false or null (ASCII, control characters escaped)
            self.lines.append(prefix + json.dumps(value, ensure_ascii=True, default=repr))

    def string(self, prefix: str, value: str, indent: str, where: str) -> None:
        if not value:
            self.lines.append(prefix + f"{_OPEN}empty{_CLOSE}")
            return
        several = "\n" in value
        line_prefix = f"{indent}  | "
        text, left_out = _shown(value, self.legend, newline=f"\n{line_prefix}" if several else None, limit=self.limit)
        if left_out:
            self.shortened.append((f"`{where}`", len(value), left_out))
        if not several:
            # A text that reads as a number, true, false or null is quoted, so that it is
            # not taken for one.
            literal = value in ("true", "false", "null") or _NUMBERISH.fullmatch(value)
            self.lines.append(prefix + (f'"{text}"' if literal else text))
            return
        self.lines.append(prefix + f"{_OPEN}{value.count(chr(10)) + 1:,} lines{_CLOSE}")
        self.lines.append(line_prefix + text)


def _commands(name: str, line: str, legend: _Legend) -> list[str]:
    split = split_cached(line)
    count = len(split.commands)
    these = f"{count} command{'' if count == 1 else 's'}, one per line"
    these += " (as the policy split it; programs by their base name):"
    if split.problem:
        problem = _full(split.problem, legend)
        head = f"The command line `{name}` cannot be split with certainty ({problem}); more may run than these {these}"
    else:
        head = f"The command line `{name}` runs these {these}"
    width = len(str(count))
    numbered = (
        f"  {number:>{width}}. " + " ".join(_word(item, legend) for item in argv)
        for number, argv in enumerate(split.commands, 1)
    )
    return [head, *numbered]


def _word(item: str, legend: _Legend) -> str:
    # Non-ASCII characters in a word with ASCII letters may pass for them (Cyrillic о in оrigin).
    mixed = not item.isascii() and any(c.isascii() and c.isalpha() for c in item)
    return _full(shlex.quote(item), legend, all_non_ascii=mixed)


def describe(call: ValidatedCall, decision: Decision, *, markdown: bool = False, limit: int = LONGEST_SHOWN) -> str:
    """What a person approving ``call`` reads: why it asks, a warning for each value
    shortened, every argument, each command of a command line, and a legend of the
    marked characters (see the module docstring). ``markdown``: fence the arguments and
    commands for clients that render Markdown, so that nothing in them becomes markup.
    """
    writer = _Writer(limit)
    # A policy may word its reason from the arguments, so it is shown like one.
    why = decision.reason or "This call needs approval."
    reason, left_out = _shown(why, writer.legend, newline=None, limit=limit)
    if left_out:
        writer.shortened.append(("the reason", len(why), left_out))
    for key, value in call.args.items():
        name = writer.name(key)
        writer.value(f"  {name}: ", value, "  ", name)
    body = ["Arguments:", *(writer.lines or ["  (none)"])]
    line_arg = call.tool.spec.command_line
    line = call.args.get(line_arg) if line_arg else None
    if line_arg and isinstance(line, str):
        body += _commands(line_arg, line, writer.legend)
    legend = writer.legend.text()
    if legend:
        body.append(legend)
    warnings = [
        f"WARNING: {where} is {length:,} characters long; only its beginning and end are shown below "
        f"({left_out:,} characters in between are not). Decline unless you know what all of it holds."
        for where, length, left_out in writer.shortened
    ]
    text = "\n".join(body)
    if markdown:
        fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
        text = f"{fence}text\n{text}\n{fence}"
    return "\n".join([f"Why it asks: {reason}", *warnings, text])
