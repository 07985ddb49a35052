"""Command handlers for builtins that run text as commands or change how later text is
read: ``eval``, ``source``, ``trap``, ``compgen``/``complete``, the builtins that set
variables (``read``, ``printf -v``, ``declare`` ...), ``test``/``[``, ``alias``, ``hash``
and ``enable``."""

from __future__ import annotations

from runtime.policy.shell.expansions import PURE_ARITH, arith_problem, fixed, has_brace, has_glob
from runtime.policy.shell.options import Options, argv_of, scan_options
from runtime.policy.shell.record import Context, Handler
from runtime.policy.shell.variables import check_names, check_set_names, check_test_operands, check_variable
from runtime.policy.shell.words import Word, short


def _eval(name: str, words: list[Word], ctx: Context) -> None:
    ctx.problem(f"{name} runs its arguments as a new command line")
    ctx.emit_words(name, words)
    arguments = words[2:] if len(words) > 1 and words[1].value == "--" else words[1:]
    ctx.parse_line(" ".join(w.value for w in arguments))


def _source(name: str, words: list[Word], ctx: Context) -> None:
    target = words[1].value if len(words) > 1 else ""
    ctx.problem(f"{name} runs the commands in a file ({short(target)}), which are not checked")
    ctx.emit_words(name, words)


def _trap(name: str, words: list[Word], ctx: Context) -> None:
    """``trap ACTION SIGNAL...``: ACTION is a command line run later."""
    ctx.emit_words(name, words)
    arguments = words[1:]
    if arguments and arguments[0].value == "--":
        arguments = arguments[1:]
    if len(arguments) < 2 or arguments[0].value in ("", "-") or arguments[0].value.startswith("-"):
        return
    action = arguments[0]
    if not fixed(action):
        ctx.problem(f"the command trap registers is only known at run time ({short(action.value)})")
    ctx.parse_line(action.value)


# The options of compgen and complete that take a value (-V is bash 5.3's output variable).
_COMPLETION_VALUES = "oAGWFCXPSV"


def _completion(name: str, words: list[Word], ctx: Context) -> None:
    """``compgen`` and ``complete``: ``-C`` runs a command line, ``-W`` expands a
    wordlist again, ``-F`` calls a function. ``complete`` only registers them, to run
    when a completion is asked for, later."""
    ctx.emit_words(name, words)
    found: list[tuple[str, Word]] = []  # (option letter, value) of the options that take one
    options_unknown = False
    i, count = 1, len(words)
    while i < count:
        word = words[i]
        value = word.value
        # An expansion or a glob here (the first operand included) can become options.
        options_unknown = options_unknown or not fixed(word)
        if value == "--":
            i += 1
            break
        if len(value) < 2 or value[0] not in "-+":
            break
        i += 1
        for j in range(1, len(value)):
            letter = value[j]
            if letter not in _COMPLETION_VALUES:
                continue
            if j + 1 < len(value):
                given = Word(value[j + 1 :], word.plain[j + 1 :], word.quoted, word.expanded, word.split)
            elif i < count:
                given = words[i]
                i += 1
                # A quoted expansion stays one word; an unquoted one or a glob can become more.
                options_unknown = options_unknown or given.split or has_glob(given) or has_brace(given)
            else:
                break
            found.append((letter, given))
            break
    if options_unknown:
        ctx.problem(
            f"the options of {name} are only known at run time, and -C, -F or -W would run code "
            f"({short(' '.join(argv_of(name, words)))})"
        )
    registers = name != "compgen"
    for letter, given in found:
        if letter == "F":
            ctx.problem(
                f"{name} -F {short(given.value, 30)} calls a shell function, whose commands are not visible here"
            )
        elif letter == "V":
            check_set_names(name, [given.value], ctx)
        elif letter == "C":
            if not fixed(given):
                ctx.problem(f"the command line {name} -C runs is only known at run time ({short(given.value)})")
            if registers:
                ctx.problem(f"{name} -C registers a command line that runs later, at completion time")
                ctx.parse_line(given.value)
            else:
                # bash runs the command line with the words "compgen", the word and "" appended.
                completed = words[i].value if i < count else ""
                ctx.parse_line(f"{given.value} 'compgen' {_single_quoted(completed)} ''")
        elif letter == "W":
            if not fixed(given):
                ctx.problem(
                    f"the wordlist of {name} -W is only known at run time, and its expansions run when it is used "
                    f"({short(given.value)})"
                )
            elif registers and ("$" in given.value or "`" in given.value):
                ctx.problem(f"{name} -W registers a wordlist whose expansions run later, at completion time")
            ctx.scan_expansions(given.value)  # the wordlist is expanded (again) when it is used


def _single_quoted(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


_READ = Options(short_values="adinNptu")


_MAPFILE = Options(short_values="dnOsuCc")


def _variable_builtin(name: str, words: list[Word], ctx: Context) -> None:
    """Builtins that take variable names: a name with a subscript can run commands,
    and some names make programs load code when they are set."""
    ctx.emit_words(name, words)
    if name == "read":
        i, seen = scan_options(words, 1, _READ)
        check_set_names(name, [w.value for w in words[i:]] + [v or "" for o, v in seen if o == "-a"], ctx)
    elif name == "printf":
        _, seen = scan_options(words, 1, Options(short_values="v"))
        check_set_names(name, [v or "" for o, v in seen if o == "-v"], ctx)
    elif name in ("mapfile", "readarray"):
        i, seen = scan_options(words, 1, _MAPFILE)
        if any(o == "-C" for o, _ in seen):
            ctx.problem(f"{name} -C runs a callback command line")
        check_set_names(name, [w.value for w in words[i:]], ctx)
    elif name == "unset":
        i, _ = scan_options(words, 1, Options())
        check_names(name, [w.value for w in words[i:]], ctx)
    elif name == "let":
        for word in words[1:]:
            if not PURE_ARITH.fullmatch(word.value):
                ctx.problem(arith_problem(word.value))
    elif name == "getopts":
        check_set_names(name, [w.value for w in words[2:3]], ctx)
    elif name == "wait":
        _, seen = scan_options(words, 1, Options(short_values="p"))
        check_set_names(name, [v or "" for o, v in seen if o == "-p"], ctx)
    else:
        _declaration(name, words, ctx)


def _declaration(name: str, words: list[Word], ctx: Context) -> None:
    """declare, typeset, local, export, readonly.

    ``-i`` is a problem: every later assignment to an integer variable, in whatever
    form, is arithmetic, which runs the commands in an array subscript of the value
    (``declare -i n; n='a[$(rm x)]'``). So is ``-n``: assignments to a name reference
    write to the variable it names, which can be one that loads code (``PATH``).
    """
    for word in words[1:]:
        value = word.value
        if value[:1] in ("-", "+") and len(value) > 1:
            if word.expanded:
                ctx.problem(
                    f"the options of {name} are only known at run time ({short(value)}), and -i or -n would change "
                    "what later assignments do"
                )
            elif value[0] == "-" and "i" in value:
                ctx.problem(
                    f"{name} {value} gives a variable the integer attribute: every later assignment to it is "
                    "arithmetic, which can run commands through an array subscript"
                )
            elif value[0] == "-" and "n" in value:
                ctx.problem(f"{name} {value} makes a name reference: later assignments to it write to another variable")
            continue
        variable, equals, assigned = value.partition("=")
        variable = variable.removesuffix("+")
        check_names(name, [variable], ctx)
        if equals:
            check_variable(variable.partition("[")[0], assigned, not word.expanded, ctx)


def _test(name: str, words: list[Word], ctx: Context) -> None:
    ctx.emit_words(name, words)
    check_test_operands(name, words[1:], ctx)


def _shell_state(name: str, words: list[Word], ctx: Context) -> None:
    """Builtins that can make a later command name run something else."""
    ctx.emit_words(name, words)
    options = "".join(w.value[1:] for w in words[1:] if w.value.startswith("-"))
    if name == "alias" and any("=" in w.value for w in words[1:]):
        ctx.problem("alias defines a command name that runs other commands")
    elif name == "hash" and "p" in options:
        ctx.problem("hash -p makes a command name run another program")
    elif name == "enable" and "f" in options:
        ctx.problem("enable -f loads a builtin from a shared library")


#: The handlers of this module, by command name.
BUILTINS: dict[str, Handler] = {
    "eval": _eval,
    "source": _source,
    ".": _source,
    "trap": _trap,
    "compgen": _completion,
    "complete": _completion,
    "read": _variable_builtin,
    "printf": _variable_builtin,
    "mapfile": _variable_builtin,
    "readarray": _variable_builtin,
    "unset": _variable_builtin,
    "let": _variable_builtin,
    "getopts": _variable_builtin,
    "wait": _variable_builtin,
    "declare": _variable_builtin,
    "typeset": _variable_builtin,
    "local": _variable_builtin,
    "export": _variable_builtin,
    "readonly": _variable_builtin,
    "test": _test,
    "[": _test,
    "alias": _shell_state,
    "hash": _shell_state,
    "enable": _shell_state,
}
