"""Paths as the kernel reads them, and what a remembered placement rests on.

:func:`runtime.policy.placed.place` resolves every path-like word of a command line
(symbolic links, ``..`` after a link, hard links to toolrt's files). Agents send the
same lines again and again, so a placed line is remembered with the facts it rests on
and reused only while they hold. Checking them must cost less than judging again:

- each fact is recorded while the line is judged as a :data:`Check`;
- :func:`compile_checks` turns them, once, into the fewest ``lstat`` calls that prove
  them again: an existing path component must still be the same entry (inode, type,
  and for a file a single name), and a name that did not exist, or a ``.git`` that was
  a folder, is proven by its folder's entries being unchanged (inode, mtime and ctime:
  any entry made, removed or renamed in a folder changes both, and ctime cannot be set
  back by a user). A folder changed within the last :data:`RACY_NS` is not trusted
  (its timestamps may not have ticked since the change), so the line is not remembered;
- :func:`still_valid` makes those calls, one per distinct path.

A fact that went through a symbolic link is proven by resolving the path again.
"""

from __future__ import annotations

import os
import posixpath
import stat
import time

#: What a placement rests on, per path: the path (``root\0relative`` or absolute), what it
#: resolved to (or :data:`KIND_MARK` and a kind), and, when no link was on the way, the
#: components to lstat.
Check = tuple[str, str, tuple[str, ...] | None]

KIND_MARK = "\0kind:"  # a check of what kind of entry a path is, not of where it leads
DIR = KIND_MARK + "dir"  # the path is a real folder
ABSENT = KIND_MARK + "absent"  # nothing has this name
ENTRIES = KIND_MARK + "entries"  # the folder's entries are unchanged

#: A folder whose mtime or ctime is this recent is not trusted to show later changes:
#: timestamps come from a clock that ticks coarsely (a jiffy; seconds on some file systems).
RACY_NS = 2_000_000_000

# (path, folder?, inode, mtime or mode, ctime or link count (None for a folder's own))
_Expect = tuple[str, bool, int, int, int | None]
#: A compiled set of checks: the lstat expectations, and the checks proven by resolving again.
Validator = tuple[tuple[_Expect, ...], tuple[Check, ...]]


def compile_checks(checks: list[Check] | tuple[Check, ...]) -> Validator | None:
    """The fewest lstat expectations that prove ``checks`` again, taken now; None when
    the line should not be remembered (a folder changed too lately, a file with several
    names, or the facts no longer hold)."""
    wanted: dict[str, bool] = {}  # path -> its entries must be unchanged (True) or it must be the same entry
    slow: list[Check] = []
    for check in checks:
        path, real, components = check
        if real.startswith(KIND_MARK):
            if real == ENTRIES:
                wanted[path] = True
            else:  # a name that is a folder, or is absent: its folder's entries prove it
                wanted[posixpath.dirname(path)] = True
            continue
        if components is None:
            slow.append(check)
            continue
        parent = path.partition("\0")[0] if "\0" in path else "/"
        for component in components:
            try:
                mode = os.lstat(component).st_mode
            except OSError:
                wanted[parent] = True  # absent from here on: the folder above proves it stays so
                break
            if stat.S_ISLNK(mode):
                return None
            wanted.setdefault(component, False)
            parent = component
    now = time.time_ns()
    expects: list[_Expect] = []
    for path, entries in wanted.items():
        try:
            st = os.lstat(path)
        except OSError:
            return None
        mode = st.st_mode
        if entries:
            if not stat.S_ISDIR(mode) or now - max(st.st_mtime_ns, st.st_ctime_ns) < RACY_NS:
                return None
            expects.append((path, True, st.st_ino, st.st_mtime_ns, st.st_ctime_ns))
        elif stat.S_ISDIR(mode):
            if wanted.get(posixpath.dirname(path)) is not True:  # else its folder's entries prove it
                expects.append((path, False, st.st_ino, mode, None))
        elif stat.S_ISLNK(mode) or (stat.S_ISREG(mode) and st.st_nlink > 1):
            return None
        else:
            expects.append((path, False, st.st_ino, mode, st.st_nlink))
    # The snapshot is taken: the facts the line was judged on must still hold after it.
    if not all(still(check) for check in checks):
        return None
    return tuple(expects), tuple(slow)


def still_valid(validator: Validator) -> bool:
    """Whether the facts behind ``validator`` still hold: one lstat per path."""
    expects, slow = validator
    lstat = os.lstat
    for path, folder, inode, first, second in expects:
        try:
            st = lstat(path)
        except OSError:
            return False
        if st.st_ino != inode:
            return False
        if folder:
            if st.st_mtime_ns != first or st.st_ctime_ns != second:
                return False
        elif st.st_mode != first or (second is not None and st.st_nlink != second):
            return False
    return all(still(check) for check in slow)


def still(check: Check) -> bool:
    """Whether a path resolves as it did: no component has become a link (or, for a
    path that went through one, the whole path resolves the same), and it is not a
    file with several names (a hard link may be toolrt's own file: judged again)."""
    path, real, components = check
    if real.startswith(KIND_MARK):
        return still_kind(path, real[len(KIND_MARK) :])
    if components is None:
        if resolve(path) != real:
            return False
        try:
            return not has_other_names(os.lstat(real))
        except OSError:
            return True
    st = None
    for component in components:
        try:
            st = os.lstat(component)
        except OSError:
            return True  # neither this nor anything below it exists: nothing to follow
        if stat.S_ISLNK(st.st_mode):
            return False
    return st is None or not has_other_names(st)


def still_kind(path: str, kind: str) -> bool:
    """Whether ``path`` is (still) a real folder (``kind`` "dir") or nothing ("absent");
    "entries" holds while it is a folder (its timestamps are compared by the validator)."""
    try:
        st = os.lstat(path)
    except OSError:
        return kind == "absent"
    return kind in ("dir", "entries") and stat.S_ISDIR(st.st_mode)


def has_other_names(st: os.stat_result) -> bool:
    """Whether ``st`` is a regular file with more than one name."""
    return st.st_nlink > 1 and stat.S_ISREG(st.st_mode)


def components(path: str, real: str) -> tuple[str, ...] | None:
    """The components of ``path`` to lstat when it resolved without a link, else None."""
    root, separator, relative = path.partition("\0")
    if not separator:
        root, relative = "", path.lstrip("/")
    lexical = f"{root}/{relative}" if relative not in ("", ".") else (root or "/")
    if posixpath.normpath(lexical) != real:
        return None  # a link (or ..) on the way: compare the whole resolution
    parts = [part for part in relative.split("/") if part and part != "."]
    return tuple(f"{root}/" + "/".join(parts[: k + 1]) for k in range(len(parts)))


def resolve(path: str) -> str:
    """A path with its symbolic links resolved: through :func:`resolve_below` when it is
    written as ``root\0relative`` (the root already resolved), else realpath."""
    root, separator, relative = path.partition("\0")
    return resolve_below(root, relative) if separator else os.path.realpath(path)


def resolve_below(root: str, relative: str) -> str:
    """``root/relative`` with symbolic links resolved, for a resolved ``root``: one
    ``lstat`` per component that exists (realpath would walk the root's own too)."""
    return resolve_below_stat(root, relative)[0]


def resolve_below_stat(root: str, relative: str) -> tuple[str, os.stat_result | None]:
    """:func:`resolve_below`, and the ``lstat`` of the last component when it was reached
    without a link (None when it does not exist or a link was on the way)."""
    if relative == ".":
        return root, None
    current = root
    parts = relative.split("/")
    st = None
    for k, part in enumerate(parts):
        current = f"{current}/{part}"
        try:
            st = os.lstat(current)
        except OSError:
            return "/".join([current, *parts[k + 1 :]]), None  # the rest does not exist: nothing to follow
        if stat.S_ISLNK(st.st_mode):
            return os.path.realpath("/".join([current, *parts[k + 1 :]])), None
    return current, st
