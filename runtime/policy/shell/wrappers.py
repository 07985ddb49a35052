"""Command handlers for wrappers: commands that run another command (``env``, ``sudo``,
``su``, ``timeout``, ``nice``, ``time``, ``xargs``, ``watch``, ``find -exec``, ``sh -c``
...). The command a wrapper runs is judged through its :class:`Context`, never by
importing the parser."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase

from runtime.policy.shell.expansions import fixed, has_brace, has_glob, quoted_assignment
from runtime.policy.shell.options import Options, argv_of, scan_options
from runtime.policy.shell.record import POSIX_SHELLS, SHELLS, Context, Handler
from runtime.policy.shell.variables import check_variable
from runtime.policy.shell.words import (
    ASSIGNMENT,
    LITERAL,
    MAX_DEPTH,
    RUNTIME,
    XARGS_INPUT,
    Word,
    basename,
    runtime_word,
    short,
)


def _wrapped(
    name: str, words: list[Word], i: int, ctx: Context, *, visible: bool = False, extra: Sequence[Word] = ()
) -> None:
    """The wrapper ``words`` runs ``words[i:]``: list that command (and the wrapper if visible)."""
    if visible or i >= len(words):
        ctx.emit_words(name, words)
    if i >= len(words):
        return
    if not all(fixed(w) or quoted_assignment(w) for w in words[1:i]):
        ctx.problem(
            f"the options of {name} are only known at run time, so the command it runs is unclear "
            f"({short(' '.join(argv_of(name, words)))})"
        )
    inner = ctx.deeper()
    if inner is not None:
        inner.run([*words[i:], *extra])


_NO_OPTIONS = Options()


def _emit_files(seen: list[tuple[str, str | None]], files: Mapping[str, str], ctx: Context) -> None:
    """A wrapper's options that name a file it writes (``time -o``) or reads (``xargs -a``):
    listed like redirections."""
    for option, value in seen:
        direction = files.get(option)
        if direction is None and option.startswith("--") and len(option) > 3:
            direction = next((d for key, d in files.items() if key.startswith(option)), None)
        if direction is not None and value:
            ctx.emit((direction, value), "l" + (RUNTIME if value.startswith("~") else LITERAL))


def _wrapper(
    spec: Options = _NO_OPTIONS,
    *,
    operands: int = 0,
    no_command: frozenset[str] = frozenset(),
    visible: bool = False,
    files: Mapping[str, str] | None = None,
) -> Handler:
    """A handler for a wrapper: options, ``operands`` fixed operands, then the command.
    ``files``: options whose value is a file the wrapper writes (``>``) or reads (``<``)."""

    def handle(name: str, words: list[Word], ctx: Context) -> None:
        i, seen = scan_options(words, 1, spec)
        if files:
            _emit_files(seen, files, ctx)
        if any(option in no_command for option, _ in seen):
            ctx.emit_words(name, words)
            return
        _wrapped(name, words, i + operands, ctx, visible=visible)

    return handle


def _env(name: str, words: list[Word], ctx: Context) -> None:
    words = list(words)
    i, splits = 1, 0
    while i < len(words):
        value = words[i].value
        if value == "--":
            i += 1
            break
        if value == "-":  # the old spelling of -i
            i += 1
            continue
        if not value.startswith("-"):
            break
        split_text: str | None = None
        width = 1
        if value.startswith("--"):
            option, equals, attached = value.partition("=")
            if option in ("--unset", "--chdir", "--split-string") and not equals:
                width, attached = 2, words[i + 1].value if i + 1 < len(words) else ""
            if option == "--split-string":
                split_text = attached
        else:
            for j in range(1, len(value)):
                if value[j] in "uCS":
                    attached = value[j + 1 :]
                    if not attached:
                        width, attached = 2, words[i + 1].value if i + 1 < len(words) else ""
                    if value[j] == "S":
                        split_text = attached
                    break
        if (
            value.startswith("--ch")
            and "--chdir".startswith(value.partition("=")[0])
            or (not value.startswith("--") and "C" in value[1:])
        ):
            # The command runs in another directory: its relative paths are not where they seem.
            ctx.problem(
                f"{name} {short(value, 30)} runs the command in another directory, so its paths cannot be placed"
            )
        if split_text is None:
            i += width
            continue
        # -S splits its string into arguments that take the option's place.
        splits += 1
        pieces = ctx.split_words(split_text) if splits <= MAX_DEPTH else None
        if pieces is None or not all(fixed(w) for w in words[i : i + width]):
            ctx.problem(f"env -S splits a string that cannot be read with certainty ({short(split_text)})")
            ctx.emit_words(name, words)
            return
        words[i : i + width] = pieces
    while i < len(words) and "=" in words[i].value[1:]:
        variable, _, value = words[i].value.partition("=")
        check_variable(variable, value, not words[i].expanded, ctx)
        i += 1
    _wrapped(name, words, i, ctx)


_SUDO = Options(
    short_values="CDgpRrTtUuac",
    short_optional="h",
    long_values=frozenset(
        {
            "--user",
            "--group",
            "--chdir",
            "--close-from",
            "--prompt",
            "--chroot",
            "--role",
            "--type",
            "--command-timeout",
            "--other-user",
            "--auth-type",
            "--login-class",
        }
    ),
)


_SUDO_NO_COMMAND = frozenset(
    {"-e", "--edit", "-l", "--list", "-v", "--validate", "-V", "--version", "--help", "-K", "--remove-timestamp"}
)


def _sudo(name: str, words: list[Word], ctx: Context) -> None:
    i, seen = scan_options(words, 1, _SUDO)
    if any(option in ("-D", "--chdir", "-R", "--chroot") for option, _ in seen):
        ctx.problem(f"{name} runs the command in another directory or root, so its paths cannot be placed")
    if any(option in _SUDO_NO_COMMAND or (option == "-h" and value is None) for option, value in seen):
        ctx.emit_words(name, words)
        return
    while i < len(words) and (assignment := ASSIGNMENT.match(words[i].value)) is not None:
        check_variable(assignment.group(1), words[i].value[assignment.end() :], not words[i].expanded, ctx)
        i += 1
    _wrapped(name, words, i, ctx, visible=True)


_SU = Options(
    short_values="cCsgGw",
    long_values=frozenset(
        {"--command", "--session-command", "--shell", "--group", "--supp-group", "--whitelist-environment"}
    ),
)


def _su(name: str, words: list[Word], ctx: Context) -> None:
    ctx.emit_words(name, words)
    if not all(fixed(w) for w in words[1:]):
        ctx.problem(f"the arguments of {name} are only known at run time, so the command it runs is unclear")
    seen: list[tuple[str, str | None]] = []
    i = 1
    # su passes the arguments after the user to the shell, so options may follow it.
    while i < len(words):
        after, found = scan_options(words, i, _SU)
        seen += found
        i = after if after > i else i + 1
    shells = [value for option, value in seen if option in ("-s", "--shell") and value]
    if any(basename(shell) not in POSIX_SHELLS for shell in shells):
        ctx.problem(f"{name} runs a shell this splitter does not read ({short(shells[-1])})")
    for option, value in seen:
        if option in ("-c", "--command", "-C", "--session-command") and value is not None:
            ctx.parse_line(value)


def _shell(name: str, words: list[Word], ctx: Context) -> None:
    """``sh -c SCRIPT`` runs SCRIPT as a command line; other forms run a file or stdin."""
    i, script_option = 1, False
    while i < len(words):
        value = words[i].value
        if value in ("--", "-"):
            i += 1
            break
        if value.startswith("--"):
            i += 2 if value in ("--rcfile", "--init-file") else 1
            continue
        if len(value) > 1 and value[0] in "-+":
            script_option = script_option or (value[0] == "-" and "c" in value[1:])
            i += 1 + value.count("o") + value.count("O")  # -o/-O take a value
            continue
        break
    if not script_option or i >= len(words):
        ctx.emit_words(name, words)
        return
    script = words[i]
    if not all(fixed(w) for w in words[1:i]) or not fixed(script):
        ctx.problem(f"the script run by {name} -c is only known at run time ({short(script.value)})")
    if name not in POSIX_SHELLS:
        ctx.problem(f"{name} -c runs a script in a language this splitter does not read")
    ctx.parse_line(script.value)


_XARGS = Options(
    short_values="adEILnPsJRS",
    short_optional="eil",
    long_values=frozenset(
        {"--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"}
    ),
)


_XARGS_FILES = {"-a": "<", "--arg-file": "<"}


def _xargs(name: str, words: list[Word], ctx: Context) -> None:
    i, seen = scan_options(words, 1, _XARGS)
    _emit_files(seen, _XARGS_FILES, ctx)
    if i >= len(words):
        ctx.emit_words(name, words)  # runs echo
        return
    replace = next(((value or "{}") for option, value in seen if option in ("-I", "-i", "--replace", "-J")), None)
    if replace is None:
        _wrapped(name, words, i, ctx, extra=(runtime_word(XARGS_INPUT),))
        return
    # Input lines replace the string wherever it appears, the command name included.
    marked = [w if replace not in w.value else runtime_word(w.value) for w in words[i:]]
    _wrapped(name, [*words[:i], *marked], i, ctx)


_WATCH = Options(short_values="nq", short_optional="d", long_values=frozenset({"--interval", "--equexit"}))


def _watch(name: str, words: list[Word], ctx: Context) -> None:
    i, seen = scan_options(words, 1, _WATCH)
    if any(option in ("-x", "--exec") for option, _ in seen):
        _wrapped(name, words, i, ctx)
        return
    if i >= len(words):
        ctx.emit_words(name, words)
        return
    if not all(fixed(w) for w in words[1:]):
        ctx.problem(f"{name} runs its arguments as a shell command line, and they are only known at run time")
    ctx.parse_line(" ".join(w.value for w in words[i:]))


_FIND_ACTIONS = ("-exec", "-execdir", "-ok", "-okdir")


def _find(name: str, words: list[Word], ctx: Context) -> None:
    """find is listed, and so is each command its -exec/-execdir/-ok/-okdir runs."""
    ctx.emit_words(name, words)
    count = len(words)
    last_terminator = max((k for k in range(count) if words[k].value in (";", "+")), default=-1)
    i = 1
    while i < count:
        word = words[i]
        if word.value in _FIND_ACTIONS and not word.expanded:
            start = j = i + 1
            while j < count and not (
                words[j].value == ";" or (words[j].value == "+" and j > start and words[j - 1].value == "{}")
            ):
                j += 1
            command = [w if "{}" not in w.value else runtime_word(w.value) for w in words[start:j]]
            inner = ctx.deeper() if command else None
            if inner is not None:
                inner.run(command)
            i = j + 1
            continue
        if _find_word_may_hide_action(words, i, last_terminator):
            ctx.problem(
                f"an argument of find ({short(word.value)}) is only known at run time and could add an -exec action"
            )
        i += 1


def _find_word_may_hide_action(words: list[Word], i: int, last_terminator: int) -> bool:
    word = words[i]
    if word.split or has_brace(word):
        return True
    if has_glob(word):
        return any(fnmatchcase(action, word.value) for action in _FIND_ACTIONS)
    if not word.expanded or i >= last_terminator or i + 1 >= len(words):
        return False
    # A quoted expansion is one word; as "-exec" it would run the next word as a command.
    following = words[i + 1].value
    return not (following.startswith("-") or following in ("(", ")", "!", ","))


def _busybox(name: str, words: list[Word], ctx: Context) -> None:
    if len(words) > 1 and words[1].value.startswith("-"):
        ctx.emit_words(name, words)
    else:
        _wrapped(name, words, 1, ctx)


#: The handlers of this module, by command name.
WRAPPERS: dict[str, Handler] = {
    "env": _env,
    "nohup": _wrapper(),
    "timeout": _wrapper(Options(short_values="sk", long_values=frozenset({"--signal", "--kill-after"})), operands=1),
    "nice": _wrapper(Options(short_values="n", long_values=frozenset({"--adjustment"}), numbers=True)),
    "time": _wrapper(
        Options(short_values="fo", long_values=frozenset({"--format", "--output"})), files={"-o": ">", "--output": ">"}
    ),
    "command": _wrapper(no_command=frozenset({"-v", "-V"})),
    "exec": _wrapper(Options(short_values="a")),
    "builtin": _wrapper(),
    "stdbuf": _wrapper(Options(short_values="ioe", long_values=frozenset({"--input", "--output", "--error"}))),
    "ionice": _wrapper(
        Options(short_values="cnpPu", long_values=frozenset({"--class", "--classdata", "--pid", "--pgid", "--uid"})),
        no_command=frozenset({"-p", "-P", "-u", "--pid", "--pgid", "--uid"}),
    ),
    "setsid": _wrapper(),
    "chrt": _wrapper(
        Options(short_values="TPD", long_values=frozenset({"--sched-runtime", "--sched-period", "--sched-deadline"})),
        operands=1,
        no_command=frozenset({"-p", "--pid", "-m", "--max"}),
    ),
    "taskset": _wrapper(operands=1, no_command=frozenset({"-p", "--pid"})),
    "busybox": _busybox,
    "sudo": _sudo,
    "doas": _wrapper(Options(short_values="Cu"), no_command=frozenset({"-C", "-L"}), visible=True),
    "su": _su,
    "xargs": _xargs,
    "watch": _watch,
    "find": _find,
    **{shell: _shell for shell in SHELLS},
}
