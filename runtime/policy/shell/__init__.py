"""Split a bash command line into the simple commands it would run.

An agent's shell tool receives a whole command line (``ls && rm -rf /``), while
permission rules judge one command at a time. :func:`split_command_line` lists every
simple command the line would start, including those hidden in substitutions,
subshells, ``bash -c`` scripts, wrappers (``sudo``, ``env``, ``xargs`` ...) and
``find -exec``; :func:`command_matches` is the pattern language rules match them with.
It fails closed: :attr:`CommandLine.problem` is set whenever the split cannot be sure it
saw every command, and callers then treat deny and ask rules as matching and allow
rules as not covering. The full contract is docs/command-lines.md.

The layers, each importing only those above it in this list:

- :mod:`.words`: a word after quote removal, ``$'...'`` decoding, shared limits;
- :mod:`.expansions`: glob, brace, extglob and tilde shapes, arithmetic;
- :mod:`.record`: the result, the sink, the context handlers work in;
- :mod:`.variables`: the tables of variables that run or load code or name files;
- :mod:`.scanner`, :mod:`.substitutions`, :mod:`.syntax`: the parser (words and quotes,
  ``$``-forms, then lists, pipelines, redirections and compound commands), which hands
  each simple command to an injected judge;
- :mod:`.options`, :mod:`.wrappers`, :mod:`.builtins`: the command handlers, which
  split nested text through their context, never through the parser;
- :mod:`.judge`: the handler table; this module wires the parser to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase

from runtime.policy.shell.judge import finish
from runtime.policy.shell.record import Abort, CommandLine, Sink
from runtime.policy.shell.syntax import Parser
from runtime.policy.shell.words import GLOB, LITERAL, MAX_DEPTH, MAX_LINE_LENGTH, RUNTIME, XARGS_INPUT

_MOVES = (("cd",), ("pushd",), ("popd",))

__all__ = [
    "GLOB",
    "LITERAL",
    "MAX_DEPTH",
    "MAX_LINE_LENGTH",
    "RUNTIME",
    "XARGS_INPUT",
    "CommandLine",
    "command_matches",
    "split_command_line",
]


def split_command_line(line: str) -> CommandLine:
    """Split ``line`` into the simple commands a POSIX shell (bash) would run.

    Never raises: anything that cannot be read with certainty (including a defect in
    this package) sets ``problem`` instead. The contract is docs/command-lines.md.
    """
    if not isinstance(line, str):
        return CommandLine((), "the command line is not text")
    if len(line) > MAX_LINE_LENGTH:
        return CommandLine(
            (), f"the command line is too long to check ({len(line)} characters; the limit is {MAX_LINE_LENGTH})"
        )
    sink = Sink()
    try:
        Parser(line, sink, 0, finish).parse()
    except Abort:
        pass  # the reason is already recorded in the sink
    except RecursionError:
        sink.problem("the command line nests too deeply to check")
    except Exception as err:  # noqa: BLE001 - a parser defect must fail closed, never let a line through unjudged
        sink.problem(f"the command line could not be checked (internal error: {type(err).__name__})")
    if sink.loops and any(argv[:1] in _MOVES for argv in sink.commands):
        # Each round starts where the last one ended: `cd src` twice is src/src, which the
        # list of commands shows once.
        sink.problem("a loop changes folders (cd, pushd, popd): where each round runs is only known at run time")
    # `enable -n cd` turns the builtin off: `cd` may then be a program that moves nothing.
    moved_builtin = any(argv[:1] == ("enable",) for argv in sink.commands)
    unsure = sink.structured or moved_builtin or all(gate < 0 for gate in sink.gates)
    gates = () if unsure else tuple(sink.gates)
    return CommandLine(tuple(sink.commands), sink.summary(), tuple(sink.shapes), tuple(sink.braces.items()), gates)


def command_matches(argv: Sequence[str], pattern: str) -> bool:
    """Whether a command's argv matches a rule's command pattern.

    The pattern is split on whitespace into words. Each word matches exactly one argv
    item, with fnmatch globs (``*``, ``?``, ``[seq]``), case-sensitively; ``*`` inside
    a word matches any characters, ``/`` included. A final word that is a lone ``*``
    matches zero or more remaining items. Otherwise the pattern and argv must have the
    same length. The first word is compared with ``argv[0]`` as split_command_line
    gives it, that is a basename (write ``rm``, not ``/bin/rm``). A blank pattern
    matches nothing.

    - ``git push *`` matches ``git push`` and ``git push origin main``, not ``git pull``;
    - ``rm *`` matches every rm command; ``ls`` matches only a bare ``ls``;
    - ``npm run test*`` matches ``npm run test:unit`` (exactly three items).
    """
    words = pattern.split()
    if not words:
        return False
    if words[-1] == "*":
        fixed = words[:-1]
        if len(argv) < len(fixed):
            return False
    else:
        fixed = words
        if len(argv) != len(fixed):
            return False
    return all(fnmatchcase(item, word) for item, word in zip(argv, fixed, strict=False))
