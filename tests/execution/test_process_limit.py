"""The ceiling on a command's processes (``command_max_processes``): a fork bomb in an
allowed command ends with a ``process_limit`` error and leaves no process behind,
whatever shape it takes (shell functions, loops, xargs, make, python, perl, threads,
escaping into a session of its own, ignoring SIGTERM, in a command handler, an isolated
python handler or a background job); other sessions' calls go on meanwhile; ordinary
multi-process work (pipelines, ``make -j``, ``xargs -P``, pools, threads) still runs.
Every case goes through a real Runtime and real processes.

The bombs are run only once a bounded probe has shown the ceiling holds on this machine
(a writable pids cgroup, v2 or v1); without one they are skipped, saying so."""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pipeline.pipeline_support import live_pids_with

from runtime import Runtime, Session
from runtime.codes import ResultCode
from runtime.execution.proclimit import describe_limit, process_limit_mechanism
from runtime.execution.reaper import supervised
from runtime.records import Status
from runtime.settings import Settings

LIMIT = 64
BYPASS = Session(id="bomber", mode="bypass")
MECHANISM = process_limit_mechanism(LIMIT)
needs_cgroup = pytest.mark.skipif(
    MECHANISM not in ("cgroup1", "cgroup2"),
    reason=f"no writable pids cgroup on this machine (mechanism: {MECHANISM}): a bomb would only meet the timeout",
)

CONFIG = """
apiVersion: toolrt/v1
kind: Include
metadata: {name: packs}
spec: {packs: [builtin-tools, workspace-tools, output-default]}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: script}
spec:
  description: Runs a shell script (a command handler).
  input_schema: {type: object, properties: {script: {type: string}}, required: [script]}
  handler: {command: {argv: [bash, -c, "{script}"]}}
  timeout: {total_s: 60, grace_s: 0.2}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: iso_bomb}
spec:
  description: An isolated python handler that forks in a loop.
  input_schema: {type: object, properties: {token: {type: string}}, required: [token]}
  handler: "python:bomb_handlers:bomb"
  process_isolation: true
  timeout: {total_s: 60, grace_s: 0.2}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: later_bomb}
spec:
  description: Waits for a file, then forks in a loop (a background job).
  input_schema: {type: object, properties: {token: {type: string}}, required: [token]}
  handler: {command: {argv: [bash, -c, "while [ ! -e go ]; do sleep 0.02; done; while :; do sleep {token} & done"]}}
  read_only: true
  timeout: {total_s: 0.3, grace_s: 0.2, on_timeout: background}
"""

HANDLERS = """
import os, sys, time

def bomb(args):
    marker = args["token"]
    while True:
        try:
            if os.fork() == 0:
                os.execvp("sleep", ["sleep", marker])
        except OSError:
            time.sleep(0.001)
"""

# Each bomb: {T} is a unique sleep length (and a comment in scripts), so that every
# process it starts can be found by its command line afterwards.
BOMBS = {
    "classic-then-wait": ":(){ :|:& };:; sleep {T}",
    "classic-exits-at-once": ":(){ :|:& };: # {T}",
    "classic-spelled-out": "bomb() { bomb | bomb & }; bomb; sleep {T}",
    "two-calls-and-wait": "f(){ f & f & wait; }; f # {T}",
    "endless-background-sleeps": "while true; do sleep {T} & done",
    "counted-loop-past-the-limit": "for i in $(seq 100000); do sleep {T} & done; wait",
    "xargs-unbounded-parallel": "seq 100000 | xargs -P 0 -I@ sleep {T}",
    "xargs-sh-parallel": "seq 100000 | xargs -P 0 -n 1 sh -c 'sleep {T}' x",
    "python-exponential-fork": (
        'python3 -c "import os, time  # {T}\nwhile True:\n    try: os.fork()\n    except OSError: time.sleep(0.001)"'
    ),
    "python-threads": (
        'python3 -c "import threading, time  # {T}\nwhile True:\n'
        '    threading.Thread(target=time.sleep, args=(1000,)).start()"'
    ),
    "python-subprocess-loop": (
        'python3 -c "import subprocess, time  # {T}\nwhile True:\n'
        "    try: subprocess.Popen(['sleep', '{T}'])\n    except OSError: time.sleep(0.001)\""
    ),
    "perl-fork-while": "perl -e 'fork while 1; sleep 100 # {T}'",
    "awk-system": "awk 'BEGIN{while (1) system(\"sleep {T} &\")}'",
    "sh-recursion": "sh -c 'b(){ b & b; }; b # {T}'",
    "env-i-classic": "env -i bash -c ':(){ :|:& };:; sleep {T}'",
    "setsid-nohup-escape": "setsid nohup bash -c 'while :; do sleep {T} & done' >/dev/null 2>&1 & sleep {T}",
    "disowned-subshell-ignoring-term": "( trap '' TERM HUP; while :; do sleep {T} & done ) & disown; sleep {T}",
    "subshells-ignoring-term": "trap '' TERM; while :; do ( trap '' TERM; sleep {T} ) & done",
    "background-bomb-main-exits-later": "( while :; do sleep {T} & done ) & sleep 2; exit 0",
    "exec-into-bomb": 'exec python3 -c "import os  # {T}\nwhile True:\n    try: os.fork()\n    except OSError: pass"',
    "pipeline-of-loops": "while :; do sleep {T} & done | while :; do sleep {T} & done",
    "timeout-wrapped": "timeout 100 bash -c 'while :; do sleep {T} & done'",
    "make-unbounded-jobs": (
        "for i in $(seq 2000); do printf 't%s:\\n\\tsleep {T}\\n' $i; done > mk; "
        'printf "all: $(seq -f t%g -s " " 2000)\\n" > head.mk; cat head.mk mk > Makefile; make -j all'
    ),
    "python-multiprocessing-pool": (
        'python3 -c "import multiprocessing as m, time  # {T}\n'
        'if __name__ == \\"__main__\\":\n    m.Pool(5000).map(time.sleep, [1000] * 5000)"'
    ),
    "nested-bash-levels": (
        "for i in $(seq 200); do bash -c 'for j in $(seq 50); do sleep {T} & done; wait' & done; wait"
    ),
    "double-fork-daemons": (
        'python3 -c "import os, time  # {T}\nwhile True:\n    try:\n        if os.fork() == 0:\n'
        "            os.setsid()\n            if os.fork() == 0: time.sleep(1000)\n            os._exit(0)\n"
        '    except OSError: time.sleep(0.001)"'
    ),
}


def _token() -> str:
    """A sleep length no other process on the machine uses (found in /proc afterwards)."""
    return f"{7000 + secrets.randbelow(1000)}.{secrets.randbelow(10**6):06d}"


def _with_token(token: str) -> list[int]:
    """Live processes whose command line holds ``token``."""
    return sorted(live_pids_with(token, where="cmdline"))


async def _survivors(token: str) -> list[int]:
    """What still runs of a bomb, once its processes have had up to 10 s to go."""
    deadline = time.monotonic() + 10
    left = _with_token(token)
    while left and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        left = _with_token(token)
    for pid in left:  # never leave a bomb running on a shared machine
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    return left


def _runtime(tmp_path: Path, limit: int = LIMIT, **settings: object) -> Runtime:
    config = tmp_path / "config"
    config.mkdir(exist_ok=True)
    (config / "tools.yaml").write_text(CONFIG)
    (config / "bomb_handlers.py").write_text(HANDLERS)
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    return Runtime(
        [config],
        workspace_root=workspace,
        settings=Settings(
            state_dir=tmp_path / "state",
            hot_reload=False,
            command_max_processes=limit,
            **settings,  # type: ignore[arg-type]
        ),
    )


#: Bombs whose leader exits at once, leaving the tree to the supervisor's clean-up.
LEADER_EXITS_AT_ONCE = frozenset({"classic-exits-at-once"})


@pytest.fixture(scope="module")
def ceiling_holds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A bounded bomb (at most 300 processes whatever happens) must meet the ceiling
    before any unbounded one is let loose on the machine."""
    if MECHANISM not in ("cgroup1", "cgroup2"):
        pytest.skip(f"no writable pids cgroup on this machine (mechanism: {MECHANISM})")
    tmp_path = tmp_path_factory.mktemp("probe")
    token = _token()
    probe = f"for i in $(seq 300); do sleep {token} & done; wait"

    async def run() -> tuple[object, list[int]]:
        runtime = _runtime(tmp_path)
        try:
            result = await runtime.call("run_command", {"command": probe}, BYPASS)
        finally:
            await runtime.close()
        return result, await _survivors(token)

    result, left = asyncio.run(run())
    assert getattr(result, "code", None) == ResultCode.process_limit, getattr(result, "content", result)
    assert left == []
    yield


@needs_cgroup
@pytest.mark.parametrize("shape", sorted(BOMBS))
async def test_a_fork_bomb_ends_with_a_process_limit_error_and_no_survivor(
    ceiling_holds: None, tmp_path: Path, shape: str
) -> None:
    token = _token()
    runtime = _runtime(tmp_path)
    try:
        started = time.monotonic()
        result = await runtime.call("run_command", {"command": BOMBS[shape].replace("{T}", token)}, BYPASS)
        took = time.monotonic() - started
    finally:
        await runtime.close()
    left = await _survivors(token)
    assert left == [], (shape, left)
    if shape in LEADER_EXITS_AT_ONCE and result.code is None:
        # The leader exits at once and the supervisor then stops what is left of the tree:
        # whether the bomb reached the ceiling before that is up to the scheduler. Either
        # way nothing survives (asserted above); when it did reach it, the checks below hold.
        return
    assert result.code == ResultCode.process_limit, (shape, result.code, result.content[:500])
    assert result.status in (Status.error, Status.unknown)
    assert f"more than {LIMIT} processes" in result.content
    assert "command_max_processes" in result.content
    assert result.metadata.get("process_limit") == LIMIT
    assert took < 50, "stopped at the ceiling, long before the 60 s timeout"


@needs_cgroup
@pytest.mark.parametrize("shape", ["( while :; do sleep {T} & done ) & exit 0", ":(){ :|:& };:; exit 0 # {T}"])
async def test_a_bomb_left_behind_by_a_command_that_exits_at_once_is_stopped_with_it(
    ceiling_holds: None, tmp_path: Path, shape: str
) -> None:
    token = _token()
    runtime = _runtime(tmp_path)
    try:
        result = await runtime.call("run_command", {"command": shape.replace("{T}", token)}, BYPASS)
    finally:
        await runtime.close()
    assert await _survivors(token) == []
    # Stopped with the command that left it (ok), or at the ceiling if it got there first.
    assert result.status is Status.ok or result.code == ResultCode.process_limit, result.content[:500]


@needs_cgroup
@pytest.mark.parametrize("shape", ["classic-then-wait", "endless-background-sleeps", "python-exponential-fork"])
async def test_a_fork_bomb_in_a_command_handler_ends_the_same_way(
    ceiling_holds: None, tmp_path: Path, shape: str
) -> None:
    token = _token()
    runtime = _runtime(tmp_path)
    try:
        result = await runtime.call("script", {"script": BOMBS[shape].replace("{T}", token)}, BYPASS)
    finally:
        await runtime.close()
    assert await _survivors(token) == []
    assert result.code == ResultCode.process_limit, result.content[:500]
    assert result.status is Status.unknown  # a write tool: whether it took effect is unknown
    assert "Check whether it did before retrying" in result.content


@needs_cgroup
async def test_a_fork_bomb_in_an_isolated_python_handler_is_stopped(ceiling_holds: None, tmp_path: Path) -> None:
    token = _token()
    runtime = _runtime(tmp_path)
    try:
        result = await runtime.call("iso_bomb", {"token": token}, BYPASS)
    finally:
        await runtime.close()
    assert await _survivors(token) == []
    assert result.code == ResultCode.process_limit, result.content[:500]


@needs_cgroup
async def test_a_fork_bomb_in_a_background_job_ends_the_job_with_the_reason(
    ceiling_holds: None, tmp_path: Path
) -> None:
    token = _token()
    runtime = _runtime(tmp_path)
    try:
        first = await runtime.call("later_bomb", {"token": token}, BYPASS)
        assert first.status is Status.background, first.content
        (tmp_path / "ws" / "go").touch()
        job_id = first.metadata["job_id"]
        deadline = time.monotonic() + 60
        text = ""
        while time.monotonic() < deadline:
            status = await runtime.call("job_status", {"id": job_id}, BYPASS)
            text = status.content
            if "processes and threads" in text:
                break
            await asyncio.sleep(0.1)
    finally:
        await runtime.close()
    assert await _survivors(token) == []
    assert f"more than {LIMIT} processes and threads" in text, text[:800]


@needs_cgroup
async def test_other_sessions_calls_go_on_while_a_bomb_runs(ceiling_holds: None, tmp_path: Path) -> None:
    token = _token()
    runtime = _runtime(tmp_path)
    try:
        bomb = asyncio.ensure_future(
            runtime.call("run_command", {"command": f"while :; do sleep {token} & done"}, BYPASS)
        )
        others = [
            await runtime.call("run_command", {"command": f"echo fine-{n} && ls . >/dev/null"}, Session(mode="bypass"))
            for n in range(5)
        ]
        result = await bomb
    finally:
        await runtime.close()
    assert await _survivors(token) == []
    assert result.code == ResultCode.process_limit
    assert [o.status for o in others] == [Status.ok] * 5, [o.content for o in others]
    assert [o.content.strip() for o in others] == [f"fine-{n}" for n in range(5)]


@needs_cgroup
async def test_the_ceiling_counts_at_once_not_in_total(tmp_path: Path) -> None:
    """1,000 processes one after another, and 40 at once under a ceiling of 64: no error."""
    runtime = _runtime(tmp_path)
    try:
        sequential = await runtime.call(
            "run_command", {"command": "n=0; for i in $(seq 1000); do /bin/true; n=$((n+1)); done; echo $n"}, BYPASS
        )
        at_once = await runtime.call(
            "run_command", {"command": "for i in $(seq 40); do sleep 0.2 & done; wait; echo waited"}, BYPASS
        )
    finally:
        await runtime.close()
    assert (sequential.status, sequential.content.strip()) == (Status.ok, "1000")
    assert (at_once.status, at_once.content.strip()) == (Status.ok, "waited")


ORDINARY = {
    "pipeline": ("seq 200000 | sort -rn | uniq | tr -d x | sort -u | wc -l", "200000"),
    "make-j8": (
        "for i in $(seq 32); do printf 't%s:\\n\\t@sleep 0.05; echo t%s > t%s.out\\n' $i $i $i; done > mk; "
        'printf "all: $(seq -f t%g -s " " 32)\\n\\t@cat t*.out | wc -l\\n" > head.mk; '
        "cat head.mk mk > Makefile; make -s -j8 all",
        "32",
    ),
    "xargs-P16": ("seq 64 | xargs -P 16 -I@ sh -c 'echo @' | sort -n | tail -n 1", "64"),
    "python-pool": (
        'python3 -c "import multiprocessing as m\nif __name__ == \\"__main__\\":\n'
        '    print(sum(m.Pool(8).map(abs, range(-100, 0))))"',
        "5050",
    ),
    "python-threads-40": (
        'python3 -c "import threading, time\n'
        "ts = [threading.Thread(target=time.sleep, args=(0.2,)) for _ in range(40)]\n"
        '[t.start() for t in ts]; [t.join() for t in ts]; print(len(ts))"',
        "40",
    ),
    "git": ("git init -q r && cd r && git status --short | wc -l", "0"),
    "nested-subshells": ("echo $( echo $( echo $( echo deep ) ) )", "deep"),
    "find-xargs": (
        "mkdir -p d && touch d/a d/b d/c && find d -type f | xargs -n1 basename | sort | tr -d '\\n'",
        "abc",
    ),
}


@pytest.mark.parametrize("limit", [LIMIT, Settings().command_max_processes])
@pytest.mark.parametrize("name", sorted(ORDINARY))
async def test_ordinary_multi_process_commands_still_run(tmp_path: Path, name: str, limit: int) -> None:
    line, expected = ORDINARY[name]
    runtime = _runtime(tmp_path, limit)
    try:
        result = await runtime.call("run_command", {"command": line}, BYPASS)
    finally:
        await runtime.close()
    assert result.status is Status.ok, (name, result.content[:800])
    assert result.content.strip().splitlines()[-1] == expected, (name, result.content[:800])


async def test_no_limit_when_set_to_zero(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path, 0)
    try:
        result = await runtime.call(
            "run_command", {"command": "for i in $(seq 100); do sleep 0.1 & done; wait"}, BYPASS
        )
    finally:
        await runtime.close()
    assert result.status is Status.ok, result.content


def test_the_default_is_a_thousand_and_twenty_four_and_can_be_set_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert Settings().command_max_processes == 1024
    monkeypatch.setenv("TOOLRT_COMMAND_MAX_PROCESSES", "200")
    assert Settings().command_max_processes == 200
    with pytest.raises(ValueError):
        Settings(command_max_processes=-1)


def test_explain_names_the_ceiling_and_what_enforces_it(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "tools.yaml").write_text(CONFIG)
    (config / "bomb_handlers.py").write_text(HANDLERS)
    env = {**os.environ, "TOOLRT_COMMAND_MAX_PROCESSES": "77"}
    shown = subprocess.run(
        [sys.executable, "-m", "runtime.cli", "explain", "run_command", "--config", str(config), "--args",
         '{"command": "make -j"}'],
        capture_output=True, text=True, env=env, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert "limits    at most 77 processes and threads at once" in shown.stdout, shown.stdout + shown.stderr
    assert describe_limit(77) in shown.stdout
    reading = subprocess.run(
        [sys.executable, "-m", "runtime.cli", "explain", "file_read", "--config", str(config), "--args",
         '{"path": "a"}'],
        capture_output=True, text=True, env=env, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert "limits" not in reading.stdout  # no process: nothing to say
    assert "not enforced" in describe_limit(5) or MECHANISM != "none"
    assert describe_limit(0).startswith("no process limit")


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to another user to test RLIMIT_NPROC needs root")
@pytest.mark.skipif(
    not os.path.exists("/usr/bin/python3"), reason="the supervisor runs on the system python as `nobody`"
)
def test_without_a_cgroup_a_user_that_is_not_root_is_held_by_rlimit_nproc() -> None:
    """TOOLRT_NO_CGROUP leaves RLIMIT_NPROC: the supervisor run as `nobody` gives a
    bounded bomb at most the user's tasks plus the ceiling; its forks beyond fail;
    nothing survives."""
    token = _token()
    bomb = textwrap.dedent(
        f"""
        import os, time  # {token}
        made = failed = 0
        for i in range(300):
            try:
                if os.fork() == 0:
                    os.execvp("sleep", ["sleep", "{token}"])
                made += 1
            except OSError:
                failed += 1
        print("made", made, "failed", failed, flush=True)
        """
    )
    argv = supervised(["/usr/bin/python3", "-c", bomb], 0.2, (), 40)
    argv[0] = "/usr/bin/python3"  # the supervisor is standard library only
    done = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv],
        capture_output=True, text=True, cwd="/tmp", timeout=120, check=False,
        env={"PATH": os.environ["PATH"], "TOOLRT_NO_CGROUP": "1"},
    )  # fmt: skip
    left = asyncio.run(_survivors(token))
    assert left == []
    words = done.stdout.split()
    assert "made" in words, done.stdout + done.stderr
    made, failed = int(words[words.index("made") + 1]), int(words[words.index("failed") + 1])
    assert made <= 40 and failed >= 260, done.stdout
    assert done.returncode == 0, done.stderr
