"""What a command does to the names later commands of the same line will use.

A line is judged before it runs, against the files as they are now. A command that
makes a link, copies one, or moves a name changes where a later path leads:
``cp -P sub/link docs/up; cat docs/up/secret`` reads through a link that does not exist
yet. :func:`name_effects` says, from the argv alone, which names a command makes and
what they will stand for, so :mod:`runtime.policy.placed` can judge later paths as what
they will be:

- ``alias``: the name ``made`` will lead where ``source`` leads (a symbolic link to it,
  a copy that keeps links as links, the same thing moved);
- ``hard``: ``made`` will be new names (hard links) for the files of ``source``;
- ``unknown``: the command writes links whose targets the line does not show (an
  archive, a patch, a checkout) anywhere below ``made``.

:func:`tree_writers` names the folders a program rewrites from input the line does not
show (``patch``, ``git apply``, ``git reset --hard``): a write of the whole folder.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass

from runtime.policy import programs

ALIAS = "alias"
HARD = "hard"
UNKNOWN_LINKS = "unknown"


@dataclass(frozen=True, slots=True)
class NameEffect:
    """One name a command makes: ``made`` (as written, relative to where the command
    runs), what it stands for (``source``; for a symbolic link, its target as the kernel
    reads it: relative to the link's folder), and whether ``made`` is a folder the
    sources go into (None: when it exists as a folder, as ``cp`` decides)."""

    kind: str
    made: str
    source: str | None = None
    into: bool | None = False
    index: int = 0  # the argv item that names the source (or the program)


# Options that take a value, per program (long ones also take it attached with `=`).
_VALUED = {
    "cp": {
        "-S",
        "--suffix",
        "-t",
        "--target-directory",
        "--backup",
        "--sparse",
        "--reflink",
        "--preserve",
        "--no-preserve",
        "--context",
    },
    "mv": {"-S", "--suffix", "-t", "--target-directory", "--backup", "--context"},
    "ln": {"-S", "--suffix", "-t", "--target-directory", "--backup"},
    "rsync": {
        "-e",
        "--rsh",
        "-f",
        "--filter",
        "--exclude",
        "--include",
        "--exclude-from",
        "--include-from",
        "--files-from",
        "-B",
        "--block-size",
        "-T",
        "--temp-dir",
        "--partial-dir",
        "--compare-dest",
        "--copy-dest",
        "--link-dest",
        "--backup-dir",
        "--suffix",
        "--chmod",
        "--chown",
        "--usermap",
        "--groupmap",
        "--log-file",
        "--log-file-format",
        "--password-file",
        "--port",
        "--timeout",
        "--contimeout",
        "--bwlimit",
        "--max-size",
        "--min-size",
        "--modify-window",
        "--out-format",
        "--rsync-path",
        "--info",
        "--debug",
        "--checksum-choice",
        "--cc",
        "--compress-choice",
        "--zc",
        "--compress-level",
        "--zl",
        "--skip-compress",
        "--max-delete",
        "--sockopts",
        "--outbuf",
        "-M",
        "--remote-option",
        "--iconv",
        "--stop-after",
        "--stop-at",
        "--write-batch",
        "--only-write-batch",
        "--read-batch",
        "--protocol",
        "--checksum-seed",
        "--address",
        "--max-alloc",
    },
}
# Short flags, per program, that take the rest of their bundle or the next word.
_SHORT_VALUED = {"cp": "St", "mv": "St", "ln": "St", "rsync": "efBTM"}

# Programs that unpack links from input the line does not show.
_UNPACKERS = frozenset(
    {"unzip", "bsdtar", "cpio", "7z", "7za", "7zr", "ar", "dpkg-deb", "rpm2cpio", "pax", "unsquashfs"}
)
# git subcommands that write the work tree from the repository (links included).
_GIT_TREE_WRITERS = frozenset(
    {
        "apply",
        "am",
        "checkout",
        "switch",
        "restore",
        "reset",
        "stash",
        "merge",
        "pull",
        "rebase",
        "cherry-pick",
        "revert",
        "read-tree",
        "checkout-index",
        "worktree",
        "submodule",
        "clone",
        "bisect",
        "sparse-checkout",
    }
)


def name_effects(argv: Sequence[str]) -> tuple[NameEffect, ...]:
    """The names ``argv`` makes that later paths of the line may go through."""
    if not argv:
        return ()
    program = posixpath.basename(argv[0])
    if program in ("cp", "mv", "ln", "rsync"):
        return _copying(program, argv)
    if program in ("tar", "gtar"):
        return _tar(argv)
    if program in _UNPACKERS or program == "patch":
        return (NameEffect(UNKNOWN_LINKS, _folder_option(argv, ("-d", "-C", "--directory")) or ".", index=0),)
    if program == "git":
        sub, folder = git_subcommand(argv)
        if sub in _GIT_TREE_WRITERS:
            return (NameEffect(UNKNOWN_LINKS, folder, index=0),)
    return ()


def tree_writers(argv: Sequence[str]) -> tuple[str, ...]:
    """Folders ``argv`` rewrites as a whole, from input the line does not show (the
    files a patch or a commit names): judged as a write of the folder."""
    if not argv:
        return ()
    program = posixpath.basename(argv[0])
    if program == "patch":
        return (_folder_option(argv, ("-d", "--directory")) or ".",)
    if program == "bsdtar" and _tar(argv):
        return (_folder_option(argv, ("-C", "--cd", "--directory")) or ".",)
    if program == "cpio" and _cpio_extracts(argv):
        return (_folder_option(argv, ("-D", "--directory")) or ".",)
    if program == "cpio" and _cpio_passes(argv):
        # Pass-through mode copies the files named on its input into its destination folder.
        return tuple(item for item in argv[1:] if not item.startswith("-"))[-1:] or (".",)
    if program == "git":
        sub, folder = git_subcommand(argv)
        if sub == "clone":
            return (posixpath.join(folder, _clone_target(argv)),)
        if sub in _GIT_TREE_WRITERS - {"clone", "worktree", "submodule"}:
            return (folder,)
    return ()


def _cpio_extracts(argv: Sequence[str]) -> bool:
    """Whether cpio runs in copy-in mode (-i, --extract), which writes the files it reads."""
    return any(
        item == "--extract" or (item.startswith("-") and not item.startswith("--") and "i" in item[1:])
        for item in argv[1:]
    )


_CLONE_VALUED = frozenset(
    {
        "-b",
        "--branch",
        "-o",
        "--origin",
        "-u",
        "--upload-pack",
        "--depth",
        "--reference",
        "--reference-if-able",
        "-c",
        "--config",
        "--template",
        "--separate-git-dir",
        "-j",
        "--jobs",
        "--filter",
        "--shallow-since",
        "--shallow-exclude",
        "--server-option",
        "--bundle-uri",
        "--ref-format",
    }
)


def _clone_target(argv: Sequence[str]) -> str:
    """The folder ``git clone`` makes: its second operand, else the repository's name."""
    start = list(argv).index("clone") + 1 if "clone" in argv else len(argv)
    operands: list[str] = []
    k = start
    while k < len(argv):
        item = argv[k]
        if item == "--":
            operands += argv[k + 1 :]
            break
        if item.startswith("-"):
            k += 2 if item in _CLONE_VALUED else 1
            continue
        operands.append(item)
        k += 1
    if len(operands) >= 2:
        return operands[1]
    name = posixpath.basename(operands[0].rstrip("/")) if operands else ""
    name = name.rpartition(":")[2]
    return (name[:-4] if name.endswith(".git") else name) or "."


def _cpio_passes(argv: Sequence[str]) -> bool:
    """Whether cpio runs in pass-through mode (-p, --pass-through)."""
    return any(
        item == "--pass-through" or (item.startswith("-") and not item.startswith("--") and "p" in item[1:])
        for item in argv[1:]
    )


def _copying(program: str, argv: Sequence[str]) -> tuple[NameEffect, ...]:
    flags: set[str] = set()
    target_dir: str | None = None
    operands: list[tuple[int, str]] = []
    valued, short_valued = _VALUED[program], _SHORT_VALUED[program]
    k, ended = 1, False
    while k < len(argv):
        item = argv[k]
        if ended or item == "-" or not item.startswith("-"):
            operands.append((k, item))
        elif item == "--":
            ended = True
        elif item.startswith("--"):
            name, eq, value = item.partition("=")
            if name in valued and not eq and k + 1 < len(argv):
                k += 1
                value = argv[k]
            if name == "--target-directory":
                target_dir = value
            flags.add(name)
        else:
            for j, letter in enumerate(item[1:], 1):
                flags.add("-" + letter)
                if letter in short_valued:
                    value = item[j + 1 :]
                    if not value and k + 1 < len(argv):
                        k += 1
                        value = argv[k]
                    if letter == "t":
                        target_dir = value
                    break
        k += 1
    if not operands and target_dir is None:
        return ()
    into: bool | None
    if target_dir is not None:
        sources, made, into = operands, target_dir, True
    elif len(operands) < 2:
        if program != "ln" or not operands:
            return ()
        sources, made, into = operands, ".", True  # `ln -s target`: a link named like it, here
    else:
        sources, made = operands[:-1], operands[-1][1]
        into = True if len(sources) > 1 else (False if flags & {"-T", "--no-target-directory"} else None)
    kind = _copy_kind(program, flags)
    if kind is None:
        return ()
    return tuple(NameEffect(kind, made, source, into, index) for index, source in sources)


def _copy_kind(program: str, flags: set[str]) -> str | None:
    if program == "mv":
        return ALIAS
    if program == "ln":
        return ALIAS if flags & {"-s", "--symbolic"} else HARD
    if program == "cp":
        if flags & {"-l", "--link"}:
            return HARD
        if flags & {"-s", "--symbolic-link"}:
            return ALIAS
        keeps_links = flags & {"-P", "-d", "-a", "--archive", "--no-dereference", "-r", "-R", "--recursive"}
        follows = flags & {"-L", "--dereference", "-H"}
        return ALIAS if keeps_links and not follows else None
    # rsync keeps links as links with -l / -a, and hard links with -H.
    if flags & {"-H", "--hard-links"}:
        return HARD
    return ALIAS if flags & {"-l", "--links", "-a", "--archive"} else None


def _tar(argv: Sequence[str]) -> tuple[NameEffect, ...]:
    first = argv[1] if len(argv) > 1 else ""
    words = " ".join(argv[1:])
    old_style = bool(first) and not first.startswith("-") and "x" in first
    extracts = old_style or any(
        item in ("--extract", "--get") or (item.startswith("-") and not item.startswith("--") and "x" in item)
        for item in argv[1:]
    )
    if not extracts and "--extract" not in words:
        return ()
    return (NameEffect(UNKNOWN_LINKS, _folder_option(argv, ("-C", "--directory")) or ".", index=0),)


def _folder_option(argv: Sequence[str], names: Sequence[str]) -> str | None:
    """The value of the last of ``names`` (``-C DIR``, ``-CDIR``, ``--directory=DIR``)."""
    found = None
    for k, item in enumerate(argv[1:], 1):
        for name in names:
            if item == name and k + 1 < len(argv):
                found = argv[k + 1]
            elif name.startswith("--") and item.startswith(name + "="):
                found = item[len(name) + 1 :]
            elif not name.startswith("--") and item.startswith(name) and len(item) > len(name):
                found = item[len(name) :]
    return found


def git_subcommand(argv: Sequence[str]) -> tuple[str, str]:
    """git's subcommand and the folder it runs in (``-C`` values joined, else ``.``);
    ``stash show`` and ``stash list`` read only, and are named ``stash-show``."""
    k = programs.git_subcommand_index(argv)
    end = len(argv) if k is None else k
    folder = "."
    for i in range(1, end - 1):
        if argv[i] == "-C" and (i == 1 or not _takes_value(argv[i - 1])):
            folder = posixpath.join(folder, argv[i + 1])
    if k is None:
        return "", folder
    if argv[k] == "stash" and k + 1 < len(argv) and argv[k + 1] in ("show", "list"):
        return "stash-" + argv[k + 1], folder
    return argv[k], folder


def _takes_value(option: str) -> bool:
    """Whether git's global ``option`` takes the next word as its value."""
    known = programs.GIT.options.get(option)
    return known is not None and known.value == "yes" and "=" not in option
