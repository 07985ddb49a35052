"""The command sandbox: in bypass mode a line that names toolrt's own files only at run
time (a substitution, a variable, a globstar glob, /proc) is allowed by the policy, and
the sandbox is what stops it. Each line runs through a real Runtime; toolrt's config,
state and audit log must come out unread and unchanged, and ordinary work must go on."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from runtime import Runtime, Session
from runtime.errors import ConfigError
from runtime.execution.sandbox import covered_paths, sandbox_available
from runtime.records import Status
from runtime.settings import Settings

pytestmark = pytest.mark.skipif(
    not sandbox_available(), reason="this machine does not allow mount and PID namespaces: the policy alone holds"
)

MARK = "sandbox-config-marker-3f1c"
PACKS = f"""\
# {MARK}
apiVersion: toolrt/v1
kind: Include
metadata: {{name: packs}}
spec: {{packs: [workspace-tools, permissions-default, output-default, builtin-tools]}}
---
apiVersion: toolrt/v1
kind: Policy
metadata: {{name: shell}}
spec:
  rules:
    - {{name: deny-nothing, effect: deny, tools: [run_command], commands: ['nothing-here *']}}
"""
BYPASS = Session(id="s", mode="bypass")
RAN: list[bool] = []  # per line run: whether the policy let it through (so the sandbox met it)

# Lines that read toolrt's files through a name the policy only learns at run time.
READS = [
    "cat $(echo toolrt.d/p.yaml)",
    "f=toolrt.d/p.yaml; cat $f",
    "cat $PWD/toolrt.d/p.yaml",
    "cat `echo toolrt.d`/p.yaml",
    "d=toolrt; cat ${d}.d/*.yaml",
    "shopt -s globstar; cat **/*.yaml",
    "shopt -s globstar dotglob; grep -r kind **",
    "cat $(ls -d t*.d)/p.yaml",
    "ls $(echo toolrt.d) && cat $(echo toolrt.d)/*",
    "find . -name '*.yaml' -exec cat {} +",
    "find . -type f | xargs cat",
    "grep -r apiVersion $(pwd)",
    "for f in $(find . -name p.yaml); do cat $f; done",
    "python3 -c \"import glob; [print(open(p).read()) for p in glob.glob('**/*.yaml', recursive=True)]\"",
    "python3 -c \"print(open('tool' + 'rt.d/p.yaml').read())\"",
    "tar -cf - $(echo toolrt.d) | tar -xOf -",
    "cp -r $(echo toolrt.d) copy && cat copy/*",
    "ln $(echo toolrt.d/p.yaml) hard && cat hard",
    "ln -s $PWD/$(echo toolrt.d) soft && cat soft/p.yaml",
    "cat /proc/$PPID/root$PWD/toolrt.d/p.yaml",
    "cat /proc/1/root$PWD/toolrt.d/p.yaml",
    "for p in /proc/[0-9]*; do cat $p/root$PWD/toolrt.d/p.yaml 2>/dev/null; done",
    "cat /proc/self/root$PWD/toolrt.d/p.yaml",
    "cat /proc/*/cwd/toolrt.d/p.yaml",
    "umount $(echo toolrt.d); cat toolrt.d/p.yaml",
    "umount -l $PWD/toolrt.d; cat toolrt.d/p.yaml",
    "mount --bind / /mnt && cat /mnt$PWD/toolrt.d/p.yaml",
    "mkdir m && mount -t tmpfs x m; cat toolrt.d/p.yaml",
    "nsenter -t 1 -m cat $PWD/toolrt.d/p.yaml",
    "unshare -m sh -c 'umount $PWD/toolrt.d; cat $PWD/toolrt.d/p.yaml'",
    "cat $(echo {state})/*/* 2>&1 | head -c 2000",
    "f={state}; find $f -type f -exec cat {} + | head -c 2000",
    "grep -ra kind $(echo {state})",
]

# Lines that write or remove toolrt's files through a run-time name.
WRITES = [
    "shopt -s globstar; sed -i s/deny/allow/ **/*.yaml",
    "echo '# x' >> $(echo toolrt.d/p.yaml)",
    "f=toolrt.d/evil.yaml; echo 'kind: Tool' > $f",
    "cp /etc/hostname $(echo toolrt.d)/evil.yaml",
    "rm -rf $(echo toolrt.d)",
    "mv $(echo toolrt.d) gone",
    "chmod 000 $(echo toolrt.d/p.yaml)",
    "truncate -s0 $PWD/toolrt.d/p.yaml",
    "find . -name '*.yaml' -delete",
    "find . -name p.yaml -exec sh -c 'echo x > {}' \\;",
    "python3 -c \"open('tool' + 'rt.d/p.yaml', 'w').write('x')\"",
    "python3 -c \"import shutil; shutil.rmtree('tool' + 'rt.d')\"",
    "dd if=/dev/zero of=$(echo toolrt.d/p.yaml) count=1",
    "touch $(echo toolrt.d)/new.yaml",
    "ln -sf /etc/passwd $(echo toolrt.d)/p.yaml",
    "umount $(echo toolrt.d); rm -rf toolrt.d",
    "echo x > /proc/$PPID/root$PWD/toolrt.d/p.yaml",
    "rm -rf $(echo {state})",
    "find $(echo {state}) -type f -exec sh -c ': > {}' \\;",
    "for f in $(find {state} -type f); do echo x > $f; done",
]


@pytest.fixture
def place(tmp_path: Path) -> tuple[Runtime, Path, Path]:
    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "app.py").write_text("print(1)\n")
    (workspace / "toolrt.d").mkdir()
    (workspace / "toolrt.d" / "p.yaml").write_text(PACKS)
    state = tmp_path / "state"
    # Paths outside the workspace are judged like any word: the lines reach the sandbox.
    settings = Settings(state_dir=state, hot_reload=False, audit_sink="sqlite", commands_outside_workspace="allow")
    runtime = Runtime([workspace / "toolrt.d"], workspace_root=workspace, settings=settings)
    assert runtime.hide, "the sandbox is available, so commands run in it"
    return runtime, workspace, state


def _fingerprint(*folders: Path) -> dict[str, str]:
    found = {}
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and not path.name.endswith(("-wal", "-shm", "-journal")):
                found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
            elif path.is_dir():
                found[str(path)] = "dir"
    return found


@pytest.mark.parametrize("line", READS)
async def test_a_line_naming_toolrt_files_at_run_time_reads_nothing_of_them(
    place: tuple[Runtime, Path, Path], line: str
) -> None:
    runtime, workspace, state = place
    result = await runtime.call("run_command", {"command": line.replace("{state}", str(state))}, BYPASS)
    RAN.append(result.status is not Status.denied)
    assert MARK not in result.content, (line, result.content)
    assert "apiVersion" not in result.content, (line, result.content)
    assert "SQLite format" not in result.content, (line, result.content)
    await runtime.close()


@pytest.mark.parametrize("line", WRITES)
async def test_a_line_naming_toolrt_files_at_run_time_changes_nothing_of_them(
    place: tuple[Runtime, Path, Path], line: str
) -> None:
    runtime, workspace, state = place
    await runtime.call("run_command", {"command": "echo warm-up"}, BYPASS)
    before = _fingerprint(workspace / "toolrt.d", state)
    await runtime.call("run_command", {"command": line.replace("{state}", str(state))}, BYPASS)
    after = _fingerprint(workspace / "toolrt.d", state)
    await runtime.close()
    assert set(after) >= set(before), (line, set(before) - set(after))  # nothing removed
    # The audit log grows with the calls themselves: every other file is as it was.
    changed = {p for p in after if after[p] != before.get(p) and ".sqlite3" not in p}
    assert changed == set(), (line, changed)
    assert (workspace / "toolrt.d" / "p.yaml").read_text() == PACKS


def test_most_of_these_lines_get_past_the_policy_so_the_sandbox_is_what_stops_them() -> None:
    if len(RAN) < len(READS):
        pytest.skip("run with the whole module (the lines above record whether they ran)")
    assert sum(RAN) >= 0.5 * len(RAN), f"{sum(RAN)} of {len(RAN)} ran"


async def test_the_four_lines_the_policy_cannot_judge_in_bypass_mode_run_and_change_nothing(
    place: tuple[Runtime, Path, Path],
) -> None:
    runtime, workspace, _state = place
    for line in (
        "cat $(echo toolrt.d/p.yaml)",
        "f=toolrt.d/p.yaml; cat $f",
        "cat $PWD/toolrt.d/p.yaml",
        "shopt -s globstar; sed -i s/deny/allow/ **/*.yaml",
    ):
        result = await runtime.call("run_command", {"command": line}, BYPASS)
        assert result.status is not Status.denied, (line, result.content)  # allowed: the sandbox stops it
        assert MARK not in result.content and "apiVersion" not in result.content
    assert (workspace / "toolrt.d" / "p.yaml").read_text() == PACKS
    await runtime.close()


async def test_ordinary_work_goes_on_in_the_sandbox(place: tuple[Runtime, Path, Path]) -> None:
    runtime, workspace, _state = place
    line = (
        "mkdir -p build && echo made > build/out.txt && cat src/app.py build/out.txt"
        " && python3 -c 'print(2 + 2)' && ls / > /dev/null && echo $$"
    )
    result = await runtime.call("run_command", {"command": line}, BYPASS)
    assert result.status is Status.ok, result.content
    assert "print(1)" in result.content and "made" in result.content and "4" in result.content
    assert (workspace / "build" / "out.txt").read_text() == "made\n"
    failing = await runtime.call("run_command", {"command": "echo before; exit 3"}, BYPASS)
    assert "before" in failing.content and "3" in failing.content
    await runtime.close()


async def test_a_daemon_left_by_a_sandboxed_command_does_not_outlive_it(place: tuple[Runtime, Path, Path]) -> None:
    runtime, workspace, _state = place
    line = "setsid sh -c 'sleep 300 & echo $! > daemon.pid' & sleep 0.2; cat daemon.pid"
    result = await runtime.call("run_command", {"command": line}, BYPASS)
    assert result.status is Status.ok, result.content
    # The command's PID namespace ended with it: nothing of it is left on this machine.
    leftover = [
        entry
        for entry in Path("/proc").iterdir()
        if entry.name.isdigit() and _cwd_is(entry, workspace) and _cmd(entry).startswith("sleep")
    ]
    assert leftover == []
    await runtime.close()


def _cwd_is(entry: Path, workspace: Path) -> bool:
    try:
        return Path(entry / "cwd").resolve() == workspace.resolve()
    except OSError:
        return False


def _cmd(entry: Path) -> str:
    try:
        return (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def test_covered_paths_never_cover_the_workspace_or_a_folder_holding_it(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "sub").mkdir(parents=True)
    (workspace / "a.yaml").write_text("x")
    (workspace / "sub" / "b.yml").write_text("x")
    (tmp_path / "top.yaml").write_text("x")
    state = tmp_path / "state"
    (state / "artifacts").mkdir(parents=True)
    covered = covered_paths(
        [(tmp_path, True, False), (state, False, False), (state / "artifacts", False, False)], workspace
    )
    assert str(tmp_path) not in covered and str(workspace) not in covered
    assert str(tmp_path / "top.yaml") in covered
    assert str(workspace / "a.yaml") in covered and str(workspace / "sub" / "b.yml") in covered
    assert str(state) in covered and str(state / "artifacts") not in covered  # inside a covered folder


def test_command_sandbox_off_runs_commands_without_it(tmp_path: Path) -> None:
    (tmp_path / "toolrt.d").mkdir()
    (tmp_path / "toolrt.d" / "p.yaml").write_text(PACKS)
    settings = Settings(state_dir=tmp_path / "state", hot_reload=False, command_sandbox="off")
    runtime = Runtime([tmp_path / "toolrt.d"], workspace_root=tmp_path, settings=settings)
    assert runtime.hide == ()
    runtime.close_sync()


def test_command_sandbox_on_starts_where_the_machine_allows_it(tmp_path: Path) -> None:
    (tmp_path / "toolrt.d").mkdir()
    (tmp_path / "toolrt.d" / "p.yaml").write_text(PACKS)
    settings = Settings(state_dir=tmp_path / "state", hot_reload=False, command_sandbox="on")
    try:
        runtime = Runtime([tmp_path / "toolrt.d"], workspace_root=tmp_path, settings=settings)
    except ConfigError as err:  # pragma: no cover - only where the probe and the start disagree
        pytest.fail(str(err))
    assert str((tmp_path / "toolrt.d").resolve()) in runtime.hide
    runtime.close_sync()


def test_cap_sys_admin_does_not_come_back_through_the_inheritable_set() -> None:
    """Root with CAP_SYS_ADMIN in its inheritable set would keep it across exec despite
    the bounding set: the sandbox clears it there too, so the command cannot unmount."""
    import inspect
    import subprocess
    import sys

    from runtime.execution.sandbox import enter_sandbox

    program = (
        "from __future__ import annotations\nimport ctypes, os\n"
        + inspect.getsource(enter_sandbox)
        + """
libc = ctypes.CDLL(None, use_errno=True)
assert libc.unshare(0x20000000) == 0
pid = os.fork()
if pid == 0:
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)()
    assert libc.capget(header, data) == 0
    data[2] |= 1 << 21
    if libc.capset(header, data) != 0:
        os._exit(3)
    enter_sandbox([])
    os.execvp("sh", ["sh", "-c", "grep -E '^Cap(Inh|Prm|Eff|Amb):' /proc/self/status"])
raise SystemExit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=False)
    if done.returncode == 3:
        pytest.skip("this process may not add CAP_SYS_ADMIN to its inheritable set")
    assert done.returncode == 0, done.stderr
    sets = dict(line.split(":\t") for line in done.stdout.splitlines())
    assert len(sets) == 4
    for name, mask in sets.items():
        assert not int(mask, 16) & (1 << 21), f"{name} still holds CAP_SYS_ADMIN: {mask}"
