"""Running a child process under total and idle timeouts, and stopping its whole tree.

Killing only the process we started leaves its children running (a test runner's
workers, a shell's pipeline). Every command runs under a supervisor that is a child
subreaper (:mod:`runtime.execution.reaper`): orphans of its tree are re-parented to
it, so a daemon that double-forked into a session of its own with a cleared
environment is still found, and the supervisor takes the whole tree down when the
command ends or a stop reaches it. The supervisor is started in a new session, so its
process group holds the tree too; a stop signals the group, and also any descendant
that left the group (found through /proc before signalling), first with SIGTERM,
then, after the grace period, with SIGKILL.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import secrets
import shutil
import signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from runtime.execution.reaper import supervised

_READ_CHUNK = 65536
_POLL_S = 0.01
_EXIT_POLL_S = 0.25
_DRAIN_S = 0.5
_REAP_S = 2.0
TAG_VARIABLE = "TOOLRT_PROCESS_TAG"


@dataclass(frozen=True, slots=True)
class ProcessResult:
    exit_code: int | None
    timed_out: str | None  # "total", "idle" or None
    pid: int
    #: The command reached its ceiling of processes (runtime.execution.proclimit) and
    #: was stopped: that ceiling, else None.
    process_limit: int | None = None


class Progress:
    """Lets output (or a handler's progress report) push an idle deadline forward."""

    __slots__ = ("_scope", "_deadline", "_idle_s", "_loop")

    def __init__(self, loop: asyncio.AbstractEventLoop, deadline: float, idle_s: float | None) -> None:
        self._loop = loop
        self._deadline = deadline
        self._idle_s = idle_s
        self._scope: asyncio.Timeout | None = None

    def attach(self, scope: asyncio.Timeout) -> None:
        self._scope = scope
        self.touch()

    def touch(self) -> None:
        """Activity seen now: the next idle expiry is idle_s from now (never past the total deadline)."""
        if self._scope is not None and self._idle_s is not None and not self._scope.expired():
            self._scope.reschedule(min(self._deadline, self._loop.time() + self._idle_s))

    def touch_threadsafe(self) -> None:
        self._loop.call_soon_threadsafe(self.touch)

    def which(self) -> str:
        """Which limit expired: total or idle."""
        return "total" if self._loop.time() >= self._deadline - 0.005 else "idle"


async def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    total_s: float,
    idle_s: float | None,
    grace_s: float,
    on_output: Callable[[str], None],
    hide: Sequence[str] = (),
    max_processes: int = 0,
) -> ProcessResult:
    """Run ``argv``; feed its combined stdout/stderr text to ``on_output`` as it arrives.

    On a timeout the whole process tree is stopped before this returns. If the
    awaiting task is cancelled, the tree is stopped too and the cancellation goes on.
    A descendant left running after the command itself exited (and holding its
    output open) is stopped after a short drain period. With ``hide``, the command runs
    in the sandbox with those paths covered (:mod:`runtime.execution.sandbox`); with
    ``max_processes``, under that ceiling of processes and threads
    (:mod:`runtime.execution.proclimit`).
    """
    loop = asyncio.get_running_loop()
    tag = secrets.token_hex(8)
    if not argv or shutil.which(argv[0], path=env.get("PATH", os.defpath)) is None and not _runnable(argv[0], cwd):
        raise FileNotFoundError(2, "No such file or directory", argv[0] if argv else "")
    # The supervisor says on a pipe of its own whether it stopped the command at its
    # process ceiling (not in the output, which the command could forge).
    report_r, report_w = os.pipe() if max_processes > 0 else (-1, -1)
    try:
        proc = await asyncio.create_subprocess_exec(
            *supervised(argv, grace_s, hide, max_processes, report_w),
            cwd=str(cwd),
            env={**env, TAG_VARIABLE: tag},
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
            pass_fds=(report_w,) if report_w >= 0 else (),
        )
    except BaseException:
        if report_r >= 0:
            os.close(report_r)
        raise
    finally:
        if report_w >= 0:
            os.close(report_w)
    try:
        return await _supervise(proc, tag, loop, total_s, idle_s, grace_s, on_output, report_r)
    finally:
        if report_r >= 0:
            os.close(report_r)


async def _supervise(
    proc: asyncio.subprocess.Process,
    tag: str,
    loop: asyncio.AbstractEventLoop,
    total_s: float,
    idle_s: float | None,
    grace_s: float,
    on_output: Callable[[str], None],
    report_r: int,
) -> ProcessResult:
    tree = _Tree(proc, tag)
    stdout = proc.stdout
    if stdout is None:  # pragma: no cover - PIPE was requested
        raise RuntimeError("no stdout pipe")
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    progress = Progress(loop, loop.time() + total_s, idle_s)
    timed_out: str | None = None
    reader: asyncio.Future[bytes] | None = None
    try:
        async with asyncio.timeout_at(loop.time() + total_s) as scope:
            progress.attach(scope)
            exited_at: float | None = None
            while True:
                if reader is None:
                    reader = asyncio.ensure_future(stdout.read(_READ_CHUNK))
                done, _ = await asyncio.wait({reader}, timeout=_EXIT_POLL_S)
                if not done:
                    if proc.returncode is not None:
                        exited_at = exited_at or loop.time()
                        if loop.time() - exited_at >= _DRAIN_S:
                            break  # the command is done; a leftover descendant holds the pipe
                    continue
                chunk = reader.result()
                reader = None
                if not chunk:
                    # Output closed (e.g. `exec >log`): the command may still be working.
                    await proc.wait()
                    break
                progress.touch()
                text = decoder.decode(chunk)
                if text:
                    on_output(text)
    except TimeoutError:
        timed_out = progress.which()
    except BaseException:
        await asyncio.shield(tree.stop(grace_s))
        raise
    finally:
        if reader is not None and not reader.done():
            reader.cancel()
    await tree.stop(grace_s)
    tail = decoder.decode(b"", final=True)
    if tail:
        on_output(tail)
    limit = _reported_limit(report_r) if report_r >= 0 else None
    if limit is not None:
        return ProcessResult(None, None, proc.pid, limit)
    return ProcessResult(proc.returncode if timed_out is None else None, timed_out, proc.pid)


def _reported_limit(report_r: int) -> int | None:
    """The ceiling the supervisor says it stopped the command at, from its report pipe
    (written before it exits; nothing there when it was killed first)."""
    os.set_blocking(report_r, False)
    try:
        said = os.read(report_r, 64)
    except OSError:
        return None
    words = said.split()
    if len(words) == 2 and words[0] == b"process-limit" and words[1].isdigit():
        return int(words[1])
    return None


class _Tree:
    """A started process and everything it spawned (found by parent links and by the
    tag variable every descendant inherits, which also finds those that escaped into
    a session of their own and were re-parented)."""

    def __init__(self, proc: asyncio.subprocess.Process, tag: str) -> None:
        self.proc = proc
        self.marker = f"{TAG_VARIABLE}={tag}".encode() + b"\0"

    def members(self) -> set[int]:
        found = descendants(self.proc.pid) | tagged(self.marker)
        if self.proc.returncode is None:
            found.add(self.proc.pid)
        found.discard(os.getpid())
        return {pid for pid in found if _is_running(pid)}

    async def stop(self, grace_s: float) -> None:
        """SIGTERM the group and every member, SIGKILL what is left after ``grace_s``,
        then reap the leader."""
        victims = self.members()
        if victims:
            _signal_all(self.proc.pid, victims, signal.SIGTERM)
            loop = asyncio.get_running_loop()
            # The supervisor (runtime.execution.reaper) takes its tree down itself within
            # grace_s, then exits: it is given a little longer before SIGKILL reaches it.
            give_up = loop.time() + grace_s + _REAP_S
            while loop.time() < give_up and _alive(victims):
                await asyncio.sleep(_POLL_S)
            victims = self.members()
            if victims:
                _signal_all(self.proc.pid, victims, signal.SIGKILL)
                # SIGKILL is not instant (a large process takes a while to tear down):
                # return only once they are gone, so "stopped" means stopped.
                give_up = loop.time() + _REAP_S
                while loop.time() < give_up and _alive(victims):
                    await asyncio.sleep(_POLL_S)
        try:
            await asyncio.wait_for(self.proc.wait(), _REAP_S)
        except TimeoutError:
            # Something outside the tree still holds our pipe: stop reading from it.
            transport = getattr(self.proc, "_transport", None)
            if transport is not None:
                transport.close()


def _runnable(program: str, cwd: Path) -> bool:
    """A program named by a path (relative to ``cwd``) that exists; PermissionError and
    the like surface from the exec as before."""
    return os.sep in program and (cwd / program).exists()


def _signal_all(pgid: int, pids: set[int], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _alive(pids: set[int]) -> bool:
    return any(_is_running(pid) for pid in pids)


def _is_running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return False
    # The state follows the ")" that closes the command name; Z (zombie) and X are dead.
    state = stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3]
    return state not in (b"Z", b"X")


def tagged(marker: bytes) -> set[int]:
    """Processes whose environment contains ``marker`` (``NAME=value\\0``)."""
    found: set[int] = set()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as handle:
                    if marker in handle.read():
                        found.add(int(entry))
            except OSError:
                continue
    return found


def descendants(root: int) -> set[int]:
    """Every live descendant of ``root``, from the parent links in /proc."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return set()
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry))
    found: set[int] = set()
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found
