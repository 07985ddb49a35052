"""git's entry in the per-program table (:mod:`runtime.policy.program_table`): global
options, subcommands and the options that write files or run code."""

from __future__ import annotations

from collections.abc import Sequence

from runtime.policy.program_kinds import CODE, DIR, READ, WRITE, Option, Program, opts

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
