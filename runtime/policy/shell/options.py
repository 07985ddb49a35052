"""Scanning a wrapper's or builtin's options: which take a value, where the operands start."""

from __future__ import annotations

import re
from dataclasses import dataclass

from runtime.policy.shell.words import Word


@dataclass(frozen=True, slots=True)
class Options:
    """Which options of a wrapper take a value (so the command starts after it)."""

    short_values: str = ""  # "-u USER" or "-uUSER"
    long_values: frozenset[str] = frozenset()  # "--user USER" ("--user=USER" always works)
    short_optional: str = ""  # "-e[EOF]": a value only when attached
    numbers: bool = False  # "-5" is an option (nice)


_NUMBER_OPTION = re.compile(r"-[+-]?[0-9]+")


def _abbreviates(option: str, long_values: frozenset[str]) -> bool:
    return len(option) > 3 and any(full.startswith(option) for full in long_values)


def scan_options(words: list[Word], start: int, spec: Options) -> tuple[int, list[tuple[str, str | None]]]:
    """Skip the options at ``words[start:]``: the index of the first operand, and the options seen."""
    seen: list[tuple[str, str | None]] = []
    i, count = start, len(words)
    while i < count:
        value = words[i].value
        if value == "--":
            return i + 1, seen
        if value.startswith("--"):
            option, equals, attached = value.partition("=")
            if equals:
                seen.append((option, attached))
                i += 1
            elif i + 1 < count and (option in spec.long_values or _abbreviates(option, spec.long_values)):
                # getopt_long takes any unambiguous prefix (--out x is --output x).
                full = (
                    option
                    if option in spec.long_values
                    else next(v for v in sorted(spec.long_values) if v.startswith(option))
                )
                seen.append((full, words[i + 1].value))
                i += 2
            else:
                seen.append((option, None))
                i += 1
            continue
        if len(value) < 2 or value[0] != "-":
            break
        i += 1
        if spec.numbers and _NUMBER_OPTION.fullmatch(value):
            seen.append(("-n", value[1:]))
            continue
        for j in range(1, len(value)):
            letter = value[j]
            if letter in spec.short_values:
                given: str | None = value[j + 1 :]
                if not given and i < count:
                    given = words[i].value  # the value is the next word
                    i += 1
                seen.append(("-" + letter, given or None))
                break
            if letter in spec.short_optional:
                seen.append(("-" + letter, value[j + 1 :] or None))
                break
            seen.append(("-" + letter, None))
    return i, seen


def argv_of(name: str, words: list[Word]) -> list[str]:
    return [name, *(w.value for w in words[1:])]
