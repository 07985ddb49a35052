"""Workspace.open_file: the one-call open (openat2, no link anywhere) and the long way agree.

Every path of the traversal corpus is read through FileReader twice, with the
one-call open and with it switched off, and must give the same text or the same
refusal. Separate tests prove the one-call open is really taken for plain paths and
really refuses links, hard links to toolrt's files and deny globs.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from test_sandbox_paths import ALLOWED, DENIED, ESCAPES, _fill
from ws_helpers import Tree

from runtime.errors import ToolError
from runtime.workspace import FileReader, ReadCache, Workspace, WorkspaceError, nolinks, sandbox
from runtime.workspace.hardlinks import ProtectedInodes

EXTRA = {
    "plain_nested": "sub/file.txt",
    "directory": "sub",
    "directory_with_slash": "sub/",
    "root": ".",
    "missing": "sub/missing.txt",
    "missing_dir": "nope/file.txt",
    "file_as_dir": "sub/file.txt/x",
    "unicode": "ünïcødé/文件.txt",
    "spaces_only_name": "   ",
    "link_in_middle": "link_in/file.txt",
    "link_to_root": "sub/up/sub/file.txt",
    "dotenv_link": "env_link",
    "surrogate": "sub/\udcff.txt",
    "line_separator": "sub/\u2028.txt",
    "long_name": "sub/" + "n" * 256,
}
PATHS = {**ESCAPES, **{k: v for k, v in ALLOWED.items()}, **DENIED, **EXTRA}


def _outcome(reader: FileReader, path: str) -> str:
    try:
        return "ok: " + reader.read(path).render()
    except ToolError as err:
        return f"{type(err).__name__}: {err}"


def _no_openat2(path: bytes, flags: int) -> int:
    return -errno.ENOSYS


@pytest.mark.parametrize("case", list(PATHS), ids=list(PATHS))
def test_the_one_call_open_and_the_long_way_read_the_same(
    tree: Tree, case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = PATHS[case] if isinstance(PATHS[case], str) else PATHS[case][0]
    path = _fill(path, tree)
    fast = _outcome(FileReader(tree.ws, ReadCache(racy_window_s=0.0)), path)
    monkeypatch.setattr(sandbox, "open_no_links", _no_openat2)
    slow = _outcome(FileReader(tree.ws, ReadCache(racy_window_s=0.0)), path)
    assert fast == slow


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    results: list[int] = []
    real = nolinks.open_no_links

    def counted(path: bytes, flags: int) -> int:
        results.append(real(path, flags))
        return results[-1]

    monkeypatch.setattr(sandbox, "open_no_links", counted)
    return results


def test_a_plain_path_is_opened_in_one_call(tree: Tree, monkeypatch: pytest.MonkeyPatch) -> None:
    results = _counting(monkeypatch)
    if nolinks.open_no_links(str(tree.root / "sub/file.txt").encode(), os.O_RDONLY) == -errno.ENOSYS:
        pytest.skip("openat2 is not available on this kernel")
    assert tree.reader.read("sub/file.txt").text.endswith("hello")
    assert len(results) == 1 and results[0] >= 0


def test_a_link_on_the_way_makes_the_one_call_open_step_aside(tree: Tree, monkeypatch: pytest.MonkeyPatch) -> None:
    results = _counting(monkeypatch)
    assert tree.reader.read("link_in/file.txt").path == "sub/file.txt"  # inside: the long way follows it
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        tree.reader.read("link_out/secret.txt")
    assert all(result < 0 for result in results)


def test_a_directory_swapped_for_a_link_to_outside_is_never_read(tree: Tree) -> None:
    (tree.root / "swap").mkdir()
    (tree.root / "swap" / "secret.txt").write_text("inside\n")
    assert "inside" in tree.reader.read("swap/secret.txt").text
    (tree.root / "swap" / "secret.txt").unlink()
    (tree.root / "swap").rmdir()
    (tree.root / "swap").symlink_to(tree.outside)
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        tree.reader.read("swap/secret.txt")


def test_deny_globs_hold_on_the_one_call_path(tree: Tree, monkeypatch: pytest.MonkeyPatch) -> None:
    results = _counting(monkeypatch)
    for path in ("sub/.env", ".git/config", "keys/server.pem", "KEYS/SERVER.PEM"):
        with pytest.raises(WorkspaceError, match="protected|not found"):
            tree.reader.read(path)
    assert results == []  # refused before anything was opened


def test_a_hard_link_to_a_toolrt_file_is_refused_on_the_one_call_path(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    config = tmp_path / "toolrt.yaml"
    config.write_text("secret: config\n")
    os.link(config, root / "notes.txt")
    ws = Workspace(root, protected_inodes=ProtectedInodes([(config, False)]))
    with pytest.raises(WorkspaceError, match="hard link"):
        FileReader(ws).read("notes.txt")
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        with pytest.raises(WorkspaceError):
            FileReader(ws).read("notes.txt")
    assert len(os.listdir("/proc/self/fd")) == before  # the refused descriptor was closed


def test_directories_and_fifos_are_refused_without_leaking_descriptors(tree: Tree) -> None:
    os.mkfifo(tree.root / "sub" / "pipe")
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        with pytest.raises(WorkspaceError, match="is a directory"):
            tree.reader.read("sub")
        with pytest.raises(WorkspaceError, match="not a regular file"):
            tree.reader.read("sub/pipe")
    assert len(os.listdir("/proc/self/fd")) == before


def _resolved(ws: Workspace, path: str, kwargs: dict[str, bool]) -> str:
    try:
        r = ws.resolve(path, **kwargs)
    except WorkspaceError as err:
        return f"refused: {err}"
    return f"{r.given}|{r.location}|{r.relative}|{r.exists}|{r.is_dir}|{r.is_file}|{r.absolute}"


RESOLVE_EXTRA = {
    "for_write_dir": "sub",
    "temp_name": ".toolrt-tmp-abc",
    "fifo": "sub/pipe",
    "final_link_inside": "link_in",
    "final_link_out": "link_out",
    "dangling": "dangling_in",
}


@pytest.mark.parametrize("case", [*PATHS, *RESOLVE_EXTRA])
def test_the_one_call_lookup_and_the_long_way_resolve_the_same(
    tree: Tree, case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = PATHS[case] if case in PATHS else RESOLVE_EXTRA[case]
    path = _fill(raw if isinstance(raw, str) else raw[0], tree)
    os.mkfifo(tree.root / "sub" / "pipe")
    (tree.root / ".toolrt-tmp-abc").write_text("temp\n")
    runs = ({}, {"must_exist": False}, {"for_write": True, "must_exist": False}, {"for_write": True})
    fast = [_resolved(tree.ws, path, kwargs) for kwargs in runs]
    monkeypatch.setattr(sandbox, "open_no_links", _no_openat2)
    slow = [_resolved(Workspace(tree.root), path, kwargs) for kwargs in runs]
    assert fast == slow


def test_a_plain_existing_path_is_resolved_in_one_lookup(tree: Tree, monkeypatch: pytest.MonkeyPatch) -> None:
    results = _counting(monkeypatch)
    if nolinks.open_no_links(str(tree.root / "sub/file.txt").encode(), os.O_RDONLY) == -errno.ENOSYS:
        pytest.skip("openat2 is not available on this kernel")
    assert tree.ws.resolve("sub/file.txt", for_write=True).relative == "sub/file.txt"
    assert tree.ws.resolve("./sub//file.txt").relative == "sub/file.txt"
    assert len(results) == 2 and all(result >= 0 for result in results)
