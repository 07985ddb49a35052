"""A real workspace and a real snapshot for judging `run_command` lines.

The snapshot includes the shipped `workspace-tools` and `permissions-default` packs
plus one Policy document whose allow rule lists command patterns; the workspace is a
folder on disk with a `.env`, source files, a tar archive, toolrt's own folders and a
symbolic link that leads out of it, so globs expand and paths resolve as they would
where the line runs.
"""

from __future__ import annotations

import io
import os
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from runtime import Call, Session, load_snapshot
from runtime.pipeline.lookup import lookup
from runtime.pipeline.validate import validate
from runtime.policy.decision import decide
from runtime.policy.placed import Where
from runtime.records import BoundCall, Decision, ValidatedCall
from runtime.snapshot import Snapshot

#: The read-style allow rule the guarantees are stated for.
READ_ONLY = (
    "ls *",
    "cat *",
    "git status *",
    "git diff *",
    "grep *",
    "sort *",
    "head *",
    "wc *",
    "find *",
    "sed *",
    "awk *",
    "tar *",
    "curl *",
)

#: READ_ONLY and wildcards for every other program the hostile lines use, so that the
#: only thing between such a line and `allow` is the word under test.
WIDE = (
    *READ_ONLY,
    "git *",
    "git grep *",
    "git log *",
    "git show *",
    "git fetch *",
    "rg *",
    "python *",
    "python3 *",
    "node *",
    "make *",
    "pytest *",
    "dd *",
    "cp *",
    "mv *",
    "rm *",
    "ln *",
    "echo *",
    "printf *",
    "cd *",
    "gawk *",
    "shopt *",
    "set *",
    "export *",
    "read *",
    "true",
    "touch *",
    "mkdir *",
    "chmod *",
    "tail *",
    "uniq *",
    "xargs *",
    "env *",
)

INCLUDE = """\
apiVersion: toolrt/v1
kind: Include
metadata: {name: packs}
spec: {packs: [workspace-tools, permissions-default, redaction-default, output-default]}
"""


def policy(commands: Sequence[str]) -> str:
    """The Include of the shipped packs and a Policy allowing ``commands`` for run_command."""
    if not commands:
        return INCLUDE
    listed = ", ".join("'" + c.replace("'", "''") + "'" for c in commands)
    return (
        INCLUDE
        + "---\napiVersion: toolrt/v1\nkind: Policy\nmetadata: {name: shell}\nspec:\n  rules:\n"
        + f"    - {{name: read-only-commands, effect: allow, tools: [run_command], commands: [{listed}]}}\n"
    )


def build_snapshot(folder: Path, commands: Sequence[str]) -> Snapshot:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "c.yaml").write_text(policy(commands))
    return load_snapshot([folder])


@dataclass(frozen=True)
class Place:
    """A workspace on disk, toolrt's own paths in and next to it, and a folder outside it."""

    root: Path
    outside: Path  # a folder next to the workspace, reachable through `link_to_outside`
    audit: Path  # toolrt's audit log, kept outside the workspace

    @property
    def protected(self) -> tuple[Path, ...]:
        return (self.root / ".toolrt", self.root / "toolrt.d", self.audit)

    def where(self, outside: str = "ask") -> Where:
        return Where.of(self.root, protected=self.protected, outside=outside)


def make_place(base: Path) -> Place:
    """A workspace with a secret, sources, data files, an archive, toolrt's own folders
    and links; toolrt's audit log and another folder next to it."""
    root = base / "ws"
    outside = base / "outside"
    for folder in (root / "src", root / "docs", root / ".toolrt", root / "toolrt.d", root / "sub", outside):
        folder.mkdir(parents=True)
    files = {
        ".env": "API_KEY=secret\n",
        "README.md": "# demo\n",
        "a.txt": "b\na\nb\n",
        "names.txt": "bob\nalice\n",
        "data.txt": "x 1 200\ny 2 50\n",
        "notes.md": "TODO: more\n",
        "Makefile": "test:\n\ttrue\n",
        "pyproject.toml": "[project]\nname = 'demo'\n",
        "src/a.py": "print('a')  # TODO\n",
        "src/b.py": "print('b')\n",
        "src/app.py": "def main():\n    return 1\n",
        "docs/guide.md": "guide\n",
        "sub/x": "x\n",
        ".toolrt/audit.sqlite3": "",
        "toolrt.d/p.yaml": "kind: Policy\n",
        "x": "x\n",
    }
    for name, text in files.items():
        (root / name).write_text(text)
    (outside / "x").write_text("outside\n")
    audit = base / "audit.sqlite3"
    audit.write_text("")
    os.symlink(outside, root / "link_to_outside")
    os.symlink(root, root / "sub" / "back_to_ws")  # a link that stays inside the workspace
    os.symlink(outside, root / "docs" / "lnk")  # a link out of the workspace, one folder down
    with tarfile.open(root / "a.tar", "w") as archive:
        data = b"hello\n"
        info = tarfile.TarInfo("hello.txt")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return Place(root, outside, audit)


def validated(
    snapshot: Snapshot,
    line: str,
    mode: str = "default",
    cwd: str | None = None,
    session_id: str = "s1",
) -> ValidatedCall:
    args: dict[str, object] = {"command": line}
    if cwd is not None:
        args["cwd"] = cwd
    bound = lookup(Call("1", "run_command", args), snapshot)
    assert isinstance(bound, BoundCall), bound
    call = validate(bound, Session(id=session_id, mode=mode), snapshot)
    assert isinstance(call, ValidatedCall), call
    return call


def judge(
    snapshot: Snapshot,
    line: str,
    *,
    mode: str = "default",
    where: Where | None = None,
    cwd: str | None = None,
) -> Decision:
    """The permission decision for ``line`` run by run_command in ``mode``, placed in ``where``."""
    call = validated(snapshot, line, mode, cwd)
    if where is None:
        return decide(call, Session(mode=mode), snapshot)
    return decide(call, Session(mode=mode), snapshot, where=where)
