"""Helpers shared by the workspace tests: the hostile directory tree, and functions run in child processes."""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import filelock

from runtime.workspace import EditConflict, FileEditor, FileReader, ReadCache, Workspace


@dataclass
class Tree:
    """A workspace root, its hostile neighbours and the tools over it."""

    base: Path  # holds everything below; only ``root`` is the workspace
    root: Path
    outside: Path
    evil: Path  # the sibling whose name starts like the root's: <root>-evil
    locks: Path
    ws: Workspace
    reader: FileReader
    editor: FileEditor
    cache: ReadCache

    def outside_snapshot(self) -> dict[str, str]:
        """Every file outside the workspace (under ``base``, locks excluded) with its SHA-256."""
        found: dict[str, str] = {}
        for dirpath, dirnames, filenames in os.walk(self.base, followlinks=False):
            here = Path(dirpath)
            if here == self.root or self.root in here.parents or here == self.locks:
                dirnames[:] = []
                continue
            for name in filenames:
                path = here / name
                found[str(path.relative_to(self.base))] = (
                    hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "?"
                )
            dirnames[:] = [d for d in dirnames if (here / d) != self.root]
        return found


def build_tree(base: Path) -> Tree:
    """The traversal-corpus tree (see test_sandbox_paths.py for what each link is for)."""
    root = base / "ws"
    outside = base / "outside"
    evil = base / "ws-evil"
    for directory in (root, outside, evil):
        directory.mkdir()
    (outside / "secret.txt").write_text("outside secret\n")
    (evil / "secret.txt").write_text("sibling secret\n")
    files = {
        "sub/file.txt": "hello\n",
        "sub/.env": "TOKEN=1\n",
        ".git/config": "[core]\n",
        ".git/HEAD": "ref: refs/heads/main\n",
        "keys/server.pem": "-----BEGIN-----\n",
        "with space/file name.txt": "spaces\n",
        "ünïcødé/文件.txt": "unicode\n",
        "%2e%2e/literal.txt": "literal\n",
        "..foo": "dots\n",
        "foo..": "dots\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    links = {
        "link_out": "../outside",
        "abs_link_out": "/etc",
        "passwd_link": "/etc/passwd",
        "chain1": "chain2",
        "chain2": "chain3",
        "chain3": "../outside",
        "chain_in1": "chain_in2",
        "chain_in2": "sub",
        "link_in": "sub",
        "dangling_out": "../outside/missing.txt",
        "dangling_out_abs": "/nonexistent-toolrt-dir/x.txt",
        "dangling_dir_out": "../outside-missing-dir",
        "dangling_in": "sub/missing.txt",
        "loop1": "loop2",
        "loop2": "loop1",
        "env_link": "sub/.env",
        "evil_sibling_link": "../ws-evil",
        "sub/up": "..",
        "sub/upup": "../..",
    }
    for rel, target in links.items():
        os.symlink(target, root / rel)
    locks = base / "locks"
    ws = Workspace(root)
    cache = ReadCache(racy_window_s=0.0)
    return Tree(
        base,
        ws.root,
        outside,
        evil,
        locks,
        ws,
        FileReader(ws, cache),
        FileEditor(ws, locks, cache, lock_timeout_s=5.0),
        cache,
    )


def plain_tree(base: Path) -> Tree:
    """An empty workspace ``base/ws`` with empty neighbours and the tools over it."""
    root = base / "ws"
    root.mkdir()
    (base / "outside").mkdir()
    (base / "ws-evil").mkdir()
    ws = Workspace(root)
    cache = ReadCache(racy_window_s=0.0)
    locks = base / "locks"
    return Tree(
        base,
        ws.root,
        base / "outside",
        base / "ws-evil",
        locks,
        ws,
        FileReader(ws, cache),
        FileEditor(ws, locks, cache, lock_timeout_s=5.0),
        cache,
    )


# -- functions run in child processes (multiprocessing "forkserver": importable by name) --


def version_text(version: int, size: int) -> str:
    """Version ``version`` of the crash-test file: a header line, then ``size`` bytes of 1 KiB lines naming it."""
    line = f"{version:08d} " + "x" * 1014 + "\n"
    return f"version {version:08d}\n" + line * (size // len(line))


def rewrite_forever(
    root: str, locks: str, name: str, progress: str, sizes: tuple[int, ...], first: int, named: bool = False
) -> None:
    """Replace ``name`` with version ``first``, ``first + 1``, ... until killed; log each finished version.
    ``named``: write through a named temporary file, as where the kernel has no ``O_TMPFILE``."""
    if named and hasattr(os, "O_TMPFILE"):
        del os.O_TMPFILE
    editor = FileEditor(Workspace(root), locks, None, lock_timeout_s=30.0)
    version = first
    while True:
        editor.edit(name, "replace", content=version_text(version, sizes[version % len(sizes)]))
        # One small O_APPEND write: the log line is either there or not.
        fd = os.open(progress, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{version}\n".encode())
        finally:
            os.close(fd)
        version += 1


def count_and_log(root: str, locks: str, name: str, worker: int, edits: int, report: str) -> None:
    """Apply ``edits`` edits with expected_hash, re-reading on every conflict.

    Even edits increment this worker's counter line (the new value comes from what was
    read, so a lost update would show as a wrong total); odd edits append a log line.
    """
    ws = Workspace(root)
    cache = ReadCache()
    reader = FileReader(ws, cache)
    editor = FileEditor(ws, locks, cache, lock_timeout_s=60.0)
    counter = re.compile(rf"count\[p{worker}\]=(\d+)$", re.MULTILINE)
    conflicts = 0
    for k in range(edits):
        while True:
            seen = reader.read(name)
            try:
                if k % 2 == 0:
                    match = counter.search(seen.text)
                    if match is None:
                        raise RuntimeError(f"counter of worker {worker} missing")
                    value = int(match.group(1))
                    editor.edit(
                        name,
                        "str_replace",
                        old_string=f"count[p{worker}]={value}\n",
                        new_string=f"count[p{worker}]={value + 1}\n",
                        expected_hash=seen.sha256,
                    )
                else:
                    editor.edit(name, "append", content=f"log p{worker} #{k}\n", expected_hash=seen.sha256)
                break
            except EditConflict:
                conflicts += 1
    Path(report).write_text(json.dumps({"worker": worker, "conflicts": conflicts, "editor": editor.stats()}))


def hold_lock(lock_path: str, acquired: Any, release: Any) -> None:
    """Hold the file lock at ``lock_path`` until ``release`` is set (events from the parent)."""
    lock = filelock.FileLock(lock_path)
    with lock:
        acquired.set()
        release.wait(60)


def edit_big_file_forever(root: str, locks: str, how: str, ready: Any) -> None:
    """file_edit's editor replaces big.txt (a million lines) again and again until killed;
    ``ready`` is set once the first edit is done. ``how="named"``: without unnamed
    temporary files, as on a kernel or file system that has no O_TMPFILE."""
    if how == "named" and hasattr(os, "O_TMPFILE"):
        del os.O_TMPFILE
    from runtime.tools.workspace_tools import WorkspaceTools

    tools = WorkspaceTools.create(Path(root), (), Path(locks))
    n = 0
    while True:
        n += 1
        tools.editor.edit("big.txt", "replace", content=(f"edit {n}\n" * 1_000_000))
        if n == 1:
            ready.set()
