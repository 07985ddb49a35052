"""A command line as allow, ask and deny rules judge it, once placed in its workspace
(:func:`runtime.policy.placed.place`): each command with the items an allow rule must
not cover with a wildcard, and why the whole line may be denied or asked."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

#: Guard values (see :attr:`PlacedCommand.guards`).
UNKNOWN = -2  # no allow rule covers the item
LITERAL = -1  # only a pattern word without wildcards covers the item


@dataclass(frozen=True, slots=True)
class PlacedCommand:
    """One command as rules judge it.

    ``guards`` maps argv indices to what an allow pattern word needs to cover that item:
    :data:`UNKNOWN` (nothing covers it), :data:`LITERAL` (a word without wildcards), or
    a number of leading characters it must spell out. ``own``: allow rules must cover it
    (False for what only deny and ask rules look at: a glob command whose expansion
    stands in for it, the files an option reads or writes). ``notes`` say why items are
    guarded, in words.
    """

    argv: tuple[str, ...]
    guards: Mapping[int, int] = field(default_factory=dict)
    own: bool = True
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PlacedLine:
    """A command line's commands as rules judge them; ``problem`` as in CommandLine;
    ``protected``: why the line touches toolrt's own files (a denial), else None;
    ``outside``: the items that name paths outside the workspace; ``holding``: folders
    the line writes that hold toolrt's own files (``rm -rf .``): asked, in every mode."""

    commands: tuple[PlacedCommand, ...]
    problem: str | None = None
    protected: str | None = None
    outside: tuple[str, ...] = ()
    holding: tuple[str, ...] = ()  # written folders that hold toolrt's own files: a person approves
    # Paths that may go through a link an earlier command unpacks or checks out: asked, in every mode.
    linked: tuple[str, ...] = ()
    # Derived once, read by every allow rule: is the line certain; the commands allow
    # rules must cover, (index, argv) of those without guards and (index, command) of the rest.
    certain: bool = field(init=False)
    own_plain: tuple[tuple[int, tuple[str, ...]], ...] = field(init=False)
    own_guarded: tuple[tuple[int, PlacedCommand], ...] = field(init=False)
    # Why a whole-tool allow rule cannot cover the line, or None when it can: a word only
    # known at run time, or a path outside the workspace, is covered by no wildcard, and
    # a rule without ``commands`` is one.
    unjudged: str | None = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "certain", self.problem is None)
        object.__setattr__(self, "unjudged", _unjudged(self))
        object.__setattr__(
            self, "own_plain", tuple((i, c.argv) for i, c in enumerate(self.commands) if c.own and not c.guards)
        )
        object.__setattr__(
            self, "own_guarded", tuple((i, c) for i, c in enumerate(self.commands) if c.own and c.guards)
        )

    @property
    def argvs(self) -> tuple[tuple[str, ...], ...]:
        """Every command's argv, as CEL rules see them (``commands``)."""
        return tuple(c.argv for c in self.commands)


def _unjudged(line: PlacedLine) -> str | None:
    if line.problem is not None:
        return f"the command line cannot be judged with certainty ({line.problem})"
    for command in line.commands:
        if command.own and any(need < 0 for need in command.guards.values()):
            return (
                command.notes[0]
                if command.notes
                else f"`{' '.join(command.argv)[:80]}` cannot be judged before it runs"
            )
    return None
