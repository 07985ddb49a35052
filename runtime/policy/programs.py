"""What the options and operands of the programs agents commonly run do to files and code.

A command's argv says more than its words: ``git diff --output=.git/config`` writes a
file, ``sort -o x`` too, ``git -c alias.x='!sh' x`` runs code, ``grep -f list`` reads a
file. :func:`accesses` reads an argv with a per-program table and lists each such
item as an :class:`Access`: a file **read**, a file **written**, **code** run, or a
**dir**\\ ectory the program works in. The permission stage uses it three ways:

- a write or code item is covered by an allow rule only when the rule spells that
  option out (``git diff *`` never covers ``--output=...``; ``git diff --output=*`` does);
- every path an item names is checked like an argument: outside the workspace, or
  inside toolrt's own files;
- deny and ask rules see the files read and written as ``<`` and ``>`` commands,
  like redirections.

Options not in a table are treated as flags. Programs not in the table are judged by
their argv alone; what they do inside (``python script.py``, ``make``) is theirs.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

READ, WRITE, CODE, DIR = "read", "write", "code", "dir"
#: Following symbolic links while walking a tree: it can leave the workspace.
FOLLOW = "follow"
#: What a link made by ``ln`` will point to: reachable through the link from then on.
LINK = "link"
#: Access kinds an allow rule must name literally.
GUARDED = frozenset({WRITE, CODE, FOLLOW})
# An option whose value is program text (sed -e, awk --source): checked like the script operand.
_SCRIPT = "script"


@dataclass(frozen=True, slots=True)
class Access:
    """One argv item that reads, writes, runs or moves into something.

    ``named``: how many leading characters of the item an allow pattern must spell out
    (the option itself, ``--output`` of ``--output=x``), 0 when any pattern may cover it.
    ``path``: the file or directory named, when there is one.
    """

    index: int
    kind: str
    what: str  # the option (``--output``), or a word for an operand (``operand``)
    path: str | None = None
    named: int = 0


# An option: its access kind (None: only takes a value, e.g. grep -e PATTERN), and
# whether it takes a value ("yes"), never ("no"), or only when attached ("attached").
@dataclass(frozen=True, slots=True)
class _Option:
    kind: str | None
    value: str = "yes"


def _opts(*specs: tuple[str, str | None, str]) -> Mapping[str, _Option]:
    table: dict[str, _Option] = {}
    for names, kind, value in specs:
        for name in names.split():
            table[name] = _Option(kind, value)
    return table


@dataclass(frozen=True, slots=True)
class _Program:
    options: Mapping[str, _Option] = field(default_factory=dict)
    operands: str | None = None  # every operand is a file of this kind (tee: write)
    last_operand: str | None = None  # the last operand (cp: write) when there are two or more
    pattern_first: bool = False  # the first operand is a pattern, not a file (grep), unless -e/-f is given
    text_operands: bool = False  # operands are text, never files (echo)
    script: Callable[[str], str | None] | None = None  # checks the program text operand (sed, awk): the kind it implies
    subcommands: Mapping[str, _Program] | None = None
    subcommand_rule: Callable[[Sequence[str], int], str | None] | None = None  # (argv, index of subcommand) -> kind
    long_single_dash: bool = False  # options are whole words with one dash (find -delete)
    command_first: bool = False  # the first operand names a command of the program's own (npm test), not a file


# -- sed and awk programs -------------------------------------------------------------

_SED_SUBST = re.compile(r"s(.)(?:\\.|(?!\1).)*\1(?:\\.|(?!\1).)*\1([a-zA-Z0-9]*)(.*)", re.DOTALL)


def _sed_script(text: str) -> str | None:
    """CODE when a sed script can run commands (``e``, ``s///e``), WRITE when it can
    write files (``w``, ``W``, ``s///w``); READ for ``r``/``R``. Anything it cannot
    read with certainty counts as CODE."""
    worst: str | None = None
    rank = {None: 0, READ: 1, WRITE: 2, CODE: 3}
    for raw in re.split(r"[;\n]", text):
        command = raw.strip()
        # Skip addresses: line numbers, $, /regex/, ranges, ! and braces.
        command = re.sub(r"^(?:[0-9]+(?:~[0-9]+)?|\$|/(?:\\.|[^/])*/[IM]*|\\(.)(?:\\.|(?!\1).)*\1)?"
                         r"(?:\s*,\s*(?:[0-9]+|\$|/(?:\\.|[^/])*/[IM]*|[+~][0-9]+))?\s*!?\s*[{}]?\s*", "", command)
        if not command:
            continue
        letter = command[0]
        kind: str | None = None
        if letter == "s":
            match = _SED_SUBST.match(command)
            if match is None:
                kind = CODE  # a substitution split by ';' inside it, or one we cannot read: assume the worst
            else:
                flags = match.group(2)
                kind = CODE if "e" in flags else WRITE if "w" in flags else None
        elif letter == "e":
            kind = CODE
        elif letter in "wW":
            kind = WRITE
        elif letter in "rR":
            kind = READ
        elif letter == "y" or letter in "=aicdDgGhHlnNpPqQtTbxz:#}{F":
            kind = None
        else:
            kind = CODE
        if rank[kind] > rank[worst]:
            worst = kind
    return worst


_AWK_WRITE = re.compile(r"\b(?:print|printf)\b[^;{}\n]*?>")
_AWK_CODE = re.compile(r"\bsystem\s*\(|\|\s*&?\s*getline|[^|]\|[^|]|@load|@include|@[A-Za-z_]\w*\s*\(|\bclose\s*\(")


def _awk_script(text: str) -> str | None:
    """CODE when an awk program can run commands (``system()``, pipes), WRITE when it
    prints to a file (``print > "f"``)."""
    if _AWK_CODE.search(f" {text} "):
        return CODE
    if _AWK_WRITE.search(text):
        return WRITE
    if "getline" in text:
        return READ
    return None


# -- git ------------------------------------------------------------------------------

_GIT_GLOBAL = _opts(
    ("-C", DIR, "yes"),
    ("-c --config-env --exec-path --git-dir", CODE, "yes"),
    ("--work-tree", DIR, "yes"),
    ("--namespace --super-prefix --list-cmds", None, "yes"),
)
_GIT_DIFF = _opts(
    ("--output", WRITE, "yes"),
    ("--ext-diff --textconv", CODE, "no"),
    ("-O", READ, "attached"),
    ("--relative", None, "attached"),
)
_GIT_FETCH = _opts(("--upload-pack -u", CODE, "yes"), ("--config -c --template", CODE, "yes"), ("--separate-git-dir", WRITE, "yes"))


def _git_config(argv: Sequence[str], at: int) -> str | None:
    rest = argv[at + 1 :]
    if any(item in ("--get", "--get-all", "--get-regexp", "--list", "-l", "get", "list") for item in rest):
        return READ
    operands = [item for item in rest if not item.startswith("-")]
    return CODE if len(operands) >= 2 or any(item in ("--edit", "-e", "--add", "--unset", "set", "edit", "unset") for item in rest) else READ


def _git_runs(argv: Sequence[str], at: int) -> str | None:
    return CODE


_GIT = _Program(
    options=_GIT_GLOBAL,
    subcommands={
        **{name: _Program(options=_GIT_DIFF) for name in ("diff", "log", "show", "whatchanged", "range-diff", "diff-tree", "diff-files", "diff-index")},
        "format-patch": _Program(options={**_GIT_DIFF, **_opts(("-o --output-directory", WRITE, "yes"))}),
        "grep": _Program(options=_opts(("-O --open-files-in-pager", CODE, "attached"), ("-f", READ, "yes"), ("-e", None, "yes")), pattern_first=True),
        "fetch": _Program(options=_GIT_FETCH),
        "pull": _Program(options=_GIT_FETCH),
        "clone": _Program(options=_GIT_FETCH),
        "ls-remote": _Program(options=_GIT_FETCH),
        "submodule": _Program(subcommand_rule=lambda argv, at: CODE if "foreach" in argv[at + 1 :] else None),
        "push": _Program(options=_opts(("--receive-pack --exec", CODE, "yes"))),
        "archive": _Program(options=_opts(("--exec --remote", CODE, "yes"), ("-o --output", WRITE, "yes"))),
        "rebase": _Program(options=_opts(("-x --exec", CODE, "yes"))),
        "bisect": _Program(subcommand_rule=lambda argv, at: CODE if "run" in argv[at + 1 :] else None),
        "commit": _Program(options=_opts(("-F --file -t --template", READ, "yes"))),
        "tag": _Program(options=_opts(("-F --file", READ, "yes"))),
        "blame": _Program(options=_opts(("--contents -S", READ, "yes"))),
        "config": _Program(subcommand_rule=_git_config),
        "filter-branch": _Program(subcommand_rule=_git_runs),
        "filter-repo": _Program(subcommand_rule=_git_runs),
        "difftool": _Program(options=_opts(("-x --extcmd -t --tool", CODE, "yes"))),
        "mergetool": _Program(options=_opts(("-t --tool", CODE, "yes"))),
        "send-email": _Program(options=_opts(("--to-cmd --cc-cmd --sendmail-cmd --smtp-server", CODE, "yes"))),
        "daemon": _Program(subcommand_rule=_git_runs),
        "instaweb": _Program(subcommand_rule=_git_runs),
        "bundle": _Program(subcommand_rule=lambda argv, at: WRITE if "create" in argv[at + 1 :] else None),
        "apply": _Program(options=_opts(("--directory", WRITE, "yes"))),
        "worktree": _Program(subcommand_rule=lambda argv, at: WRITE if "add" in argv[at + 1 :] else None),
    },
)

# -- the table --------------------------------------------------------------------------

_GREP = _Program(
    options=_opts(
        ("-R --dereference-recursive", FOLLOW, "no"),
        ("-f --file --exclude-from", READ, "yes"),
        ("-e --regexp -m --max-count -A -B -C --after-context --before-context --context -d -D --directories --devices"
         " --include --exclude --exclude-dir --label --color --colour --binary-files", None, "yes"),
    ),
    pattern_first=True,
)
_RG = _Program(
    options=_opts(
        ("-L --follow", FOLLOW, "no"),
        ("-f --file --ignore-file", READ, "yes"),
        ("--pre --hostname-bin", CODE, "yes"),
        ("-e --regexp -g --glob --iglob -t --type -T --type-not --type-add --type-clear -m --max-count -A -B -C"
         " --after-context --before-context --context -j --threads -M --max-columns --max-filesize -r --replace"
         " --sort --sortr --path-separator --pre-glob --max-depth -d --encoding -E --engine --colors --color"
         " --field-match-separator --field-context-separator --context-separator", None, "yes"),
    ),
    pattern_first=True,
)
_SORT = _Program(
    options=_opts(
        ("-o --output", WRITE, "yes"),
        ("--compress-program", CODE, "yes"),
        ("--files0-from", READ, "yes"),
        ("-T --temporary-directory", WRITE, "yes"),
        ("-k --key -t --field-separator -S --buffer-size --parallel --batch-size --random-source", None, "yes"),
    )
)
_SED = _Program(
    options=_opts(
        ("-i --in-place", WRITE, "attached"),
        ("-f --file", CODE, "yes"),
        ("-e --expression", _SCRIPT, "yes"),
        ("-l --line-length -s", None, "yes"),
    ),
    script=_sed_script,
)
_AWK = _Program(
    options=_opts(
        ("-f --file -i --include -l --load -E --exec", CODE, "yes"),
        ("-e --source", _SCRIPT, "yes"),
        ("-v --assign -F --field-separator", None, "yes"),
        ("-o --dump-variables -p --profile", WRITE, "attached"),
    ),
    script=_awk_script,
)
_TAR = _Program(
    options=_opts(
        ("--to-command --use-compress-program -I --checkpoint-action --info-script -F --new-volume-script --rsh-command"
         " --rmt-command", CODE, "yes"),
        ("-T --files-from -X --exclude-from", READ, "yes"),
        ("-C --directory", DIR, "yes"),
        ("-f --file", WRITE, "yes"),
        ("-g --listed-incremental --exclude -b --blocking-factor -H --format -N --newer --owner --group --mode"
         " --transform --xform --strip-components", None, "yes"),
    )
)
_CURL = _Program(
    options=_opts(
        ("-o --output -D --dump-header -c --cookie-jar --trace --trace-ascii --stderr --etag-save --libcurl"
         " --output-dir --hsts --alt-svc", WRITE, "yes"),
        ("-O --remote-name --remote-name-all -J --remote-header-name", WRITE, "no"),
        ("-K --config", CODE, "yes"),
        ("-T --upload-file -b --cookie --netrc-file --cacert --cert --key --etag-compare --data-binary"
         " --data-urlencode -d --data --data-ascii --data-raw -F --form --json -H --header", READ, "yes"),
        ("-X --request -u --user -A --user-agent -e --referer -x --proxy -w --write-out -m --max-time"
         " --connect-timeout -r --range --url --resolve", None, "yes"),
    )
)
_WGET = _Program(
    options=_opts(
        ("-O --output-document -o --output-file -a --append-output -P --directory-prefix --save-cookies"
         " --warc-file", WRITE, "yes"),
        ("-e --execute --config --use-askpass", CODE, "yes"),
        ("-i --input-file --post-file --body-file --load-cookies --ca-certificate --certificate --private-key",
         READ, "yes"),
        ("-U --user-agent --header --post-data --method -t --tries -T --timeout -l --level", None, "yes"),
    )
)
_COPY = _Program(
    options=_opts(("-t --target-directory", WRITE, "yes"), ("-S --suffix", None, "yes"), ("-L --dereference", FOLLOW, "no")),
    last_operand=WRITE,
)
_LN = _Program(options=_opts(("-t --target-directory", WRITE, "yes"), ("-S --suffix", None, "yes")), last_operand=WRITE)
_PYTHON = _Program(
    options=_opts(("-c -m", CODE, "yes"), ("-W -X -Q", None, "yes")),
)
_NODE = _Program(
    options=_opts(
        ("-e --eval -p --print -r --require --import --loader --experimental-loader", CODE, "yes"),
        ("--input-type --inspect-port", None, "yes"),
    )
)
_PIP = _Program(
    command_first=True,
    options=_opts(
        ("-e --editable", CODE, "yes"),
        ("-r --requirement -c --constraint", READ, "yes"),
        ("-t --target --prefix --root --src --log --report --cache-dir -d --dest", WRITE, "yes"),
        ("-i --index-url --extra-index-url -f --find-links --trusted-host --config-settings -C", CODE, "yes"),
    )
)
_NPM = _Program(
    command_first=True,
    options=_opts(
        ("--prefix -C --userconfig --globalconfig --script-shell --node-options -c --call", CODE, "yes"),
    )
)
_MAKE = _Program(
    options=_opts(
        ("-f --file --makefile --eval -E", CODE, "yes"),
        ("-C --directory -I --include-dir", DIR, "yes"),
        ("-o --old-file --assume-old -W --what-if --new-file --assume-new -j --jobs -l --load-average", None, "yes"),
    )
)
_PYTEST = _Program(
    options=_opts(
        ("-p -c --config-file -o --override-ini --pdbcls --confcutdir --rootdir --import-mode", CODE, "yes"),
        ("--basetemp --junitxml --junit-xml --resultlog --log-file --html --cov-report --debug", WRITE, "yes"),
        ("-k -m --maxfail --tb --durations --deselect --ignore --ignore-glob -W", None, "yes"),
    )
)
_DD = _Program()  # if=/of= handled in accesses()
_FIND = _Program(
    long_single_dash=True,
    options=_opts(
        ("-L -follow", FOLLOW, "no"),
        ("-fprint -fprint0 -fprintf -fls", WRITE, "yes"),
        ("-exec -execdir -ok -okdir", CODE, "yes"),
        ("-delete", WRITE, "no"),
    )
)

_TABLE: Mapping[str, _Program] = {
    "git": _GIT,
    "grep": _GREP,
    "egrep": _GREP,
    "fgrep": _GREP,
    "rg": _RG,
    "sort": _SORT,
    "tee": _Program(options=_opts(("-p --output-error", None, "attached")), operands=WRITE),
    "sed": _SED,
    "awk": _AWK,
    "gawk": _AWK,
    "mawk": _AWK,
    "nawk": _AWK,
    "tar": _TAR,
    "curl": _CURL,
    "wget": _WGET,
    "cp": _COPY,
    "install": _COPY,
    "ln": _LN,
    "rsync": _Program(options=_opts(("-e --rsh --rsync-path", CODE, "yes")), last_operand=WRITE),
    "scp": _Program(options=_opts(("-S -o -F", CODE, "yes")), last_operand=WRITE),
    "mv": _Program(options=_opts(("-t --target-directory", WRITE, "yes"), ("-S --suffix", None, "yes")), operands=WRITE),
    "rm": _Program(operands=WRITE),
    "rmdir": _Program(operands=WRITE),
    "unlink": _Program(operands=WRITE),
    "shred": _Program(operands=WRITE),
    "truncate": _Program(options=_opts(("-s --size -r --reference", None, "yes")), operands=WRITE),
    "touch": _Program(options=_opts(("-d --date -r --reference -t", None, "yes")), operands=WRITE),
    "mkdir": _Program(options=_opts(("-m --mode", None, "yes")), operands=WRITE),
    "chmod": _Program(operands=WRITE),
    "chown": _Program(operands=WRITE),
    "chgrp": _Program(operands=WRITE),
    "dd": _DD,
    "python": _PYTHON,
    "python3": _PYTHON,
    "pypy3": _PYTHON,
    "node": _NODE,
    "deno": _NODE,
    "bun": _NODE,
    "pip": _PIP,
    "pip3": _PIP,
    "npm": _NPM,
    "npx": _NPM,
    "pnpm": _NPM,
    "yarn": _NPM,
    "make": _MAKE,
    "gmake": _MAKE,
    "pytest": _PYTEST,
    "py.test": _PYTEST,
    "find": _FIND,
    "echo": _Program(text_operands=True),
    "printf": _Program(text_operands=True),
    "perl": _Program(options=_opts(("-e -E -M -m -I -x", CODE, "attached"), ("-i", WRITE, "attached"))),
    "ruby": _Program(options=_opts(("-e -r -I", CODE, "yes"))),
    "less": _Program(options=_opts(("-o --log-file -O --LOG-FILE", WRITE, "yes"), ("-k --lesskey-file", CODE, "yes"))),
    "vim": _Program(options=_opts(("-c --cmd -S -u", CODE, "yes"))),
    "zip": _Program(options=_opts(("-T -TT --unzip-command", CODE, "attached")), pattern_first=False),
    "unzip": _Program(options=_opts(("-d", WRITE, "yes"))),
    "patch": _Program(options=_opts(("-o --output -r --reject-file", WRITE, "yes"), ("-i --input", READ, "yes"), ("-d --directory", DIR, "yes"))),
    "split": _Program(last_operand=WRITE),
    "csplit": _Program(options=_opts(("-f --prefix", WRITE, "yes"))),
    "ssh": _Program(options=_opts(("-o -F -E -S -i", CODE, "yes"))),
    "docker": _Program(subcommand_rule=lambda argv, at: CODE, command_first=True),
    **{name: _Program(command_first=True) for name in ("cargo", "go", "kubectl", "helm", "gh", "poetry", "uv", "terraform", "systemctl")},
    "crontab": _Program(subcommand_rule=lambda argv, at: CODE),
}

#: Programs whose ``-i``/``--interpreter``-style value options are not in the table
#: but whose pattern operands must not be taken for paths.
PATTERN_PROGRAMS = frozenset(name for name, program in _TABLE.items() if program.pattern_first)


def text_operands(program: str) -> bool:
    """Whether the operands of ``program`` are text, never files (``echo``)."""
    entry = _TABLE.get(program)
    return entry is not None and entry.text_operands


def accesses(argv: Sequence[str]) -> tuple[Access, ...]:
    """The items of ``argv`` that read or write a file, run code or change directory
    (remembered for recent commands: agents run the same ones again and again)."""
    if not argv or argv[0] not in _TABLE:
        return ()
    return _accesses(tuple(argv))


@functools.lru_cache(maxsize=4096)
def _accesses(argv: tuple[str, ...]) -> tuple[Access, ...]:
    program = _TABLE.get(argv[0])
    if program is None:
        return ()
    found: list[Access] = []
    operands: list[int] = []
    _scan(_tar_modes(argv) if program is _TAR else argv, 1, program, found, [], operands)
    if program is _TAR:
        _tar_file_kind(argv, found)
    elif program is _FIND and any(a.what == "-delete" for a in found):
        # The starting points, and everything below them, may be deleted.
        roots = [k for k in range(1, len(argv)) if not argv[k].startswith("-") and argv[k] not in ("(", "!")]
        roots = roots[: next((n for n, k in enumerate(roots) if k > 1 and argv[k - 1].startswith("-")), len(roots))]
        found.extend(Access(k, WRITE, "-delete", argv[k]) for k in roots)
    elif argv[0] == "unzip" and not any(a.what == "-d" for a in found) and not set(argv[1:]) & {"-l", "-t", "-v", "-Z", "-p", "-c"}:
        found.append(Access(1, WRITE, "extract", ".", 0))  # into the working folder
    elif program is _LN and len(operands) >= 2:
        found.extend(Access(k, LINK, "target", argv[k]) for k in operands[:-1])
    elif program is _GIT:
        _git_tree_writes(argv, found)
    if argv[0] in _URL_PROGRAMS:
        found.extend(_file_urls(argv))
    return tuple(found)


_URL_PROGRAMS = frozenset({"curl", "wget", "git"})

# Programs that make no files however they are called (their redirections are commands
# of their own), and git commands that only read.
_MAKE_NO_FILES = frozenset(
    {
        "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "echo", "printf", "pwd", "true", "false",
        "test", "[", "[[", "stat", "file", "du", "df", "which", "type", "uniq", "cut", "tr", "diff", "cmp", "jq",
        "tree", "basename", "dirname", "realpath", "readlink", "date", "id", "whoami", "uname", "nl", "column", "tac",
        "rev", "seq", "sleep", "cd", "pushd", "popd", "<", "sort", "sed", "awk", "gawk", "find", "git",
        "shopt", "set", "export", "unset", "declare", "local", "readonly", "typeset", "read",
    }
)
_GIT_READS = frozenset({"status", "diff", "log", "show", "blame", "grep", "ls-files", "rev-parse", "branch", "shortlog", "describe"})
# Programs that delete, move away or lock up what they are given.
_DESTRUCTIVE = frozenset({"rm", "rmdir", "unlink", "shred", "mv", "chmod", "chown", "chgrp", "truncate"})


def may_create_files(argv: Sequence[str]) -> bool:
    """Whether running ``argv`` may make or change files (so a glob later on the same
    line could match something that is not there yet)."""
    if not argv or argv[0] not in _MAKE_NO_FILES:
        return True
    if argv[0] == "git":
        sub = next((item for item in argv[1:] if not item.startswith("-")), "")
        if sub not in _GIT_READS or any(a.kind in (WRITE, CODE) for a in accesses(argv)):
            return True
        return False
    return any(a.kind in (WRITE, CODE, LINK) for a in accesses(argv))


def destroys(argv: Sequence[str], access: Access) -> bool:
    """Whether ``access`` (a write by ``argv``) deletes, moves away, locks up or links to
    what it names, rather than writing into it."""
    return bool(argv) and (argv[0] in _DESTRUCTIVE or access.kind == LINK or access.what in ("-delete", "clean", "stash"))


def _file_urls(argv: tuple[str, ...]) -> list[Access]:
    """``file:`` URLs read local files (``curl file:///etc/passwd``)."""
    found = []
    for k, item in enumerate(argv[1:], 1):
        value = item.partition("=")[2] if item.startswith("-") else item
        if value[:5].lower() == "file:":
            rest = value[5:]
            if rest.startswith("//"):
                rest = rest[2:]
                rest = rest[rest.find("/") :] if "/" in rest else "/"  # drop the host part
            found.append(Access(k, READ, "file URL", rest or "/"))
    return found


def _git_tree_writes(argv: tuple[str, ...], found: list[Access]) -> None:
    """git commands that delete untracked files (toolrt's own among them) write the whole tree."""
    for k, item in enumerate(argv[1:], 1):
        if item.startswith("-"):
            continue
        rest = argv[k + 1 :]
        untracked = {"-u", "--include-untracked", "-a", "--all"}
        if item == "clean" or (item == "stash" and untracked & set(rest)):
            found.append(Access(k, WRITE, item, ".", len(item)))
        return


def _tar_modes(argv: Sequence[str]) -> Sequence[str]:
    """tar's old style (``tar xzf a.tgz``): a first word without a dash is a cluster of options."""
    if len(argv) > 1 and not argv[1].startswith("-"):
        return [argv[0], "-" + argv[1], *argv[2:]]
    return argv


def _tar_file_kind(argv: Sequence[str], found: list[Access]) -> None:
    """tar's ``-f`` archive is written when creating; extracting writes the files in it."""
    letters = "".join(item.lstrip("-") for item in argv[1:] if item.startswith("-") and not item.startswith("--"))
    if len(argv) > 1 and not argv[1].startswith("-"):
        letters += argv[1]
    words = set(argv[1:])
    creates = bool(set(letters) & set("cruA")) or bool(words & {"--create", "--append", "--update", "--concatenate", "--delete"})
    extracts = "x" in letters or bool(words & {"--extract", "--get"})
    for k, access in enumerate(found):
        if access.what in ("-f", "--file") and not creates:
            found[k] = Access(access.index, READ, access.what, access.path, 0)
    if extracts:
        found.append(Access(1, WRITE, "extract", ".", 0))


def pattern_operands(argv: Sequence[str]) -> frozenset[int]:
    """Indices of items that are not paths: a pattern or program text (grep's first
    operand, sed's and awk's script), a subcommand (``git diff``), or the value of an
    option that is not a file (``grep -e PATTERN``, ``sort -k 2``)."""
    if not argv or argv[0] not in _TABLE:
        return frozenset()
    return _pattern_operands(tuple(argv))


@functools.lru_cache(maxsize=4096)
def _pattern_operands(argv: tuple[str, ...]) -> frozenset[int]:
    program = _TABLE[argv[0]]
    operands: list[int] = []
    _scan(_tar_modes(argv) if program is _TAR else argv, 1, program, [], operands)
    return frozenset(operands)


def _scan(argv: Sequence[str], start: int, program: _Program, found: list[Access], patterns: list[int],
          seen_operands: list[int] | None = None, *, top: bool = True) -> None:
    """Walk ``argv[start:]`` as ``program`` reads it, adding accesses to ``found`` and
    the indices of pattern or script operands to ``patterns``."""
    operands: list[int] = []
    given_pattern = False  # -e/-f: the first operand is then a file
    i, count = start, len(argv)
    options_end = False
    while i < count:
        item = argv[i]
        if options_end or item == "-" or not item.startswith("-") or len(item) < 2:
            if program.subcommands is not None and not operands and not options_end:
                sub = program.subcommands.get(item)
                if sub is not None or program is _GIT:
                    patterns.append(i)
                if sub is not None:
                    if sub.subcommand_rule is not None:
                        kind = sub.subcommand_rule(argv, i)
                        if kind is not None:
                            found.append(Access(i, kind, item, None, len(item) if kind in GUARDED else 0))
                    _scan(argv, i + 1, sub, found, patterns, seen_operands, top=False)
                    return
                if program is _GIT:
                    return  # another git command: its options are not in the table
            if top and program.command_first and not operands:
                patterns.append(i)
            if top and program.subcommand_rule is not None and not operands:
                kind = program.subcommand_rule(argv, i)
                if kind is not None:
                    found.append(Access(i, kind, item, None, len(item) if kind in GUARDED else 0))
            if argv[0] == "dd" and "=" in item:
                key, _, target = item.partition("=")
                if key in ("if", "of"):
                    found.append(Access(i, READ if key == "if" else WRITE, key, target, len(key) + 1 if key == "of" else 0))
            operands.append(i)
            i += 1
            continue
        if item == "--":
            options_end = True
            i += 1
            continue
        if item.startswith("--") or program.long_single_dash:
            name, equals, attached = item.partition("=")
            option = program.options.get(name)
            if option is None and name.startswith("--"):
                option = _abbreviated(program, name)
            if option is None:
                i += 1
                continue
            value = attached if equals else None
            option_index = i
            if not equals and option.value == "yes" and i + 1 < count:
                value = argv[i + 1]
                i += 1
                if option.kind not in (READ, WRITE, DIR):
                    patterns.append(i)  # a pattern, a number, code: not a path
            i += 1
            given_pattern = given_pattern or name in ("--regexp", "--file", "--expression", "--source")
            _record(found, program, option, name, option_index, value, named=len(name))
            continue
        # A cluster of short options: -abc, -oFILE, -o FILE.
        i += 1
        for j in range(1, len(item)):
            name = "-" + item[j]
            option = program.options.get(name)
            if option is None or option.value == "no" and option.kind is None:
                continue
            given_pattern = given_pattern or name in ("-e", "-f")
            attached = item[j + 1 :]
            if option.value == "no":
                found.append(Access(i - 1, option.kind or READ, name, None, j + 1 if option.kind in GUARDED else 0))
                continue
            if attached or option.value == "attached":
                _record(found, program, option, name, i - 1, attached or None, named=j + 1)
            elif i < count:
                _record(found, program, option, name, i - 1, argv[i], named=j + 1)
                if option.kind not in (READ, WRITE, DIR):
                    patterns.append(i)  # a pattern, a number, code: not a path
                i += 1
            break
    if seen_operands is not None:
        seen_operands.extend(operands)
    if operands:
        script_index = None
        if program.script is not None and not given_pattern:
            script_index = operands[0]
            kind = program.script(argv[script_index])
            patterns.append(script_index)
            if kind is not None:
                found.append(Access(script_index, kind, "script", None, len(argv[script_index]) if kind in GUARDED else 0))
            if argv[0] == "sed" and any(a.what in ("-i", "--in-place") for a in found):
                for index in operands[1:]:
                    found.append(Access(index, WRITE, "operand", argv[index]))
        elif program.pattern_first and not given_pattern:
            patterns.append(operands[0])
        files = [k for k in operands if k != script_index and not (program.pattern_first and not given_pattern and k == operands[0])]
        if program.operands is not None:
            found.extend(Access(k, program.operands, "operand", argv[k]) for k in files)
        elif program.last_operand is not None and len(files) >= 2:
            found.append(Access(files[-1], program.last_operand, "operand", argv[files[-1]]))


_RANK = {None: 0, DIR: 1, READ: 2, FOLLOW: 3, _SCRIPT: 4, WRITE: 4, CODE: 5}


def _abbreviated(program: _Program, name: str) -> _Option | None:
    """The option a long-option prefix stands for: getopt_long and git accept any
    unambiguous prefix (``--out=x`` is ``--output=x``). When several options start so,
    the one that does the most counts (the program may take either)."""
    if len(name) < 3:
        return None
    candidates = [option for full, option in program.options.items() if full.startswith(name) and full.startswith("--")]
    if not candidates:
        return None
    return max(candidates, key=lambda option: _RANK[option.kind])


def _record(found: list[Access], program: _Program, option: _Option, name: str, option_index: int, value: str | None, *, named: int) -> None:
    """One option with its value: the access it makes, the path it names. ``named``:
    the characters of the item up to the option's name, which an allow rule must spell."""
    kind = option.kind
    if kind == _SCRIPT:
        kind = program.script(value or "") if program.script is not None else CODE
    if kind is None:
        return
    guard = named if kind in GUARDED else 0
    path = value if kind in (READ, WRITE, DIR) and option.kind != _SCRIPT else None
    found.append(Access(option_index, kind, name, path, guard))
