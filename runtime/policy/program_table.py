"""The per-program table behind :mod:`runtime.policy.programs`: for each program an agent
commonly runs, which options take a value, which read a file, write one, run code or
change directory, and what its operands are.

Data, mostly: the scanner that reads an argv with it lives in ``programs.py``. To teach
toolrt a program, add an entry here (and a case to ``tests/policy/test_programs.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from runtime.policy import scripts

READ, WRITE, CODE, DIR = "read", "write", "code", "dir"
#: Following symbolic links while walking a tree: it can leave the workspace.
FOLLOW = "follow"
#: What a link made by ``ln`` will point to: reachable through the link from then on.
LINK = "link"
#: Access kinds an allow rule must name literally.
GUARDED = frozenset({WRITE, CODE, FOLLOW})
#: An option whose value is program text (sed -e, awk --source): checked like the script operand.
SCRIPT = "script"
#: An option whose value is a file of code or options (awk -f, curl -K): code run, and a file read.
CODE_FILE = "code-file"

#: How many characters an option name needs before a prefix of it counts (``--ou``).
ABBREVIATION_MIN = 3


# An option: its access kind (None: only takes a value, e.g. grep -e PATTERN), whether
# it takes a value ("yes"), never ("no"), or only when attached ("attached"), and
# which files its value names (default: the value itself, for file kinds).
@dataclass(frozen=True, slots=True)
class Option:
    kind: str | None
    value: str = "yes"
    paths: Callable[[str], tuple[str, ...]] | None = None


def opts(
    *specs: tuple[str, str | None, str] | tuple[str, str | None, str, Callable[[str], tuple[str, ...]]],
) -> Mapping[str, Option]:
    table: dict[str, Option] = {}
    for spec in specs:
        names, kind, value = spec[0], spec[1], spec[2]
        paths = spec[3] if len(spec) > 3 else None  # type: ignore[misc]
        for name in names.split():
            table[name] = Option(kind, value, paths)
    return table


#: Options that give a program its pattern or program text, so that its first operand is a file.
_GIVEN = frozenset({"-e", "-f", "--regexp", "--file", "--expression", "--source"})


@dataclass(frozen=True, slots=True)
class Program:
    options: Mapping[str, Option] = field(default_factory=dict)
    operands: str | None = None  # every operand is a file of this kind (tee: write)
    last_operand: str | None = None  # the last operand (cp: write) when there are two or more
    pattern_first: bool = False  # the first operand is a pattern, not a file (grep), unless -e/-f is given
    text_operands: bool = False  # operands are text, never files (echo)
    script: Callable[[str], tuple[tuple[str, str | None], ...]] | None = (
        None  # reads the program text operand (sed, awk): its effects
    )
    subcommands: Mapping[str, Program] | None = None
    subcommand_rule: Callable[[Sequence[str], int], str | None] | None = None  # (argv, index of subcommand) -> kind
    long_single_dash: bool = False  # options are whole words with one dash (find -delete)
    command_first: bool = False  # the first operand names a command of the program's own (npm test), not a file
    given: frozenset[str] = _GIVEN  # options that give the pattern or program text (the first operand is then a file)
    dash_w: bool = False  # ``-W NAME[=VALUE]`` is ``--NAME[=VALUE]`` (gawk, mawk)
    plus_code: bool = False  # an operand ``+CMD`` runs an editor command (vim, less)
    deletes: bool = False  # the operand files are deleted or replaced (gzip, git rm)
    keeps: frozenset[str] = frozenset()  # options that keep them after all (gzip -k, git rm --cached)


# -- sed and awk programs: see runtime/policy/scripts.py ----------------------------------

_sed_script = scripts.sed_script
_awk_script = scripts.awk_program


# -- values that name files only in some forms ---------------------------------------------


def _at_file(value: str) -> tuple[str, ...]:
    """``@FILE`` (curl -d, -H, --json, -w): the file after the ``@``; other values are text."""
    return (value[1:],) if value.startswith("@") and len(value) > 1 else ()


def _encoded_file(value: str) -> tuple[str, ...]:
    """curl --data-urlencode and --url-query: ``@FILE`` or ``NAME@FILE`` read a file;
    ``NAME=text``, ``=text`` and ``+text`` are text."""
    if value.startswith("+"):
        return ()
    at, equals = value.find("@"), value.find("=")
    if at < 0 or (0 <= equals < at):
        return ()
    return (value[at + 1 :],) if at + 1 < len(value) else ()


def _form_file(value: str) -> tuple[str, ...]:
    """curl -F ``NAME=@FILE[;type=...]`` uploads FILE, ``NAME=<FILE`` sends its text;
    several files may be listed with commas. A quoted name is taken whole."""
    name, equals, content = value.partition("=")
    if not equals or content[:1] not in ("@", "<"):
        return ()
    rest = content[1:]
    if rest.startswith('"'):
        close = rest.find('"', 1)
        return (rest[1:close] if close > 0 else rest[1:],)
    rest = rest.split(";", 1)[0]
    return tuple(part for part in rest.split(",") if part) or ()


#: How many URLs a curl glob may stand for before it counts as unknown.
_MAX_URL_GLOBS = 256


def curl_globs(text: str) -> list[str] | None:
    """The URLs curl makes of ``text`` (``{a,b}`` lists, ``[a-z]``/``[1-9:2]`` ranges);
    None when they are more than :data:`_MAX_URL_GLOBS` or cannot be read."""
    results = [""]
    i = 0
    while i < len(text):
        char = text[i]
        choices: list[str]
        if char == "\\" and i + 1 < len(text):
            choices, i = [text[i + 1]], i + 2
        elif char in "{[":
            close = text.find("}" if char == "{" else "]", i)
            if close < 0:
                return None
            body = text[i + 1 : close]
            found = body.split(",") if char == "{" else _curl_range(body)
            if found is None:
                return None
            choices, i = found, close + 1
        else:
            choices, i = [char], i + 1
        if len(results) * len(choices) > _MAX_URL_GLOBS:
            return None
        results = [done + choice for done in results for choice in choices]
    return results


def _curl_range(body: str) -> list[str] | None:
    spec, _, step_text = body.partition(":")
    first, dash, last = spec.partition("-")
    if not dash:
        return None
    step = int(step_text) if step_text.isdigit() and int(step_text) > 0 else 1
    if first.isdigit() and last.isdigit():
        low, high = int(first), int(last)
        if high < low or (high - low) // step >= _MAX_URL_GLOBS:
            return None
        width = len(first) if first.startswith("0") else 0
        return [str(n).zfill(width) for n in range(low, high + 1, step)]
    if len(first) == 1 and len(last) == 1 and first.isalpha() and last.isalpha() and first <= last:
        return [chr(n) for n in range(ord(first), ord(last) + 1, step)]
    return None


def _upload_files(value: str) -> tuple[str, ...]:
    """curl -T: a glob (``{a,b}``, ``[1-3]``) uploads every file it names; one too large to
    list may name any file, ``/`` among them."""
    if "{" not in value and "[" not in value:
        return (value,)
    return tuple(curl_globs(value) or ("/",))


def _cookie_file(value: str) -> tuple[str, ...]:
    """curl -b: a value without ``=`` is a file of cookies."""
    return () if "=" in value else (value,)


def _variable_file(value: str) -> tuple[str, ...]:
    """curl --variable ``NAME@FILE`` reads FILE."""
    name, at, path = value.partition("@")
    return (path,) if at and "=" not in name and path else ()


def _date_or_file(value: str) -> tuple[str, ...]:
    """tar -N/--newer/--mtime, curl -z: a value starting with ``/`` or ``.`` names a file
    (its date is used); a name without either may be one too (curl), so any value counts."""
    return (value,) if value else ()


def _default(name: str) -> Callable[[str], tuple[str, ...]]:
    """A value that is optional: the file written when it is left out (gawk -d writes awkvars.out)."""
    return lambda value: (value or name,)


# -- git ------------------------------------------------------------------------------

_GIT_GLOBAL = opts(
    ("-C", DIR, "yes"),
    ("-c --config-env --exec-path --git-dir", CODE, "yes"),
    ("--work-tree", DIR, "yes"),
    ("--namespace --super-prefix --list-cmds --attr-source", None, "yes"),
)
#: The diff and revision options every command that shows commits or diffs accepts.
_GIT_DIFF = opts(
    ("--output", WRITE, "yes"),
    ("--ext-diff --textconv", CODE, "no"),
    ("-O", READ, "attached"),
    ("--relative", None, "attached"),
)
#: What a git command that is not in the table may still take: these long options run
#: code or write a file wherever git accepts them.
_GIT_ANY = opts(
    ("--output", WRITE, "yes"),
    ("--ext-diff --textconv", CODE, "no"),
    ("--upload-pack --receive-pack --exec --template --config --extcmd --tool", CODE, "yes"),
    ("--export-marks --output-directory --separate-git-dir", WRITE, "yes"),
    ("--import-marks --import-marks-if-exists --file --contents", READ, "yes"),
)
_GIT_FETCH = opts(
    ("--upload-pack -u --exec", CODE, "yes"),
    ("--config -c --template", CODE, "yes"),
    ("--separate-git-dir", WRITE, "yes"),
)


def _git_config(argv: Sequence[str], at: int) -> str | None:
    rest = argv[at + 1 :]
    if any(item in ("--get", "--get-all", "--get-regexp", "--list", "-l", "get", "list") for item in rest):
        return READ
    operands = [item for item in rest if not item.startswith("-")]
    return (
        CODE
        if len(operands) >= 2
        or any(item in ("--edit", "-e", "--add", "--unset", "set", "edit", "unset") for item in rest)
        else READ
    )


def _git_runs(argv: Sequence[str], at: int) -> str | None:
    return CODE


def _git_diffs(**more: Option) -> Program:
    """A git command that takes the diff and revision options (log, shortlog, stash ...)."""
    return Program(options={**_GIT_DIFF, **more})


GIT = Program(
    options=_GIT_GLOBAL,
    subcommands={
        **{
            name: _git_diffs()
            for name in (
                "diff",
                "log",
                "show",
                "whatchanged",
                "range-diff",
                "diff-tree",
                "diff-files",
                "diff-index",
                "diff-pairs",
                "shortlog",
                "rev-list",
                "reflog",
                "stash",
                "cherry-pick",
                "revert",
                "replay",
                "last-modified",
                "cherry",
            )
        },  # fmt: skip
        "blame": _git_diffs(**opts(("--contents -S", READ, "yes"))),
        "annotate": _git_diffs(**opts(("--contents -S", READ, "yes"))),
        "format-patch": _git_diffs(**opts(("-o --output-directory", WRITE, "yes"))),
        "fast-export": _git_diffs(
            **opts(("--export-marks", WRITE, "yes"), ("--import-marks --import-marks-if-exists", READ, "yes"))
        ),
        "fast-import": Program(
            options=opts(("--export-marks", WRITE, "yes"), ("--import-marks --import-marks-if-exists", READ, "yes"))
        ),
        "grep": Program(
            options=opts(("-O --open-files-in-pager", CODE, "attached"), ("-f", READ, "yes"), ("-e", None, "yes")),
            pattern_first=True,
        ),
        "fetch": Program(options=_GIT_FETCH),
        "pull": Program(options=_GIT_FETCH),
        "clone": Program(options=_GIT_FETCH),
        "ls-remote": Program(options=_GIT_FETCH),
        "fetch-pack": Program(options=opts(("--upload-pack --exec", CODE, "yes"))),
        "send-pack": Program(options=opts(("--receive-pack --exec", CODE, "yes"))),
        "init": Program(options=opts(("--template", CODE, "yes"), ("--separate-git-dir", WRITE, "yes"))),
        "submodule": Program(subcommand_rule=lambda argv, at: CODE if "foreach" in argv[at + 1 :] else None),
        "push": Program(options=opts(("--receive-pack --exec", CODE, "yes"))),
        "archive": Program(options=opts(("--exec --remote", CODE, "yes"), ("-o --output", WRITE, "yes"))),
        "rebase": Program(options=opts(("-x --exec", CODE, "yes"))),
        "bisect": Program(
            options=_GIT_DIFF, subcommand_rule=lambda argv, at: CODE if "run" in argv[at + 1 :] else None
        ),
        "commit": Program(options=opts(("-F --file -t --template", READ, "yes"))),
        "tag": Program(options=opts(("-F --file", READ, "yes"))),
        "notes": Program(options=opts(("-F --file", READ, "yes"))),
        "config": Program(options=opts(("-f --file", READ, "yes")), subcommand_rule=_git_config),
        "filter-branch": Program(subcommand_rule=_git_runs),
        "filter-repo": Program(subcommand_rule=_git_runs),
        "difftool": _git_diffs(**opts(("-x --extcmd -t --tool", CODE, "yes"))),
        "mergetool": Program(options=opts(("-t --tool", CODE, "yes"))),
        "send-email": _git_diffs(**opts(("--to-cmd --cc-cmd --sendmail-cmd --smtp-server --header-cmd", CODE, "yes"))),
        "daemon": Program(subcommand_rule=_git_runs),
        "instaweb": Program(subcommand_rule=_git_runs),
        "bundle": Program(
            options=_GIT_DIFF, subcommand_rule=lambda argv, at: WRITE if "create" in argv[at + 1 :] else None
        ),
        "apply": Program(options=opts(("--directory", WRITE, "yes"))),
        "worktree": Program(subcommand_rule=lambda argv, at: WRITE if "add" in argv[at + 1 :] else None),
        "rm": Program(
            options=opts(("--pathspec-from-file", READ, "yes")),
            operands=WRITE,
            deletes=True,
            keeps=frozenset({"--cached", "-n", "--dry-run"}),
        ),
        "mv": Program(operands=WRITE, deletes=True, keeps=frozenset({"-n", "--dry-run"})),
    },
)
#: The scan for a git command not in the table.
GIT_OTHER = Program(options=_GIT_ANY)

# -- the table --------------------------------------------------------------------------

_GREP = Program(
    options=opts(
        ("-R --dereference-recursive", FOLLOW, "no"),
        ("-f --file --exclude-from", READ, "yes"),
        (
            "-e --regexp -m --max-count -A -B -C --after-context --before-context --context -d -D --directories --devices"
            " --include --exclude --exclude-dir --label --binary-files --group-separator",
            None,
            "yes",
        ),
        ("--color --colour", None, "attached"),
        (
            "-r --recursive -n -i -l -L -c -v -w -x -o -q -s -h -H -E -F -G -P -z -Z -a -I -b -T -U --null"
            " --line-number --ignore-case --no-ignore-case --files-with-matches --files-without-match --count"
            " --invert-match --word-regexp --line-regexp --only-matching --quiet --silent --no-messages --no-filename"
            " --with-filename --extended-regexp --fixed-strings --basic-regexp --perl-regexp --null-data --text"
            " --byte-offset --initial-tab --line-buffered --no-group-separator",
            None,
            "no",
        ),
    ),
    pattern_first=True,
)
_RG = Program(
    options=opts(
        ("-L --follow", FOLLOW, "no"),
        ("-f --file --ignore-file", READ, "yes"),
        ("--pre --hostname-bin", CODE, "yes"),
        (
            "-e --regexp -g --glob --iglob -t --type -T --type-not --type-add --type-clear -m --max-count -A -B -C"
            " --after-context --before-context --context -j --threads -M --max-columns --max-filesize -r --replace"
            " --sort --sortr --path-separator --pre-glob --max-depth -d --encoding -E --engine --colors --color"
            " --field-match-separator --field-context-separator --context-separator --dfa-size-limit --regex-size-limit",
            None,
            "yes",
        ),
    ),
    pattern_first=True,
)
_SORT = Program(
    options=opts(
        ("-o --output", WRITE, "yes"),
        ("--compress-program", CODE, "yes"),
        ("--files0-from --random-source", READ, "yes"),
        ("-T --temporary-directory", WRITE, "yes"),
        ("-k --key -t --field-separator -S --buffer-size --parallel --batch-size", None, "yes"),
    )
)
_SED = Program(
    options=opts(
        ("-i --in-place", WRITE, "attached"),
        ("-f --file", CODE_FILE, "yes"),
        ("-e --expression", SCRIPT, "yes"),
        ("-l --line-length", None, "yes"),
        (
            "-s --separate -n --quiet --silent -E -r --regexp-extended -z --null-data -u --unbuffered --posix --debug"
            " --sandbox --follow-symlinks -b --binary --help --version",
            None,
            "no",
        ),
    ),
    script=_sed_script,
)
_AWK = Program(
    options=opts(
        ("-f --file -E --exec -i --include", CODE_FILE, "yes"),
        ("-l --load", CODE, "yes"),
        ("-e --source", SCRIPT, "yes"),
        ("-v --assign -F --field-separator", None, "yes"),
        ("-d --dump-variables", WRITE, "attached", _default("awkvars.out")),
        ("-o --pretty-print -p --profile", WRITE, "attached", _default("awkprof.out")),
        ("-D --debug", CODE, "attached"),  # the debugger runs the commands in the file
        ("-L --lint", None, "attached"),
        (
            "-b --characters-as-bytes -c --traditional -C --copyright -g --gen-pot -h --help -M --bignum -N"
            " --use-lc-numeric -n --non-decimal-data -O --optimize -P --posix -r --re-interval -s --no-optimize -S"
            " --sandbox -t --lint-old -V --version --csv -k",
            None,
            "no",
        ),
    ),
    script=_awk_script,
    given=frozenset({"-f", "--file", "-E", "--exec", "-e", "--source"}),
    dash_w=True,
)
#: tar's options that take a value, as letters of its old style (``tar cfb a.tar 20``).
TAR_VALUE_LETTERS = "bCfFgHIKLNTVX"
TAR = Program(
    options=opts(
        (
            "--to-command --use-compress-program -I --checkpoint-action --info-script -F --new-volume-script --rsh-command"
            " --rmt-command",
            CODE,
            "yes",
        ),
        ("-T --files-from -X --exclude-from --owner-map --group-map", READ, "yes"),
        ("-N --newer --after-date --newer-mtime --mtime", READ, "yes", _date_or_file),
        ("-C --directory", DIR, "yes"),
        ("-f --file", WRITE, "yes"),
        ("-g --listed-incremental --index-file --volno-file", WRITE, "yes"),
        ("--one-top-level", WRITE, "attached"),
        ("-h --dereference -P --absolute-names", FOLLOW, "no"),
        ("--remove-files", WRITE, "no"),
        (
            "--exclude -b --blocking-factor -H --format --owner --group --mode --transform --xform --strip-components"
            " -K --starting-file -V --label -L --tape-length --suffix --quoting-style --sort --level --record-size"
            " --xattrs-include --xattrs-exclude --pax-option --hole-detection --warning --atime-preserve --exclude-tag"
            " --exclude-tag-all --exclude-tag-under --exclude-ignore --exclude-ignore-recursive",
            None,
            "yes",
        ),
        ("--backup --checkpoint --occurrence", None, "attached"),
        (
            "--list --create --extract --get --append --update --concatenate --delete --diff --compare --test-label"
            " --verbose --gzip --gunzip --ungzip --bzip2 --xz --lzma --lzip --lzop --zstd --compress --uncompress"
            " --auto-compress --no-auto-compress --to-stdout --keep-old-files --keep-newer-files --overwrite"
            " --overwrite-dir --skip-old-files --no-recursion --recursion --verify --totals --show-transformed-names"
            " --wildcards --no-wildcards --anchored --no-anchored --ignore-case --no-ignore-case --numeric-owner"
            " --preserve-permissions --same-permissions --same-owner --no-same-owner --no-same-permissions --sparse"
            " --null --no-null --multi-volume --interactive --confirmation --ignore-zeros --ignore-failed-read"
            " --one-file-system --acls --no-acls --xattrs --no-xattrs --selinux --no-selinux --utc --full-time"
            " --unlink-first --recursive-unlink --check-device --no-check-device --check-links --exclude-vcs"
            " --exclude-vcs-ignores --exclude-caches --exclude-caches-all --exclude-caches-under --exclude-backups"
            " --force-local --block-number --help --version --usage --touch --delay-directory-restore"
            " --no-delay-directory-restore --show-defaults --show-omitted-dirs",
            None,
            "no",
        ),
    )
)
_CURL = Program(
    options=opts(
        (
            "-o --output -D --dump-header -c --cookie-jar --trace --trace-ascii --stderr --etag-save --libcurl"
            " --output-dir --hsts --alt-svc --ssl-sessions",
            WRITE,
            "yes",
        ),
        ("-O --remote-name --remote-name-all -J --remote-header-name", WRITE, "no"),
        ("-K --config", CODE_FILE, "yes"),
        ("--engine", CODE, "yes"),
        ("-T --upload-file", READ, "yes", _upload_files),
        (
            "--netrc-file --cacert --capath --cert --key --etag-compare --crlfile --pinnedpubkey"
            " --proxy-cacert --proxy-capath --proxy-cert --proxy-key --proxy-crlfile --proxy-pinnedpubkey"
            " --unix-socket --abstract-unix-socket --ech",
            READ,
            "yes",
        ),
        ("-b --cookie", READ, "yes", _cookie_file),
        (
            "-d --data --data-ascii --data-binary --json -H --header --proxy-header -w --write-out",
            READ,
            "yes",
            _at_file,
        ),
        ("--data-urlencode --url-query", READ, "yes", _encoded_file),
        ("-F --form", READ, "yes", _form_file),
        ("--variable", READ, "yes", _variable_file),
        ("-z --time-cond", READ, "yes", _date_or_file),
        (
            "-X --request -u --user -A --user-agent -e --referer -x --proxy -m --max-time --data-raw --form-string"
            " --connect-timeout -r --range --url --resolve --connect-to -U --proxy-user --retry --limit-rate -E"
            " --cert-type --key-type --oauth2-bearer --proto --proto-redir --max-redirs --interface",
            None,
            "yes",
        ),
    )
)
_WGET = Program(
    options=opts(
        (
            "-O --output-document -o --output-file -a --append-output -P --directory-prefix --save-cookies"
            " --warc-file --rejected-log --hsts-file",
            WRITE,
            "yes",
        ),
        ("-e --execute --config --use-askpass", CODE, "yes"),
        (
            "-i --input-file --post-file --body-file --load-cookies --ca-certificate --certificate --private-key"
            " --ca-directory --crl-file",
            READ,
            "yes",
        ),
        ("-U --user-agent --header --post-data --method -t --tries -T --timeout -l --level", None, "yes"),
    )
)
_COPY = Program(
    options=opts(
        ("-t --target-directory", WRITE, "yes"), ("-S --suffix", None, "yes"), ("-L --dereference", FOLLOW, "no")
    ),
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
    ),
)
_NPM = Program(
    command_first=True,
    options=opts(
        ("--prefix -C --userconfig --globalconfig --script-shell --node-options -c --call", CODE, "yes"),
    ),
)
_MAKE = Program(
    options=opts(
        ("-f --file --makefile", CODE_FILE, "yes"),
        ("--eval -E", CODE, "yes"),
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
        ("-files0-from", READ, "yes"),
    ),
)
_VIM = Program(
    options=opts(
        ("-c --cmd", CODE, "yes"),
        ("-S -u -U -s", CODE_FILE, "yes"),  # a script of Ex or Normal-mode commands
        ("-w -W -i --startuptime", WRITE, "yes"),
        ("-V", WRITE, "attached"),
        ("-e -E --remote --remote-send --remote-expr --remote-silent --remote-wait --remote-tab", CODE, "no"),
        ("-q -t -T --servername -r", None, "yes"),
    ),
    plus_code=True,
)
_LESS = Program(
    options=opts(
        ("-o --log-file -O --LOG-FILE", WRITE, "yes"),
        ("-k --lesskey-file --lesskey-src", CODE_FILE, "yes"),
        ("--lesskey-content", CODE, "yes"),
        ("-T --tag-file", READ, "yes"),
        (
            "-t --tag -b --buffers -h --max-back-scroll -j --jump-target -x --tabs -y --max-forw-scroll -z --window"
            " -p --pattern -P --prompt",
            None,
            "yes",
        ),
    ),
    plus_code=True,
)
_COMPRESS = Program(
    options=opts(("-S --suffix", None, "yes")),
    operands=WRITE,
    deletes=True,
    keeps=frozenset({"-c", "-k", "-l", "-t", "--stdout", "--to-stdout", "--keep", "--list", "--test"}),
)
_UNIQ = Program(
    options=opts(
        ("-f --skip-fields -s --skip-chars -w --check-chars", None, "yes"),
        ("-D --all-repeated --group", None, "attached"),
    ),
    last_operand=WRITE,
)
_TREE = Program(
    options=opts(
        ("-o", WRITE, "yes"),
        ("-l", FOLLOW, "no"),
        ("--fromfile --gitfile --infofile", READ, "attached"),
        ("-P -I -L -H -T --charset --filelimit --timefmt --sort", None, "yes"),
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
    "rsync": Program(
        options=opts(
            ("-e --rsh --rsync-path", CODE, "yes"),
            (
                "--files-from --exclude-from --include-from --password-file --read-batch --compare-dest --copy-dest"
                " --link-dest",
                READ,
                "yes",
            ),
            ("--log-file --write-batch --only-write-batch --backup-dir -T --temp-dir --partial-dir", WRITE, "yes"),
            ("-L --copy-links --copy-unsafe-links -k --copy-dirlinks", FOLLOW, "no"),
            (
                "--delete --delete-before --delete-during --delete-delay --delete-after --delete-excluded --del"
                " --remove-source-files",
                WRITE,
                "no",
            ),
            (
                "-f --filter --exclude --include --chmod --chown -B --block-size --max-size --min-size --timeout"
                " --bwlimit --suffix --port",
                None,
                "yes",
            ),
        ),
        last_operand=WRITE,
    ),
    "scp": Program(options=opts(("-S -o -F", CODE, "yes"), ("-i", READ, "yes")), last_operand=WRITE),
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
    "less": _LESS,
    **{name: _VIM for name in ("vim", "vi", "nvim", "view", "ex", "gvim", "vimdiff", "rvim", "gview", "evim")},
    "zip": Program(
        options=opts(("-T -TT --unzip-command", CODE, "attached"), ("-m --move", WRITE, "no")), pattern_first=False
    ),
    "unzip": Program(options=opts(("-d", WRITE, "yes"))),
    "patch": Program(
        options=opts(
            ("-o --output -r --reject-file", WRITE, "yes"), ("-i --input", READ, "yes"), ("-d --directory", DIR, "yes")
        )
    ),
    "split": Program(
        options=opts(
            ("--filter", CODE, "yes"),
            (
                "-a --suffix-length -b --bytes -C --line-bytes -l --lines -n --number -t --separator"
                " --additional-suffix",
                None,
                "yes",
            ),
        ),
        last_operand=WRITE,
    ),
    "csplit": Program(options=opts(("-f --prefix", WRITE, "yes"), ("-b --suffix-format -n --digits", None, "yes"))),
    "uniq": _UNIQ,
    "ls": Program(
        options=opts(
            ("-L --dereference", FOLLOW, "no"),
            (
                "-I --ignore -w --width -T --tabsize --block-size --format --hide --indicator-style --quoting-style --sort"
                " --time --time-style",
                None,
                "yes",
            ),
            ("--color --colour", None, "attached"),
        )
    ),
    "tree": _TREE,
    "du": Program(
        options=opts(
            ("-L --dereference", FOLLOW, "no"),
            ("--files0-from -X --exclude-from", READ, "yes"),
            ("-d --max-depth -B --block-size -t --threshold --exclude --time-style", None, "yes"),
        )
    ),
    "wc": Program(options=opts(("--files0-from", READ, "yes"))),
    "date": Program(options=opts(("-f --file -r --reference", READ, "yes"), ("-d --date", None, "yes"))),
    "jq": Program(
        options=opts(
            ("-f --from-file", READ, "yes"), ("-L", READ, "yes"), ("--arg --argjson --slurpfile --rawfile", None, "yes")
        ),
        pattern_first=True,
    ),
    **{
        name: _COMPRESS
        for name in (
            "gzip",
            "gunzip",
            "bzip2",
            "bunzip2",
            "xz",
            "unxz",
            "lzma",
            "unlzma",
            "lzip",
            "pigz",
            "compress",
            "uncompress",
            "zstd",
            "unzstd",
        )
    },
    "ssh": Program(options=opts(("-o -F -E -S -i", CODE, "yes"))),
    "docker": Program(subcommand_rule=lambda argv, at: CODE, command_first=True),
    **{
        name: Program(command_first=True)
        for name in ("cargo", "go", "kubectl", "helm", "gh", "poetry", "uv", "terraform", "systemctl")
    },
    "crontab": Program(subcommand_rule=lambda argv, at: CODE),
}
