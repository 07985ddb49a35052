"""Paths in command lines read as the kernel reads them, for the placing layer
(:mod:`runtime.policy.placed`): where a path's text leads from a folder (inside the
workspace, outside it, toolrt's own files or a folder holding them), and the small
readings of words it needs (``..`` after a name, ``ln`` targets, option values)."""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
from collections.abc import Iterator, Sequence

from runtime.policy import linking, programs
from runtime.policy.placecache import Check, components, resolve_below_stat
from runtime.policy.where import Where
from runtime.policy.where import within as _within

_DEVICE_ROOTS = ("/proc", "/sys", "/dev")
# A process's own state under /proc (environment, open files, root, working folder):
# through the parent's id it is toolrt's.
PROCESS_STATE = re.compile(r"/proc/+[^/]+(?:/+task/+[^/]+)?/+(?:environ|cwd|root|fd|fdinfo|map_files|mem|exe)(?:/|$)")
_HARMLESS_DEVICES = frozenset({"/dev/null"})


def place_now(where: Where, resolved: list[Check], cwd: str, text: str, *, write: bool) -> str:
    """ "inside", "outside", "holds" or "protected" for a path's ``text`` read from ``cwd``
    as the files are now; what the answer rests on is appended to ``resolved``."""
    if not text.startswith("/") and cwd.startswith("/"):
        text = posixpath.join(cwd, text)
    root = where.root_text
    # The kernel applies `..` to where a link led, not to the text before it
    # (`sub/link_to_ws/..` is the workspace's parent): such paths resolve as written.
    physical = ".." in text and dotdot_after_name(text if text.startswith("/") else posixpath.join(cwd, text))
    if text.startswith("/"):
        text = "/" + text.lstrip("/")  # `//proc` is `/proc`
        absolute = posixpath.normpath(text)
        if absolute in _HARMLESS_DEVICES:
            return "inside"
        if PROCESS_STATE.match(absolute):
            return "protected"  # another process's (toolrt's own) environment, files, root or directory
        if any(absolute == device or absolute.startswith(device + "/") for device in _DEVICE_ROOTS):
            return "outside"
        path = text if physical else absolute
    else:
        relative = posixpath.normpath(posixpath.join(cwd, text))
        if root is None:
            # Without the workspace, where a `..` after a name leads is unknown.
            return "outside" if physical or relative == ".." or relative.startswith("../") else "inside"
        if physical:
            path = f"{root}/{posixpath.join(cwd, text)}"
        else:
            path = posixpath.normpath(f"{root}/{relative}") if relative.startswith("..") else f"{root}\0{relative}"
    if root is None:
        real = path
    else:
        base, separator, below = path.partition("\0")
        if separator:
            real, st = resolve_below_stat(base, below)
        else:
            real, st = os.path.realpath(path), None
        resolved.append((path, real, components(path, real)))
        if st is None:
            with contextlib.suppress(OSError):
                st = os.lstat(real)
        if st is not None and st.st_nlink > 1 and where.inodes.holds(st):
            return "protected"  # a hard link: toolrt's own file under another name
    for protected in where.protected:
        if protected.holds_text(real):
            return "protected"
        if write and (_within(protected.text, real) or (protected.nested and _within(real, protected.text))):
            return "holds"
    if root is None or not _within(real, root):
        return "outside"
    return "inside"


def settled(word: str) -> bool:
    """Whether a brace variant is a plain word (no glob, no ``~``, no ``$``): known now."""
    return not word.startswith("~") and not any(char in word for char in "*?[$`")


def dotdot_after_name(path: str) -> bool:
    """Whether a ``..`` in ``path`` follows a name (where it leads then depends on
    whether that name is a link)."""
    seen_name = False
    for part in path.split("/"):
        if part == "..":
            if seen_name:
                return True
        elif part not in ("", "."):
            seen_name = True
    return False


def symlink_targets(argv: tuple[str, ...]) -> dict[int, list[str]]:
    """For ``ln -s`` (without -r): each relative target's argv index, and the target as
    read from each folder the link may be made in (relative to where ``ln`` runs)."""
    if not argv or posixpath.basename(argv[0]) != "ln" or relative_ln(argv):
        return {}
    found: dict[int, list[str]] = {}
    for effect in linking.name_effects(argv):
        source = effect.source or ""
        if effect.kind != linking.ALIAS or not source or source.startswith(("/", "~")):
            continue
        names = []
        if effect.into is not True:
            names.append(effect.made)
        if effect.into is not False:
            names.append(posixpath.join(effect.made, posixpath.basename(source.rstrip("/")) or "."))
        found.setdefault(effect.index, []).extend(posixpath.join(posixpath.dirname(name), source) for name in names)
    return found


def relative_ln(argv: Sequence[str]) -> bool:
    """Whether ``ln`` may be given -r (--relative), also inside a bundle of short options."""
    for item in argv[1:]:
        if item == "--":
            return False
        if item == "--relative" or (item.startswith("-") and not item.startswith("--") and "r" in item[1:]):
            return True
    return False


def rests_after(cwd: str, text: str, made: str) -> Iterator[str]:
    """For a path (``text`` read from ``cwd``) with a ``..`` after a name: what follows
    each leading part that names ``made`` (as ``_joined`` spells names), with its ``..``
    kept, to be read from where ``made`` leads."""
    raw = text if text.startswith("/") else posixpath.join(cwd, text)
    if ".." not in raw or not dotdot_after_name(raw):
        return
    absolute = raw.startswith("/")
    parts = [part for part in raw.split("/") if part not in ("", ".")]
    for k in range(1, len(parts)):
        if ".." not in parts[k:]:
            return  # the normalised reading already covers what follows
        prefix = posixpath.normpath("/".join(parts[:k]))
        if absolute:
            prefix = "/" + prefix.lstrip("/")
        if prefix == made:
            yield "/" + "/".join(parts[k:])


def path_text(item: str) -> str:
    """The path an item names: the value of ``--opt=value`` or of ``-oVALUE``, else the item."""
    if item.startswith("-") and "=" in item:
        return item.partition("=")[2]
    if item.startswith("-") and not item.startswith("--") and len(item) > 2:
        return item[2:]
    return item


def short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def relinked(root: str | None, made: str, stands_for: str, rest: str) -> Iterator[str]:
    """A copied or moved folder's symbolic links keep their text: for each relative
    link on ``rest`` below ``stands_for`` now (in the workspace ``root``), the path read from
    the copy ``made``."""
    if root is None or stands_for.startswith("~"):
        return
    base = stands_for if stands_for.startswith("/") else f"{root}/{stands_for}"
    parts = [part for part in rest.split("/") if part]
    for k in range(len(parts)):
        try:
            text = os.readlink(posixpath.join(base, *parts[: k + 1]))
        except OSError:
            continue
        if not text.startswith("/"):
            yield posixpath.join(made, *parts[:k], text, *parts[k + 1 :])


def names_folder(argv: tuple[str, ...]) -> bool:
    """Whether the command works in a folder an option names (``-C DIR``, ``--directory``)."""
    return any(access.kind == programs.DIR for access in programs.accesses(argv))
