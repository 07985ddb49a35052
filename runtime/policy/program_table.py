"""The per-program table behind :mod:`runtime.policy.programs`: for each program an agent
commonly runs, which options take a value, which read a file, write one, run code or
change directory, and what its operands are.

Data, mostly: the scanner that reads an argv with it lives in ``programs.py``. To teach
toolrt a program, add an entry here (and a case to ``tests/policy/test_programs.py``).
"""

from __future__ import annotations

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
#: An option whose value is program text (sed -e, awk --source): checked like the script operand.
SCRIPT = "script"



# An option: its access kind (None: only takes a value, e.g. grep -e PATTERN), and
# whether it takes a value ("yes"), never ("no"), or only when attached ("attached").
@dataclass(frozen=True, slots=True)
class Option:
    kind: str | None
    value: str = "yes"


def opts(*specs: tuple[str, str | None, str]) -> Mapping[str, Option]:
    table: dict[str, Option] = {}
    for names, kind, value in specs:
        for name in names.split():
            table[name] = Option(kind, value)
    return table


@dataclass(frozen=True, slots=True)
class Program:
    options: Mapping[str, Option] = field(default_factory=dict)
    operands: str | None = None  # every operand is a file of this kind (tee: write)
    last_operand: str | None = None  # the last operand (cp: write) when there are two or more
    pattern_first: bool = False  # the first operand is a pattern, not a file (grep), unless -e/-f is given
    text_operands: bool = False  # operands are text, never files (echo)
    script: Callable[[str], str | None] | None = None  # checks the program text operand (sed, awk): the kind it implies
    subcommands: Mapping[str, Program] | None = None
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

_GIT_GLOBAL = opts(
    ("-C", DIR, "yes"),
    ("-c --config-env --exec-path --git-dir", CODE, "yes"),
    ("--work-tree", DIR, "yes"),
    ("--namespace --super-prefix --list-cmds", None, "yes"),
)
_GIT_DIFF = opts(
    ("--output", WRITE, "yes"),
    ("--ext-diff --textconv", CODE, "no"),
    ("-O", READ, "attached"),
    ("--relative", None, "attached"),
)
_GIT_FETCH = opts(("--upload-pack -u", CODE, "yes"), ("--config -c --template", CODE, "yes"), ("--separate-git-dir", WRITE, "yes"))


def _git_config(argv: Sequence[str], at: int) -> str | None:
    rest = argv[at + 1 :]
    if any(item in ("--get", "--get-all", "--get-regexp", "--list", "-l", "get", "list") for item in rest):
        return READ
    operands = [item for item in rest if not item.startswith("-")]
    return CODE if len(operands) >= 2 or any(item in ("--edit", "-e", "--add", "--unset", "set", "edit", "unset") for item in rest) else READ


def _git_runs(argv: Sequence[str], at: int) -> str | None:
    return CODE


GIT = Program(
    options=_GIT_GLOBAL,
    subcommands={
        **{name: Program(options=_GIT_DIFF) for name in ("diff", "log", "show", "whatchanged", "range-diff", "diff-tree", "diff-files", "diff-index")},
        "format-patch": Program(options={**_GIT_DIFF, **opts(("-o --output-directory", WRITE, "yes"))}),
        "grep": Program(options=opts(("-O --open-files-in-pager", CODE, "attached"), ("-f", READ, "yes"), ("-e", None, "yes")), pattern_first=True),
        "fetch": Program(options=_GIT_FETCH),
        "pull": Program(options=_GIT_FETCH),
        "clone": Program(options=_GIT_FETCH),
        "ls-remote": Program(options=_GIT_FETCH),
        "submodule": Program(subcommand_rule=lambda argv, at: CODE if "foreach" in argv[at + 1 :] else None),
        "push": Program(options=opts(("--receive-pack --exec", CODE, "yes"))),
        "archive": Program(options=opts(("--exec --remote", CODE, "yes"), ("-o --output", WRITE, "yes"))),
        "rebase": Program(options=opts(("-x --exec", CODE, "yes"))),
        "bisect": Program(subcommand_rule=lambda argv, at: CODE if "run" in argv[at + 1 :] else None),
        "commit": Program(options=opts(("-F --file -t --template", READ, "yes"))),
        "tag": Program(options=opts(("-F --file", READ, "yes"))),
        "blame": Program(options=opts(("--contents -S", READ, "yes"))),
        "config": Program(subcommand_rule=_git_config),
        "filter-branch": Program(subcommand_rule=_git_runs),
        "filter-repo": Program(subcommand_rule=_git_runs),
        "difftool": Program(options=opts(("-x --extcmd -t --tool", CODE, "yes"))),
        "mergetool": Program(options=opts(("-t --tool", CODE, "yes"))),
        "send-email": Program(options=opts(("--to-cmd --cc-cmd --sendmail-cmd --smtp-server", CODE, "yes"))),
        "daemon": Program(subcommand_rule=_git_runs),
        "instaweb": Program(subcommand_rule=_git_runs),
        "bundle": Program(subcommand_rule=lambda argv, at: WRITE if "create" in argv[at + 1 :] else None),
        "apply": Program(options=opts(("--directory", WRITE, "yes"))),
        "worktree": Program(subcommand_rule=lambda argv, at: WRITE if "add" in argv[at + 1 :] else None),
    },
)

# -- the table --------------------------------------------------------------------------

_GREP = Program(
    options=opts(
        ("-R --dereference-recursive", FOLLOW, "no"),
        ("-f --file --exclude-from", READ, "yes"),
        ("-e --regexp -m --max-count -A -B -C --after-context --before-context --context -d -D --directories --devices"
         " --include --exclude --exclude-dir --label --color --colour --binary-files", None, "yes"),
    ),
    pattern_first=True,
)
_RG = Program(
    options=opts(
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
_SORT = Program(
    options=opts(
        ("-o --output", WRITE, "yes"),
        ("--compress-program", CODE, "yes"),
        ("--files0-from", READ, "yes"),
        ("-T --temporary-directory", WRITE, "yes"),
        ("-k --key -t --field-separator -S --buffer-size --parallel --batch-size --random-source", None, "yes"),
    )
)
_SED = Program(
    options=opts(
        ("-i --in-place", WRITE, "attached"),
        ("-f --file", CODE, "yes"),
        ("-e --expression", SCRIPT, "yes"),
        ("-l --line-length -s", None, "yes"),
    ),
    script=_sed_script,
)
_AWK = Program(
    options=opts(
        ("-f --file -i --include -l --load -E --exec", CODE, "yes"),
        ("-e --source", SCRIPT, "yes"),
        ("-v --assign -F --field-separator", None, "yes"),
        ("-o --dump-variables -p --profile", WRITE, "attached"),
    ),
    script=_awk_script,
)
TAR = Program(
    options=opts(
        ("--to-command --use-compress-program -I --checkpoint-action --info-script -F --new-volume-script --rsh-command"
         " --rmt-command", CODE, "yes"),
        ("-T --files-from -X --exclude-from", READ, "yes"),
        ("-C --directory", DIR, "yes"),
        ("-f --file", WRITE, "yes"),
        ("-g --listed-incremental --exclude -b --blocking-factor -H --format -N --newer --owner --group --mode"
         " --transform --xform --strip-components", None, "yes"),
    )
)
_CURL = Program(
    options=opts(
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
_WGET = Program(
    options=opts(
        ("-O --output-document -o --output-file -a --append-output -P --directory-prefix --save-cookies"
         " --warc-file", WRITE, "yes"),
        ("-e --execute --config --use-askpass", CODE, "yes"),
        ("-i --input-file --post-file --body-file --load-cookies --ca-certificate --certificate --private-key",
         READ, "yes"),
        ("-U --user-agent --header --post-data --method -t --tries -T --timeout -l --level", None, "yes"),
    )
)
_COPY = Program(
    options=opts(("-t --target-directory", WRITE, "yes"), ("-S --suffix", None, "yes"), ("-L --dereference", FOLLOW, "no")),
    last_operand=WRITE,
)
LN = Program(options=opts(("-t --target-directory", WRITE, "yes"), ("-S --suffix", None, "yes")), last_operand=WRITE)
_PYTHON = Program(
    options=opts(("-c -m", CODE, "yes"), ("-W -X -Q", None, "yes")),
)
_NODE = Program(
    options=opts(
        ("-e --eval -p --print -r --require --import --loader --experimental-loader", CODE, "yes"),
        ("--input-type --inspect-port", None, "yes"),
    )
)
_PIP = Program(
    command_first=True,
    options=opts(
        ("-e --editable", CODE, "yes"),
        ("-r --requirement -c --constraint", READ, "yes"),
        ("-t --target --prefix --root --src --log --report --cache-dir -d --dest", WRITE, "yes"),
        ("-i --index-url --extra-index-url -f --find-links --trusted-host --config-settings -C", CODE, "yes"),
    )
)
_NPM = Program(
    command_first=True,
    options=opts(
        ("--prefix -C --userconfig --globalconfig --script-shell --node-options -c --call", CODE, "yes"),
    )
)
_MAKE = Program(
    options=opts(
        ("-f --file --makefile --eval -E", CODE, "yes"),
        ("-C --directory -I --include-dir", DIR, "yes"),
        ("-o --old-file --assume-old -W --what-if --new-file --assume-new -j --jobs -l --load-average", None, "yes"),
    )
)
_PYTEST = Program(
    options=opts(
        ("-p -c --config-file -o --override-ini --pdbcls --confcutdir --rootdir --import-mode", CODE, "yes"),
        ("--basetemp --junitxml --junit-xml --resultlog --log-file --html --cov-report --debug", WRITE, "yes"),
        ("-k -m --maxfail --tb --durations --deselect --ignore --ignore-glob -W", None, "yes"),
    )
)
_DD = Program()  # if=/of= handled in accesses()
FIND = Program(
    long_single_dash=True,
    options=opts(
        ("-L -follow", FOLLOW, "no"),
        ("-fprint -fprint0 -fprintf -fls", WRITE, "yes"),
        ("-exec -execdir -ok -okdir", CODE, "yes"),
        ("-delete", WRITE, "no"),
    )
)

TABLE: Mapping[str, Program] = {
    "git": GIT,
    "grep": _GREP,
    "egrep": _GREP,
    "fgrep": _GREP,
    "rg": _RG,
    "sort": _SORT,
    "tee": Program(options=opts(("-p --output-error", None, "attached")), operands=WRITE),
    "sed": _SED,
    "awk": _AWK,
    "gawk": _AWK,
    "mawk": _AWK,
    "nawk": _AWK,
    "tar": TAR,
    "curl": _CURL,
    "wget": _WGET,
    "cp": _COPY,
    "install": _COPY,
    "ln": LN,
    "rsync": Program(options=opts(("-e --rsh --rsync-path", CODE, "yes")), last_operand=WRITE),
    "scp": Program(options=opts(("-S -o -F", CODE, "yes")), last_operand=WRITE),
    "mv": Program(options=opts(("-t --target-directory", WRITE, "yes"), ("-S --suffix", None, "yes")), operands=WRITE),
    "rm": Program(operands=WRITE),
    "rmdir": Program(operands=WRITE),
    "unlink": Program(operands=WRITE),
    "shred": Program(operands=WRITE),
    "truncate": Program(options=opts(("-s --size -r --reference", None, "yes")), operands=WRITE),
    "touch": Program(options=opts(("-d --date -r --reference -t", None, "yes")), operands=WRITE),
    "mkdir": Program(options=opts(("-m --mode", None, "yes")), operands=WRITE),
    "chmod": Program(operands=WRITE),
    "chown": Program(operands=WRITE),
    "chgrp": Program(operands=WRITE),
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
    "find": FIND,
    "echo": Program(text_operands=True),
    "printf": Program(text_operands=True),
    "perl": Program(options=opts(("-e -E -M -m -I -x", CODE, "attached"), ("-i", WRITE, "attached"))),
    "ruby": Program(options=opts(("-e -r -I", CODE, "yes"))),
    "less": Program(options=opts(("-o --log-file -O --LOG-FILE", WRITE, "yes"), ("-k --lesskey-file", CODE, "yes"))),
    "vim": Program(options=opts(("-c --cmd -S -u", CODE, "yes"))),
    "zip": Program(options=opts(("-T -TT --unzip-command", CODE, "attached")), pattern_first=False),
    "unzip": Program(options=opts(("-d", WRITE, "yes"))),
    "patch": Program(options=opts(("-o --output -r --reject-file", WRITE, "yes"), ("-i --input", READ, "yes"), ("-d --directory", DIR, "yes"))),
    "split": Program(last_operand=WRITE),
    "csplit": Program(options=opts(("-f --prefix", WRITE, "yes"))),
    "ssh": Program(options=opts(("-o -F -E -S -i", CODE, "yes"))),
    "docker": Program(subcommand_rule=lambda argv, at: CODE, command_first=True),
    **{name: Program(command_first=True) for name in ("cargo", "go", "kubectl", "helm", "gh", "poetry", "uv", "terraform", "systemctl")},
    "crontab": Program(subcommand_rule=lambda argv, at: CODE),
}
