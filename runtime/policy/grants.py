"""Session-scoped approvals: "allow this for the rest of the session".

When an approver answers with ``scope="session"``, the tool (optionally narrowed by
an argument pattern) is granted for that session, and later calls that would be put
to the approver again run without asking. A grant only ever turns an *ask* into an
allow: deny rules still win, and critical-risk tools are asked about every time.

Argument patterns map argument names to globs (``{"path": "src/*"}``) matched
against the argument's text, path-like text normalised first, in toolrt's one path-glob
dialect (:mod:`runtime.workspace.globs`: ``*`` stays within a path component, ``**``
is zero or more whole components, ``/etc/*`` matches only absolute text); for the
``command_line`` argument of a command-line tool the glob is a command pattern (see
:func:`runtime.policy.shell.command_matches`) that must cover every command of the line
the way an allow rule does, so a grant for ``git status *`` covers neither
``git status; rm -rf /`` nor ``git status --output=x``.

A command line granted without a pattern covers later lines that run the same
programs with the same write options (:mod:`runtime.policy.programs`), and nothing
else: a grant for ``git status --short`` does not cover ``git diff --output=x``. Lines
that run code through an option (``git -c``, ``python -c``, ``sed e``), hold a word
only known at run time, or name a path outside the workspace are approved once, never
for the session, and no grant covers them.
"""

from __future__ import annotations

import functools
import posixpath
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from runtime.config.models import Risk
from runtime.policy import programs
from runtime.policy.commands import CommandPatterns, split_cached
from runtime.policy.placed import PlacedLine, place_static
from runtime.records import ValidatedCall
from runtime.workspace.errors import GlobError
from runtime.workspace.globs import Glob, compile_glob

#: A command's program (with its subcommand: ``git push``) and the write options it uses:
#: what a session grant remembers.
Signature = tuple[str, frozenset[str]]


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
    commands: frozenset[Signature] | None = None

    def covers(self, call: ValidatedCall, rule: str | None) -> bool:
        """Whether ``call``, asked about because of ``rule``, falls under this grant."""
        if call.tool.key != self.tool or rule != self.rule:
            return False
        line_arg = call.tool.spec.command_line
        if line_arg:
            line = _placed(call, line_arg)
            if _ungrantable(line) is not None:
                return False
            if self.commands is not None and not _signatures(line) <= self.commands:
                return False
        for name, glob in (self.pattern or {}).items():
            value = call.args.get(name)
            if value is None:
                return False
            text = _text(value)
            if name == line_arg:
                patterns = _command_patterns(glob)
                if not all(patterns.covers(command) for command in _placed(call, name).commands if command.own):
                    return False
            else:
                normal = _normalised(text)
                compiled = _path_glob(glob) if isinstance(glob, str) else None
                if normal is None or compiled is None or not compiled.matches(normal):
                    return False
        return True


def _text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def _placed(call: ValidatedCall, line_arg: str) -> PlacedLine:
    text = _text(call.args.get(line_arg, ""))
    cwd = call.args.get("cwd")
    return place_static(split_cached(text), cwd if isinstance(cwd, str) and cwd else ".", text)


def _ungrantable(line: PlacedLine) -> str | None:
    """Why no session grant may cover ``line`` (or be made from it), else None."""
    if not line.certain or not line.commands:
        return "the command line cannot be judged with certainty"
    if line.outside:
        return "the command line names a path outside the workspace"
    for command in line.commands:
        if any(need < 0 for need in command.guards.values()):
            return "a word of the command line is only known when it runs"
        if any(access.kind == programs.CODE for access in programs.accesses(command.argv)):
            return f"`{' '.join(command.argv)[:80]}` runs code through an option"
    return None


def _signatures(line: PlacedLine) -> frozenset[Signature]:
    """Each command's program with the write options it uses."""
    found = set()
    for command in line.commands:
        if not command.own:
            continue
        written = frozenset(a.what for a in programs.accesses(command.argv) if a.kind in programs.GUARDED)
        found.add((_program(command.argv), written))
    return frozenset(found)


# Programs whose first operand is a command of their own (git push, npm install): a
# grant names the two together.
_WITH_SUBCOMMANDS = frozenset(
    {
        "git",
        "npm",
        "pnpm",
        "yarn",
        "pip",
        "pip3",
        "docker",
        "kubectl",
        "cargo",
        "go",
        "gh",
        "helm",
        "terraform",
        "poetry",
        "uv",
    }
)


def _program(argv: tuple[str, ...]) -> str:
    """The program a command runs, with its subcommand where it has them (``git push``;
    ``git -C src push`` too: the values of global options are skipped)."""
    if argv[0] in _WITH_SUBCOMMANDS:
        return " ".join((argv[0], *programs.subcommand(argv)))
    return argv[0]


@functools.lru_cache(maxsize=256)
def _command_patterns(glob: str) -> CommandPatterns:
    return CommandPatterns((glob,))


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
def _path_glob(glob: str) -> Glob | None:
    """``glob`` compiled once per pattern; None (covers nothing) when it is not a valid glob."""
    try:
        return compile_glob(glob, relative=False)
    except GlobError:
        return None


class SessionGrants:
    """Grants per session, thread-safe, bounded (least recently used sessions go first)."""

    def __init__(self, max_sessions: int = 10_000, max_grants_per_session: int = 200) -> None:
        self._lock = threading.Lock()
        self._by_session: OrderedDict[str, list[Grant]] = OrderedDict()
        self._max_sessions = max_sessions
        self._max_grants = max_grants_per_session

    def __bool__(self) -> bool:
        return bool(self._by_session)

    def add(
        self, session_id: str, call: ValidatedCall, pattern: Mapping[str, str] | None = None, rule: str | None = None
    ) -> Grant | None:
        """Grant ``call``'s tool for the session, for calls asked about because of
        ``rule``; None for tools that cannot be granted (critical risk)."""
        if call.tool.spec.risk is Risk.critical:
            return None
        commands = None
        line_arg = call.tool.spec.command_line
        if line_arg:
            line = _placed(call, line_arg)
            if _ungrantable(line) is not None:
                return None  # approved once, never for the session
            if not (pattern and line_arg in pattern):
                commands = _signatures(line)
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
