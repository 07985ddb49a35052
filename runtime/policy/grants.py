"""Session-scoped approvals: "allow this for the rest of the session".

When an approver answers with ``scope="session"``, the tool (optionally narrowed by
an argument pattern) is granted for that session, and later calls that would be put
to the approver again run without asking. A grant only ever turns an *ask* into an
allow: deny rules still win, and critical-risk tools are asked about every time.

Argument patterns map argument names to globs (``{"path": "src/*"}``) matched
against the argument's text, path-like text normalised first (``*`` stays within a
path component, ``**`` crosses them); for the ``command_line`` argument of a command-line
tool the glob is a command pattern (see :func:`runtime.policy.shell.command_matches`)
that every command of the line must match, so a grant for ``git status *`` does not
cover ``git status; rm -rf /``.
"""

from __future__ import annotations

import functools
import posixpath
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from runtime.config.models import Risk
from runtime.policy.commands import split_cached
from runtime.policy.shell import command_matches
from runtime.records import ValidatedCall


@dataclass(frozen=True, slots=True)
class Grant:
    """A session-scoped allow for ``tool`` (a tool key).

    It covers only calls that would be asked about for the same reason (``rule``:
    the ask rule, or None for the mode's default), so an explicit ask rule elsewhere
    still asks. ``pattern`` narrows it by arguments; for a command-line tool granted
    without a pattern, ``commands`` holds the program names of the approved line and
    a later line is covered only if it can be judged with certainty and runs nothing
    else.
    """

    tool: str
    pattern: Mapping[str, str] | None = None
    rule: str | None = None
    commands: frozenset[str] | None = None

    def covers(self, call: ValidatedCall, rule: str | None) -> bool:
        """Whether ``call``, asked about because of ``rule``, falls under this grant."""
        if call.tool.key != self.tool or rule != self.rule:
            return False
        line_arg = call.tool.spec.command_line
        if self.commands is not None:
            line = split_cached(_text(call.args.get(line_arg or "")))
            if not line.certain or not line.commands or any(argv[0] not in self.commands for argv in line.commands):
                return False
        for name, glob in (self.pattern or {}).items():
            value = call.args.get(name)
            if value is None:
                return False
            text = _text(value)
            if name == line_arg:
                line = split_cached(text)
                if not line.certain or not line.commands or not all(command_matches(argv, glob) for argv in line.commands):
                    return False
            else:
                normal = _normalised(text)
                if normal is None or not _path_glob(glob).fullmatch(normal):
                    return False
        return True


def _text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def _normalised(text: str) -> str | None:
    """Path-like text in normal form, so ``src/../Makefile`` is not taken for ``src/*``;
    None for text that climbs out (``../x``): no grant covers it."""
    if "/" not in text and text not in (".", ".."):
        return text
    normal = posixpath.normpath(text)
    if normal == ".." or normal.startswith("../"):
        return None
    return normal


@functools.lru_cache(maxsize=1024)
def _path_glob(glob: str) -> re.Pattern[str]:
    """A glob as a regex: ``*`` and ``?`` stay within one path component, ``**`` crosses them."""
    out = []
    index = 0
    while index < len(glob):
        if glob.startswith("**", index):
            out.append(".*")
            index += 2
        elif glob[index] == "*":
            out.append("[^/]*")
            index += 1
        elif glob[index] == "?":
            out.append("[^/]")
            index += 1
        else:
            out.append(re.escape(glob[index]))
            index += 1
    return re.compile("".join(out), re.DOTALL)


class SessionGrants:
    """Grants per session, thread-safe, bounded (least recently used sessions go first)."""

    def __init__(self, max_sessions: int = 10_000, max_grants_per_session: int = 200) -> None:
        self._lock = threading.Lock()
        self._by_session: OrderedDict[str, list[Grant]] = OrderedDict()
        self._max_sessions = max_sessions
        self._max_grants = max_grants_per_session

    def __bool__(self) -> bool:
        return bool(self._by_session)

    def add(self, session_id: str, call: ValidatedCall, pattern: Mapping[str, str] | None = None, rule: str | None = None) -> Grant | None:
        """Grant ``call``'s tool for the session, for calls asked about because of
        ``rule``; None for tools that cannot be granted (critical risk)."""
        if call.tool.spec.risk is Risk.critical:
            return None
        commands = None
        line_arg = call.tool.spec.command_line
        if line_arg and not (pattern and line_arg in pattern):
            line = split_cached(_text(call.args.get(line_arg, "")))
            if not line.certain or not line.commands:
                return None  # an uncertain line is approved once, never for the session
            commands = frozenset(argv[0] for argv in line.commands)
        grant = Grant(call.tool.key, MappingProxyType(dict(pattern)) if pattern else None, rule, commands)
        with self._lock:
            grants = self._by_session.setdefault(session_id, [])
            self._by_session.move_to_end(session_id)
            if grant not in grants:
                grants.append(grant)
                del grants[: -self._max_grants]
            while len(self._by_session) > self._max_sessions:
                self._by_session.popitem(last=False)
        return grant

    def covering(self, session_id: str, call: ValidatedCall, rule: str | None = None) -> Grant | None:
        """The grant that covers ``call`` (asked about because of ``rule``) in this session, if any."""
        if call.tool.spec.risk is Risk.critical:
            return None
        with self._lock:
            grants = tuple(self._by_session.get(session_id, ()))
        return next((g for g in grants if g.covers(call, rule)), None)

    def of(self, session_id: str) -> tuple[Grant, ...]:
        """The session's grants, oldest first."""
        with self._lock:
            return tuple(self._by_session.get(session_id, ()))

    def forget(self, session_id: str) -> None:
        """Drop every grant of the session (e.g. when it ends)."""
        with self._lock:
            self._by_session.pop(session_id, None)


def describe(pattern: Mapping[str, Any] | None) -> str:
    """A grant's pattern in words, for decision reasons."""
    if not pattern:
        return "any arguments"
    return ", ".join(f"{name} matching `{glob}`" for name, glob in pattern.items())
