"""cgroups left by supervisors killed with SIGKILL: the next supervisor and the next
Runtime kill what still runs in them and remove them; a live supervisor's cgroup, a
folder of another name and one of another user are never touched."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime import Runtime
from runtime.execution.processes import run_process
from runtime.execution.reaper import cgroup_base, supervised, sweep_stale_cgroups

pytestmark = pytest.mark.skipif(cgroup_base() is None, reason="no writable cgroup v2 hierarchy on this machine")


@pytest.fixture(autouse=True)
def own_base() -> Iterator[str]:
    """This test process moves into a cgroup of its own for each test, so the
    supervisors of other processes on the machine (which sweep their own base) never
    remove the stale cgroups made here before the sweep under test does."""
    outer = cgroup_base()
    assert outer is not None
    nested = os.path.join(outer, f"test-sweep-{os.getpid()}")
    os.makedirs(nested, exist_ok=True)
    try:
        with open(os.path.join(nested, "cgroup.procs"), "w") as handle:
            handle.write(str(os.getpid()))
    except OSError as err:
        os.rmdir(nested)
        pytest.skip(f"cannot move into a cgroup of its own here: {err}")
    try:
        assert cgroup_base() == nested
        yield nested
    finally:
        with open(os.path.join(outer, "cgroup.procs"), "w") as handle:
            handle.write(str(os.getpid()))
        sweep_stale_cgroups(nested)
        _wait(lambda: _try_rmdir(nested), 10)


def _try_rmdir(path: str) -> bool:
    try:
        os.rmdir(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


DAEMON = (
    "import os, sys, time\n"
    "if os.fork(): os._exit(0)\n"
    "os.setsid()\n"
    "if os.fork(): os._exit(0)\n"
    "open(sys.argv[1], 'a').write('%d\\n' % os.getpid())\n"
    "time.sleep(300)\n"
)


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] not in (b"Z", b"X")


def _wait(condition, timeout_s: float = 30.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _orphaned_cgroup(tmp_path: Path) -> tuple[str, list[int]]:
    """Start a real supervisor over a shell that leaves a double-forked daemon, SIGKILL
    the supervisor once both run in its cgroup, and return that cgroup and the pids."""
    base = cgroup_base()
    assert base is not None
    script = (
        f'{sys.executable} -c "$DAEMON" pids; while [ ! -s pids ]; do sleep 0.01; done;'
        " grep '^0::' /proc/self/cgroup > cgroup; echo $$ >> pids; exec sleep 300"
    )
    env = {"PATH": os.environ["PATH"], "DAEMON": DAEMON}
    supervisor = subprocess.Popen(supervised(["sh", "-c", script], 0.2), cwd=tmp_path, env=env)
    pids_file = tmp_path / "pids"
    assert _wait(lambda: pids_file.exists() and len(pids_file.read_text().split()) >= 2)
    name = (tmp_path / "cgroup").read_text().strip().rsplit("/", 1)[1]
    assert name.startswith(f"toolrt-{supervisor.pid}-"), name
    supervisor.send_signal(signal.SIGKILL)
    supervisor.wait()
    group = os.path.join(base, name)
    pids = [int(p) for p in pids_file.read_text().split()]
    assert os.path.isdir(group) and all(_running(p) for p in pids)  # the fault: left behind, still running
    return group, pids


def test_a_sigkilled_supervisors_cgroup_stays_until_a_sweep_removes_it_with_its_processes(tmp_path: Path) -> None:
    group, pids = _orphaned_cgroup(tmp_path)
    assert group in sweep_stale_cgroups(cgroup_base())
    assert not os.path.exists(group)
    assert _wait(lambda: not any(_running(p) for p in pids), 10)


def test_the_next_supervisor_removes_a_stale_cgroup_when_it_starts(tmp_path: Path) -> None:
    group, pids = _orphaned_cgroup(tmp_path)
    result = asyncio.run(
        run_process(
            ["true"],
            cwd=tmp_path,
            env={"PATH": os.environ["PATH"]},
            total_s=30,
            idle_s=None,
            grace_s=0.2,
            on_output=lambda _t: None,
        )
    )
    assert result.exit_code == 0
    assert _wait(lambda: not os.path.exists(group), 10)
    assert _wait(lambda: not any(_running(p) for p in pids), 10)


def test_a_new_runtime_removes_stale_cgroups_when_it_starts(tmp_path: Path) -> None:
    group, pids = _orphaned_cgroup(tmp_path)
    config = tmp_path / "config"
    config.mkdir()
    runtime = Runtime([config], workspace_root=tmp_path, watch=False)
    try:
        assert _wait(lambda: not os.path.exists(group), 10)
        assert _wait(lambda: not any(_running(p) for p in pids), 10)
    finally:
        runtime.close_sync()


def test_several_stale_cgroups_of_several_killed_supervisors_all_go(tmp_path: Path) -> None:
    found = []
    for i in range(3):
        folder = tmp_path / str(i)
        folder.mkdir()
        found.append(_orphaned_cgroup(folder))
    # Each supervisor started here sweeps those killed before it; this sweep the last.
    assert found[-1][0] in sweep_stale_cgroups(cgroup_base())
    for group, pids in found:
        assert not os.path.exists(group)
        assert _wait(lambda pids=pids: not any(_running(p) for p in pids), 10)


def test_a_live_supervisors_cgroup_is_never_swept(tmp_path: Path) -> None:
    base = cgroup_base()
    assert base is not None
    script = "grep '^0::' /proc/self/cgroup > cgroup; exec sleep 300"
    supervisor = subprocess.Popen(supervised(["sh", "-c", script], 0.2), cwd=tmp_path, env=dict(os.environ))
    try:
        seen = tmp_path / "cgroup"
        assert _wait(lambda: seen.exists() and seen.read_text().strip() != "")
        group = os.path.join(base, seen.read_text().strip().rsplit("/", 1)[1])
        assert group not in sweep_stale_cgroups(base)
        assert os.path.isdir(group) and supervisor.poll() is None
    finally:
        supervisor.send_signal(signal.SIGTERM)
        supervisor.wait(30)
    assert _wait(lambda: not os.path.exists(group), 10)  # it cleans up after itself


def test_a_pid_reused_by_another_process_does_not_keep_a_cgroup(tmp_path: Path) -> None:
    base = cgroup_base()
    assert base is not None
    # This process is alive, but started at another time than the name says.
    group = os.path.join(base, f"toolrt-{os.getpid()}-1")
    os.mkdir(group)
    try:
        assert group in sweep_stale_cgroups(base)
        assert not os.path.exists(group)
    finally:
        if os.path.exists(group):
            os.rmdir(group)


@pytest.mark.parametrize("name", ["toolrt", "toolrt-x", "toolrt-1-2-3", "other-99999999", "toolrt--1", "Toolrt-9-9"])
def test_folders_of_other_names_are_never_swept(name: str) -> None:
    base = cgroup_base()
    assert base is not None
    group = os.path.join(base, name)
    if os.path.exists(group):
        pytest.skip(f"{group} exists on this machine")
    os.mkdir(group)
    try:
        assert group not in sweep_stale_cgroups(base)
        assert os.path.isdir(group)
    finally:
        os.rmdir(group)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can hand a cgroup to another user")
def test_a_stale_cgroup_of_another_user_is_left_alone() -> None:
    base = cgroup_base()
    assert base is not None
    group = os.path.join(base, "toolrt-999999999-1")
    os.mkdir(group)
    try:
        os.chown(group, 12345, 12345)
        assert group not in sweep_stale_cgroups(base)
        assert os.path.isdir(group)
    finally:
        os.rmdir(group)


def test_no_base_means_nothing_to_sweep() -> None:
    assert sweep_stale_cgroups(None) == []
    assert sweep_stale_cgroups("/nonexistent/cgroup/base") == []
