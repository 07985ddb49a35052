"""The judge: resolves one simple command to the commands it runs, unwrapping wrappers
and reading the text builtins run, through the handler tables."""

from __future__ import annotations

import re

from runtime.policy.shell.builtins import BUILTINS
from runtime.policy.shell.expansions import PURE_ARITH, arith_problem, has_brace, has_glob
from runtime.policy.shell.record import Context, Handler
from runtime.policy.shell.variables import check_variable
from runtime.policy.shell.words import ASSIGNMENT, Word, basename, short
from runtime.policy.shell.wrappers import WRAPPERS

_HANDLERS: dict[str, Handler] = {**WRAPPERS, **BUILTINS}


def finish(words: list[Word], assignments: list[Word], ctx: Context) -> None:
    for assignment in assignments:
        match = ASSIGNMENT.match(assignment.value)
        if match is not None:
            check_variable(match.group(1), assignment.value[match.end() :], not assignment.expanded, ctx)
        subscript = re.match(r"[A-Za-z_][A-Za-z0-9_]*\[([^\]]*)\]", assignment.value)
        if subscript is not None and not PURE_ARITH.fullmatch(subscript.group(1)):
            ctx.problem(arith_problem(subscript.group(1)))
    if words:
        resolve(words, ctx)


def resolve(words: list[Word], ctx: Context) -> None:
    """List the command ``words`` runs, unwrapping wrappers."""
    head = words[0]
    if not _name_known(head, ctx):
        ctx.emit_words(None, words)
        return
    name = basename(head.value)
    handler = _HANDLERS.get(name)
    if handler is None:
        ctx.emit_words(name, words)
    else:
        handler(name, words, ctx)


def _name_known(word: Word, ctx: Context) -> bool:
    if word.expanded:
        ctx.problem(
            f"the command name comes from an expansion ({short(word.value)}), so the command is only known at run time"
        )
        return False
    if has_glob(word):
        ctx.problem(
            f"the command name is a glob pattern ({short(word.value)}), so the command depends on the files present"
        )
        return False
    if has_brace(word):
        ctx.problem(
            f"the command name uses brace expansion ({short(word.value)}), which can turn it into another command"
        )
        return False
    return True
