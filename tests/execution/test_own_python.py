"""toolrt's own Python children (the isolated handler's and the audit writer's) never import
a module an agent wrote: not from the workspace they start in, not from a relative or
in-workspace ``PYTHONPATH`` entry. Real Runtimes, real children, a workspace full of modules
named like the ones the children import, each of which would leave a mark if imported.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from runtime import Call, Runtime, Session
from runtime.audit import AuditWriter, query
from runtime.audit.record import call_item
from runtime.audit.remote import ProcessSink
from runtime.execution import own_python
from runtime.records import Status, ToolResult
from runtime.settings import Settings

TOOLS = """\
apiVersion: toolrt/v1
kind: Tool
metadata: {name: iso}
spec:
  description: An isolated handler.
  handler: python:own_python_handlers:run
  read_only: true
  process_isolation: true
  input_schema: {type: object}
---
apiVersion: toolrt/v1
kind: Policy
metadata: {name: all}
spec:
  rules:
    - {name: all, effect: allow, tools: ["*"]}
"""

# Modules a child imports (or the interpreter looks for at start-up), as an agent could
# write them into its workspace: each leaves a file named after itself when imported.
HOSTILE_MODULES = [
    "runtime",  # the package itself
    "json",
    "asyncio",
    "inspect",
    "threading",
    "pathlib",
    "typing",
    "sitecustomize",
    "usercustomize",
    "secrets",
    "types",
    "enum",
    "functools",
    "re",
    "dataclasses",
    "importlib",
    "sqlite3",
    "pickle",
    "struct",
    "fcntl",
    "hashlib",
    "select",
    "signal",
    "loguru",
    "re2",
    "orjson",
    "own_python_handlers",  # the handler's own module name
]


def _plant(folder: Path, marks: Path) -> None:
    """Every hostile module in ``folder``, as a file and (for the package names) a package."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in HOSTILE_MODULES:
        body = f"import pathlib\npathlib.Path({str(marks / name)!r}).write_text('imported')\n"
        if name in ("runtime", "asyncio", "importlib", "sqlite3"):
            (folder / name).mkdir(exist_ok=True)
            (folder / name / "__init__.py").write_text(body)
        else:
            (folder / f"{name}.py").write_text(body)


def _runtime(root: Path, **settings: Any) -> Runtime:
    config, workspace = root / "config", root / "ws"
    config.mkdir()
    (config / "tools.yaml").write_text(TOOLS)
    (config / "own_python_handlers.py").write_text("def run(args):\n    return 'handled'\n")
    return Runtime([config], workspace_root=workspace, settings=Settings(hot_reload=False, **settings))


@pytest.fixture
def marks(tmp_path: Path) -> Path:
    folder = tmp_path / "marks"
    folder.mkdir()
    return folder


def test_an_isolated_handler_imports_nothing_an_agent_wrote_into_the_workspace(tmp_path: Path, marks: Path) -> None:
    _plant(tmp_path / "ws", marks)
    runtime = _runtime(tmp_path, audit_sink="off")
    try:
        (result,) = runtime.run_turn_sync([Call("c1", "iso", {})], Session())
    finally:
        runtime.close_sync()
    assert result.content == "handled", result.content
    assert sorted(path.name for path in marks.iterdir()) == []


@pytest.mark.parametrize(
    "entries",
    [
        lambda ws: ".",
        lambda ws: "",
        lambda ws: "lib",
        lambda ws: "./lib:",
        lambda ws: str(ws),
        lambda ws: str(ws / "lib"),
        lambda ws: f"{ws}/../ws/lib",
    ],
    ids=["dot", "empty", "relative", "relative-and-empty", "workspace", "inside", "inside-by-dots"],
)
def test_an_isolated_handler_reads_no_pythonpath_entry_an_agent_can_write_to(
    tmp_path: Path, marks: Path, monkeypatch: pytest.MonkeyPatch, entries: Any
) -> None:
    workspace = tmp_path / "ws"
    _plant(workspace, marks)
    _plant(workspace / "lib", marks)
    monkeypatch.setenv("PYTHONPATH", entries(workspace))
    runtime = _runtime(tmp_path, audit_sink="off")
    try:
        (result,) = runtime.run_turn_sync([Call("c1", "iso", {})], Session())
    finally:
        runtime.close_sync()
    assert result.content == "handled", result.content
    assert sorted(path.name for path in marks.iterdir()) == []


def test_an_isolated_handler_of_a_config_named_by_a_relative_path_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ws").mkdir()
    config = Path("config")
    config.mkdir()
    (config / "tools.yaml").write_text(TOOLS)
    (config / "own_python_handlers.py").write_text("def run(args):\n    return 'handled'\n")
    runtime = Runtime([config], workspace_root=tmp_path / "ws", settings=Settings(hot_reload=False, audit_sink="off"))
    try:
        (result,) = runtime.run_turn_sync([Call("c1", "iso", {})], Session())
    finally:
        runtime.close_sync()
    assert result.content == "handled", result.content


def test_the_audit_child_imports_nothing_from_the_folder_the_app_runs_in(
    tmp_path: Path, marks: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app_folder = tmp_path / "ws"  # an app run in its agent's workspace
    _plant(app_folder, marks)
    monkeypatch.chdir(app_folder)
    monkeypatch.setenv("PYTHONPATH", f".:{app_folder}:{tmp_path / 'elsewhere'}")
    store = tmp_path / "audit" / "audit.sqlite3"
    store.parent.mkdir()
    audit = AuditWriter(ProcessSink("sqlite", store, untrusted=[app_folder]), flush_interval_s=0.01)
    sink = audit.sink
    assert isinstance(sink, ProcessSink)
    sink.start()
    for i in range(300):
        result = ToolResult(call_id=f"c{i}", name="noop", status=Status.ok, content="ok", metadata={"status": "ok"})
        audit.submit(call_item(result, "s1", f"req-{i}", None, {"i": i}, None))
    assert audit.flush(60)
    assert audit.close(timeout=60)
    assert len(query(store, limit=None)) == 300
    assert sorted(path.name for path in marks.iterdir()) == []


def test_a_runtime_writing_its_audit_in_a_child_from_its_workspace_imports_nothing_from_it(
    tmp_path: Path, marks: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _plant(tmp_path / "ws", marks)
    monkeypatch.chdir(tmp_path / "ws")
    runtime = _runtime(tmp_path, audit_sink="sqlite", audit_writer="process", audit_store=str(tmp_path / "a.db"))
    try:
        results = runtime.run_turn_sync([Call(f"c{i}", "iso", {}) for i in range(3)], Session())
        assert runtime.audit is not None and runtime.audit.flush(60)
    finally:
        runtime.close_sync()
    assert [result.content for result in results] == ["handled"] * 3
    with sqlite3.connect(tmp_path / "a.db") as conn:
        assert conn.execute("SELECT count(*) FROM calls").fetchone()[0] == 3
    assert sorted(path.name for path in marks.iterdir()) == []


def test_the_child_command_puts_nothing_first_on_its_import_path() -> None:
    argv = own_python.own_module_argv("runtime.audit.child", "a", "b")
    assert argv[:4] == [sys.executable, "-P", "-m", "runtime.audit.child"] and argv[4:] == ["a", "b"]


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        (None, []),
        ("", []),
        (".", []),
        ("rel:./x:../y", []),
        ("/abs/one:/abs/two", ["/abs/one", "/abs/two"]),
        ("/abs/one::.:/abs/one", ["/abs/one"]),
        ("{ws}", []),
        ("{ws}/sub:/abs/ok", ["/abs/ok"]),
        ("{ws}/../ws/sub", []),
        ("{ws}-sibling", ["{ws}-sibling"]),  # a folder beside the workspace, not in it
    ],
)
def test_the_child_environment_keeps_only_absolute_entries_outside_the_untrusted_folders(
    tmp_path: Path, given: str | None, kept: list[str]
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    base = {"HOME": "/home/x"} if given is None else {"HOME": "/home/x", "PYTHONPATH": given.format(ws=workspace)}
    env = own_python.own_module_env(base, [workspace])
    entries = [entry for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry]
    expected = [entry.format(ws=workspace) for entry in kept]
    if not own_python._installed(own_python.PACKAGE_ROOT):
        expected.append(own_python.PACKAGE_ROOT)
    assert entries == expected
    assert env["HOME"] == "/home/x" and base.get("PYTHONPATH") == (
        None if given is None else given.format(ws=workspace)
    )


def test_a_workspace_reached_through_a_link_is_still_untrusted(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "link").symlink_to(workspace)
    env = own_python.own_module_env({"PYTHONPATH": f"{tmp_path / 'link'}/lib"}, [workspace])
    assert f"{tmp_path / 'link'}/lib" not in env.get("PYTHONPATH", "")
