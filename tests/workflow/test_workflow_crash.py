"""Crash and resume: a real process running a workflow is killed with SIGKILL at random
points (after a random number of journal rows, plus a random jitter), and the run is
resumed from the journal. Whatever the point: no step is applied twice, and a step
whose effect is left in the workspace either completed in a run that succeeded, or is
reported with an unknown result, or has a compensation that says why it was not undone.

One helper process imports the runtime and builds it once; each trial is a fork of it
(so the dozens of trials do not each pay for the imports), killed by the test. The tests
share that helper and its workspace: each starts from the original files (``reset``) and
uses run ids of its own, and every run it leaves in the journal has ended."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from wfconfig import CONFIG, TOOLS_MODULE

from runtime import Runtime
from runtime.settings import Settings
from runtime.workflow.journal import journal_path

WORKFLOW = """
apiVersion: toolrt/v1
kind: Workflow
metadata: {name: deploy}
spec:
  input_schema: {type: object, required: [fail], properties: {fail: {type: boolean}}}
  steps:
    - {id: read, tool: file_read, args: {path: notes.txt}}
    - id: edit_a
      tool: file_edit
      depends_on: [read]
      args: {path: a.txt, old_string: one, new_string: ONE}
      compensate: builtin
      on_failure: compensate
    - id: note
      tool: slow_note
      depends_on: [edit_a]
      args: {text: deploy}
      compensate: {tool: log, args: {text: "undo deploy"}}
      on_failure: compensate
    - id: edit_b
      tool: file_edit
      depends_on: [note]
      args: {path: b.txt, mode: replace, content: "new b\\n"}
      compensate: builtin
      on_failure: compensate
    - {id: check, tool: echo, depends_on: [edit_b], args: {value: "${steps.edit_b.metadata.hash_after}"}}
    - {id: gate, tool: fail, depends_on: [check], when: "input.fail", on_failure: compensate}
---
apiVersion: toolrt/v1
kind: Workflow
metadata: {name: hold}
spec:
  input_schema: {type: object}
  steps:
    - {id: note, tool: slow_note, args: {text: hold}}
    - {id: wait, tool: wait_for, depends_on: [note], args: {marker: go}}
---
apiVersion: toolrt/v1
kind: Workflow
metadata: {name: once}
spec:
  input_schema: {type: object}
  steps:
    - {id: stamp, tool: stamp_and_wait, args: {marker: go}}
---
apiVersion: toolrt/v1
kind: Workflow
metadata: {name: look}
spec:
  input_schema: {type: object}
  steps:
    - {id: look, tool: wait_for, args: {marker: go}}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: stamp_and_wait}
spec:
  description: Appends a stamp to log.txt, then waits until a marker file exists (a write that can be cut short).
  handler: python:wftools:stamp_and_wait
  input_schema: {type: object, required: [marker], properties: {marker: {type: string}}}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: wait_for}
spec:
  description: Waits until a marker file exists.
  handler: python:wftools:wait_for
  read_only: true
  input_schema: {type: object, required: [marker], properties: {marker: {type: string}}}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: slow_note}
spec:
  description: Appends a note to log.txt, then takes a moment (a write that can be cut short).
  handler: python:wftools:slow_note
  input_schema: {type: object, required: [text], properties: {text: {type: string}}}
"""

SLOW_NOTE = """

def slow_note(args, context):
    with open(_root(context) / "log.txt", "a", encoding="utf-8") as handle:
        handle.write("note " + args["text"] + "\\n")
    time.sleep(0.02)
    return "noted"


def stamp_and_wait(args, context):
    with open(_root(context) / "log.txt", "a", encoding="utf-8") as handle:
        handle.write("stamp\\n")
    return wait_for(args, context)


def wait_for(args, context):
    deadline = time.monotonic() + 120
    while not (_root(context) / args["marker"]).exists():
        if time.monotonic() > deadline:
            raise ToolError("no marker")
        time.sleep(0.005)
    return "went"
"""

ZYGOTE = """
import asyncio, json, os, signal, sys
from pathlib import Path
from runtime import Runtime
from runtime.settings import Settings

config, workspace, state = (Path(p) for p in sys.argv[1:4])
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # killed trials are reaped by the kernel
runtime = Runtime([config], workspace_root=workspace, settings=Settings(state_dir=state, audit_sink="off"), watch=False)
import threading
for thread in threading.enumerate():  # the start-up sweep of temp files: done before any fork
    if thread.name == "toolrt-temp-sweep":
        thread.join(60)
print("ready", flush=True)
for line in sys.stdin:
    order = json.loads(line)
    pid = os.fork()
    if pid == 0:
        try:
            arguments = {"fail": order["fail"]} if order["workflow"] == "deploy" else {}
            asyncio.run(runtime.run_workflow(order["workflow"], arguments, run_id=order["run_id"]))
        finally:
            # No close(): threads the runtime started before the fork are not in this
            # process, and their locks may be held. A run that wrote is on disk already.
            os._exit(0)
    print(pid, flush=True)
"""

ORIGINAL = {"a.txt": "one two\n", "b.txt": "old b\n", "notes.txt": "alpha\n"}
EDITED = {"a.txt": "ONE two\n", "b.txt": "new b\n"}
WRITE_STEPS = ("edit_a", "note", "edit_b")
EVENTS_IN_A_RUN = 16  # about: a kill point is drawn from 0..this


class Trials:
    def __init__(self, root: Path) -> None:
        self.config = root / "config"
        self.workspace = root / "ws"
        self.state = root / "state"
        self.config.mkdir()
        self.workspace.mkdir()
        (self.config / "wftools.py").write_text(TOOLS_MODULE + SLOW_NOTE)
        (self.config / "base.yaml").write_text(CONFIG)
        (self.config / "workflows.yaml").write_text(textwrap.dedent(WORKFLOW))
        self.settings = Settings(state_dir=self.state, audit_sink="off")
        path = journal_path(self.settings, self.workspace)
        assert path is not None
        self.journal = path
        script = root / "zygote.py"
        script.write_text(ZYGOTE)
        self.zygote = subprocess.Popen(
            [sys.executable, str(script), str(self.config), str(self.workspace), str(self.state)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.zygote.stdout is not None and self.zygote.stdout.readline().strip() == "ready"

    def reset(self) -> None:
        for name, text in ORIGINAL.items():
            (self.workspace / name).write_text(text)
        (self.workspace / "log.txt").unlink(missing_ok=True)
        (self.workspace / "go").unlink(missing_ok=True)

    def start(self, run_id: str, fail: bool, workflow: str = "deploy") -> int:
        assert self.zygote.stdin is not None and self.zygote.stdout is not None
        self.zygote.stdin.write(json.dumps({"run_id": run_id, "fail": fail, "workflow": workflow}) + "\n")
        self.zygote.stdin.flush()
        return int(self.zygote.stdout.readline())

    def events(self, run_id: str) -> int:
        if not self.journal.exists():
            return 0
        try:
            with sqlite3.connect(self.journal, timeout=5) as connection:
                (count,) = connection.execute("SELECT count(*) FROM events WHERE run_id = ?", (run_id,)).fetchone()
            return int(count)
        except sqlite3.OperationalError:
            return 0

    def close(self) -> None:
        if self.zygote.stdin is not None:
            self.zygote.stdin.close()
        self.zygote.wait(timeout=60)


@pytest.fixture(scope="module")
def trials(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Trials]:
    made = Trials(tmp_path_factory.mktemp("trials"))
    yield made
    made.close()


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _kill_at(trials: Trials, pid: int, run_id: str, rows: int, jitter_s: float) -> None:
    """SIGKILL ``pid`` once the run has ``rows`` journal rows (or has ended), after ``jitter_s``."""
    deadline = time.monotonic() + 180
    while trials.events(run_id) < rows and not _gone(pid):
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.001)
    time.sleep(jitter_s)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    while not _gone(pid):
        assert time.monotonic() < deadline, "the killed process did not go away"
        time.sleep(0.001)


def _check(trials: Trials, result: object, fail: bool, where: str) -> None:
    """The invariants after a resumed run ended."""
    from runtime.workflow import WorkflowResult

    assert isinstance(result, WorkflowResult)
    assert result.error is None, f"{where}: {result.error}"
    ws = trials.workspace
    texts = {name: (ws / name).read_text() for name in ("a.txt", "b.txt")}
    for name, text in texts.items():
        assert text in (ORIGINAL[name], EDITED[name]), f"{where}: {name} is half-written: {text!r}"
    log = (ws / "log.txt").read_text().splitlines() if (ws / "log.txt").exists() else []
    notes, undos = log.count("note deploy"), log.count("undo deploy")
    assert notes <= 1, f"{where}: the non-idempotent note step ran {notes} times"
    assert undos <= notes, f"{where}: undone more often than done: {log}"
    steps = {s.id: s for s in result.steps}
    comps = {c.step: c for c in result.compensations}
    if result.status == "ok":
        assert not fail, where
        assert all(s.status in ("ok", "skipped") for s in result.steps), f"{where}: {result.render()}"
        assert texts == EDITED and (notes, undos) == (1, 0), f"{where}: {result.render()}"
        return
    assert result.status in ("compensated", "compensation_failed"), f"{where}: {result.render()}"
    effects = {
        "edit_a": texts["a.txt"] != ORIGINAL["a.txt"],
        "note": notes > undos,
        "edit_b": texts["b.txt"] != ORIGINAL["b.txt"],
    }
    for step_id, left in effects.items():
        report = steps[step_id]
        comp = comps.get(step_id)
        if left:
            explained = report.status == "unknown" or (comp is not None and comp.status != "ok")
            assert explained, f"{where}: {step_id} is applied, not undone and not reported: {result.render()}"
        if comp is not None and comp.status == "ok":
            assert not left, f"{where}: {step_id}'s compensation says ok but its effect is there: {result.render()}"
    if result.status == "compensated":
        assert not any(effects.values()) or any(steps[s].status == "unknown" for s in WRITE_STEPS), where


@pytest.mark.parametrize("seed", range(3))
def test_a_run_killed_at_random_points_resumes_without_half_applied_steps(trials: Trials, seed: int) -> None:
    rng = random.Random(seed)
    runtime = Runtime([trials.config], workspace_root=trials.workspace, settings=trials.settings, watch=False)
    try:
        for trial in range(12):
            trials.reset()
            fail = rng.random() < 0.4
            run_id = f"wf_crash_{seed}_{trial}"
            rows, jitter = rng.randint(0, EVENTS_IN_A_RUN), rng.uniform(0, 0.015)
            where = f"seed {seed} trial {trial} (kill after {rows} rows + {jitter * 1000:.1f} ms, fail={fail})"
            pid = trials.start(run_id, fail)
            _kill_at(trials, pid, run_id, rows, jitter)
            if trials.events(run_id) == 0 and not _has_run(trials, run_id):
                continue  # killed before its first row: nothing ran, nothing to resume
            result = runtime.resume_workflow_sync(run_id)
            if result.note and "already finished" in result.note:
                assert result.status == ("compensated" if fail else "ok"), f"{where}: {result.render()}"
                continue
            _check(trials, result, fail, where)
            again = runtime.resume_workflow_sync(run_id)
            assert again.note is not None and "already finished" in again.note, where
            assert again.status == result.status, where
    finally:
        runtime.close_sync()


def _has_run(trials: Trials, run_id: str) -> bool:
    if not trials.journal.exists():
        return False
    try:
        with sqlite3.connect(trials.journal, timeout=5) as connection:
            return connection.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is not None
    except sqlite3.OperationalError:
        return False  # the file is being created


def test_a_run_still_running_in_another_process_is_not_resumed(trials: Trials) -> None:
    trials.reset()
    runtime = Runtime([trials.config], workspace_root=trials.workspace, settings=trials.settings, watch=False)
    try:
        pid = trials.start("wf_live", False, "hold")
        try:
            _wait_for_row(trials, "wf_live", "step_end", "note")
            result = runtime.resume_workflow_sync("wf_live")
            assert result.error is not None and f"still running in process {pid}" in result.error, result.error
            assert result.steps == ()
        finally:
            os.kill(pid, signal.SIGKILL)
        while not _gone(pid):
            time.sleep(0.001)
        (trials.workspace / "go").write_text("")
        resumed = runtime.resume_workflow_sync("wf_live")
        assert resumed.status == "ok", resumed.render()
        assert resumed.note is not None and "had ended before the process stopped (note)" in resumed.note
        assert (trials.workspace / "log.txt").read_text() == "note hold\n"  # the ended write was not run again
        assert "already finished" in (runtime.resume_workflow_sync("wf_live").note or "")
    finally:
        runtime.close_sync()


def _wait_for_row(trials: Trials, run_id: str, kind: str, step: str) -> None:
    deadline = time.monotonic() + 180
    while True:
        try:
            with sqlite3.connect(trials.journal, timeout=5) as connection:
                row = connection.execute(
                    "SELECT 1 FROM events WHERE run_id = ? AND kind = ? AND step = ?", (run_id, kind, step)
                ).fetchone()
        except sqlite3.OperationalError:
            row = None
        if row is not None:
            return
        assert time.monotonic() < deadline, f"no {kind} row for {step}"
        time.sleep(0.002)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


_ = asyncio  # the trials run in other processes; the test process resumes synchronously


def _run_row(trials: Trials, run_id: str) -> tuple[str, int, int] | None:
    """The run's status and its numbers of step_start and step_end rows, as the file holds them."""
    try:
        with sqlite3.connect(trials.journal, timeout=5) as connection:
            row = connection.execute("SELECT status FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            kinds = [k for (k,) in connection.execute("SELECT kind FROM events WHERE run_id = ?", (run_id,))]
    except sqlite3.OperationalError:
        return None  # the file is being created
    if row is None:
        return None
    return str(row[0]), kinds.count("step_start"), kinds.count("step_end")


def _kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 60
    while not _gone(pid):
        assert time.monotonic() < deadline, "the killed process did not go away"
        time.sleep(0.001)


@pytest.mark.parametrize("trial", range(4))
def test_a_write_step_killed_as_soon_as_it_started_finds_its_start_row_on_disk(trials: Trials, trial: int) -> None:
    # The step is neither read-only nor idempotent: it runs only once its "started" row is
    # fsynced, so a kill the moment its effect shows finds the row, and resume reports the
    # step unknown instead of running it again.
    trials.reset()
    run_id = f"wf_stamp_{trial}"
    log = trials.workspace / "log.txt"
    pid = trials.start(run_id, False, "once")
    try:
        deadline = time.monotonic() + 180
        while not (log.exists() and log.read_text() == "stamp\n"):
            assert time.monotonic() < deadline, "the step never ran"
            time.sleep(0.0005)
    finally:
        _kill(pid)
    assert _run_row(trials, run_id) == ("running", 1, 0)
    (trials.workspace / "go").write_text("")
    runtime = Runtime([trials.config], workspace_root=trials.workspace, settings=trials.settings, watch=False)
    try:
        result = runtime.resume_workflow_sync(run_id)
        assert result.error is None, result.error
        assert [(s.id, s.status) for s in result.steps] == [("stamp", "unknown")], result.render()
        assert result.status == "compensated"  # nothing before it to undo; it is reported unknown
        assert log.read_text() == "stamp\n"  # not run again
        assert "already finished" in (runtime.resume_workflow_sync(run_id).note or "")
    finally:
        runtime.close_sync()
        (trials.workspace / "go").unlink()


def test_a_read_only_run_killed_mid_run_is_resumed_and_runs_its_step_again(trials: Trials) -> None:
    # A run that only reads gets no step rows, but its start row reaches the file within
    # the writer's flush interval without anything waiting for it: a kill after that
    # leaves a run to resume, which runs the step again (safe: it only reads).
    trials.reset()
    run_id = "wf_look"
    pid = trials.start(run_id, False, "look")
    try:
        deadline = time.monotonic() + 180
        while _run_row(trials, run_id) is None:
            assert time.monotonic() < deadline, "the run's start row never reached the file"
            time.sleep(0.002)
    finally:
        _kill(pid)
    assert _run_row(trials, run_id) == ("running", 0, 0)
    (trials.workspace / "go").write_text("")
    runtime = Runtime([trials.config], workspace_root=trials.workspace, settings=trials.settings, watch=False)
    try:
        result = runtime.resume_workflow_sync(run_id)
        assert result.error is None, result.error
        assert result.status == "ok", result.render()
        assert [(s.id, s.status) for s in result.steps] == [("look", "ok")]
        record = runtime.workflow_journal().load(run_id)
        assert record.status == "ok" and record.result is not None and record.result["status"] == "ok"
        again = runtime.resume_workflow_sync(run_id)
        assert again.note is not None and "already finished" in again.note
        assert again.status == "ok"
    finally:
        runtime.close_sync()
        (trials.workspace / "go").unlink()
