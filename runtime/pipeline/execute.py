"""Stage 05, execute: run the handler under its timeouts; every failure becomes a HandlerOutcome.

A timed-out or crashed call to a tool that is not read-only ends as ``unknown``: it
may or may not have taken effect, and the model is told to check before retrying.
Retries happen only for read-only or idempotent tools, only after transient errors,
with exponential backoff.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import secrets
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from runtime.codes import ResultCode
from runtime.config.models import OnTimeout, Trust
from runtime.context import ToolContext
from runtime.errors import ToolError, TransientError
from runtime.execution.child import RESULT_MARKER
from runtime.execution.command import CommandError, PreparedCommand, prepare
from runtime.execution.output import OutputCollector
from runtime.execution.own_python import own_module_argv, own_module_env
from runtime.execution.processes import run_process
from runtime.execution.python import PythonOutcome, Started, call_python, finish_started, start_eagerly
from runtime.mcpclient.calls import call_mcp_tool
from runtime.pipeline.env import CallRunner, TurnEnv
from runtime.records import HandlerOutcome, Status, ValidatedCall
from runtime.shaping.key_material import KeyStream, command_words
from runtime.shaping.untrusted import defuse_markers
from runtime.snapshot import CompiledTool
from runtime.tools.builtins import HANDLERS as BUILTIN_HANDLERS
from runtime.tools.workspace_tools import prepare_command_line

_UNKNOWN = "Result unknown: `{tool}` {what}; it may or may not have taken effect. Check whether it did before retrying."
_TRANSIENT_OS = (ConnectionError, TimeoutError, BlockingIOError)
_CHILD_OUTPUT_LIMIT = 16 * 1024 * 1024
_BACKGROUND_MAX_S = 3600.0  # a background job is stopped after an hour


async def execute(call: ValidatedCall, env: TurnEnv, run_call: CallRunner) -> HandlerOutcome:
    """Run ``call``'s handler (with retries where safe) and report what happened. ``run_call`` runs the steps of a
    workflow handler (the pipeline hands itself in: the workflow runner does not import it)."""
    tool = call.tool
    retry = tool.spec.retry
    if retry.attempts == 0:
        return await _run_once(call, env, run_call)  # no retries declared: no loop
    http = tool.handler.http
    # An http tool may also be retried when its method is idempotent (GET, PUT, DELETE ...).
    retry_allowed = (
        tool.spec.read_only
        or tool.spec.idempotent
        or (http is not None and http.method in ("GET", "HEAD", "PUT", "DELETE"))
    )
    attempt = 0
    while True:
        outcome = await _run_once(call, env, run_call)
        transient = outcome.metadata.get("transient") is True
        if not (retry_allowed and transient and attempt < retry.attempts):
            if attempt:
                outcome = HandlerOutcome(
                    outcome.value,
                    outcome.error,
                    outcome.status,
                    outcome.code,
                    MappingProxyType({**outcome.metadata, "attempts": attempt + 1}),
                )
            return outcome
        await asyncio.sleep(min(retry.max_backoff_s, retry.backoff_s * (2**attempt)))
        attempt += 1


async def _run_once(call: ValidatedCall, env: TurnEnv, run_call: CallRunner) -> HandlerOutcome:
    handler = call.tool.handler
    if handler.kind == "python":
        return await _python(call, env)
    if handler.kind == "command":
        return await _command(call, env)
    if handler.kind == "builtin" and handler.target == "run_command":
        return await _run_command(call, env)
    if handler.kind == "builtin" and handler.target in BUILTIN_HANDLERS:
        return await _builtin(call, env)
    if handler.kind == "mcp":
        return await call_mcp_tool(call, env, _failure)
    if handler.kind == "http":
        from runtime.http.handler import call_http  # httpx is imported only when an http tool runs

        return await call_http(call, env, _failure)
    if handler.kind == "workflow":
        from runtime.workflow.run import run_as_tool  # the workflow modules load when a workflow tool first runs

        return await run_as_tool(call, env, run_call)
    what = f"built-in `{handler.target}`" if handler.kind == "builtin" else f"{handler.kind} handlers"
    return HandlerOutcome(
        error=f"{what} cannot run in this version of toolrt yet.", status=Status.error, code=ResultCode.not_available
    )


def context_for(call: ValidatedCall, env: TurnEnv) -> ToolContext:
    return ToolContext(
        workspace_root=env.workspace_root,
        session=env.session,
        call_id=call.call.id,
        request_id=env.request_id,
        trace_id=env.trace_id,
        tool=call.tool.name,
        snapshot_version=env.snapshot.version,
        artifacts=env.artifacts,
    )


async def _python(call: ValidatedCall, env: TurnEnv) -> HandlerOutcome:
    tool = call.tool
    if tool.spec.process_isolation:
        return await _isolated(call, env)
    timeout = tool.spec.timeout
    context = context_for(call, env) if tool.handler.takes_context else None
    listener = env.progress_listener
    # The turn's progress listener (if any) hears this call's ToolContext.progress() messages.
    on_progress = (
        None
        if listener is None or context is None
        else (lambda message: listener(call.call.id, _progress_text(tool, message)))
    )
    result = await call_python(
        tool.handler, call.args, context, total_s=timeout.total_s, idle_s=timeout.idle_s, on_progress=on_progress
    )
    return _python_outcome(tool, result)


def start(call: ValidatedCall) -> HandlerOutcome | Started | None:
    """Stage 05's hot path, before any await: a python handler that is async, takes no
    context, runs in-process without retries and has only a total limit is run here up
    to its first wait (see runtime.execution.python.start_eagerly). Its outcome, the
    handler waiting (go on with :func:`resume`), or None for any other handler
    (:func:`execute` runs it)."""
    tool = call.tool
    handler = tool.handler
    spec = tool.spec
    if (
        handler.kind != "python"
        or handler.takes_context
        or spec.retry.attempts
        or spec.process_isolation
        or spec.timeout.idle_s is not None
    ):
        return None
    started = start_eagerly(handler, call.args, spec.timeout.total_s)
    if started is None or isinstance(started, Started):
        return started
    return _python_outcome(tool, started)


async def resume(call: ValidatedCall, started: Started) -> HandlerOutcome:
    """The outcome of a handler :func:`start` left waiting."""
    return _python_outcome(call.tool, await finish_started(started))


def _python_outcome(tool: CompiledTool, result: PythonOutcome) -> HandlerOutcome:
    timeout = tool.spec.timeout
    if result.timed_out is not None:
        limit = timeout.total_s if result.timed_out == "total" else timeout.idle_s
        what = f"timed out after {limit:g} s ({'no progress' if result.timed_out == 'idle' else 'total time'})"
        if result.abandoned:
            what += " and could not be stopped: it is still running"
        return _failure(tool, what, Status.timeout, ResultCode.timeout)
    error = result.exception
    if error is None:
        return HandlerOutcome(value=result.value)
    text = _text_of(error)
    if isinstance(error, ToolError):
        return HandlerOutcome(
            error=text or type(error).__name__,
            status=Status.error,
            code=ResultCode.tool_error,
            metadata=_transient(isinstance(error, TransientError)),
        )
    detail = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return _failure(
        tool,
        f"failed with {detail}",
        Status.error,
        ResultCode.handler_error,
        transient=isinstance(error, _TRANSIENT_OS),
    )


async def _isolated(call: ValidatedCall, env: TurnEnv) -> HandlerOutcome:
    """A python handler in a child process, so that a timeout can kill it."""
    tool = call.tool
    handler = tool.handler
    nonce = secrets.token_hex(8)
    context = {
        "workspace_root": str(env.workspace_root),
        "session_id": env.session.id,
        "call_id": call.call.id,
        "request_id": env.request_id,
        "trace_id": env.trace_id,
        "tool": tool.name,
        "snapshot_version": env.snapshot.version,
    }
    request = {
        "nonce": nonce,
        "target": handler.target,
        "search_dirs": list(handler.search_dirs),
        "args": dict(call.args),
        "takes_context": handler.takes_context,
        "context": context,
    }
    output: list[str] = []
    size = [0]

    def keep(text: str) -> None:
        # The result line comes last: keep the end of the output, bounded.
        output.append(text)
        size[0] += len(text)
        if size[0] > 2 * _CHILD_OUTPUT_LIMIT:
            tail = "".join(output)[-_CHILD_OUTPUT_LIMIT:]
            output[:] = [tail]
            size[0] = len(tail)

    with tempfile.TemporaryDirectory(prefix="toolrt-child-") as folder:
        request_file = Path(folder) / "request.json"
        request_file.write_text(json.dumps(request, ensure_ascii=False, default=str), encoding="utf-8")
        timeout = tool.spec.timeout
        result = await run_process(
            own_module_argv("runtime.execution.child", str(request_file)),
            cwd=env.workspace_root,
            env=own_module_env(os.environ, [env.workspace_root]),  # (nothing of the workspace on its path)
            total_s=timeout.total_s,
            idle_s=timeout.idle_s,
            grace_s=timeout.grace_s,
            on_output=keep,
            max_processes=env.settings.command_max_processes,
        )
    if result.process_limit is not None:
        return _over_process_limit(tool, result.process_limit, {})
    if result.timed_out is not None:
        limit = timeout.total_s if result.timed_out == "total" else timeout.idle_s
        return _failure(
            tool,
            (
                f"timed out after {limit:g} s ({'no progress' if result.timed_out == 'idle' else 'total time'}); "
                "its process was stopped"
            ),
            Status.timeout,
            ResultCode.timeout,
        )
    marker = RESULT_MARKER + nonce + " "
    text = "".join(output)
    at = text.rfind(marker)
    if at < 0:
        return _failure(
            tool, f"stopped without a result (exit code {result.exit_code})", Status.error, "handler_crashed"
        )
    payload = json.loads(text[at + len(marker) :].splitlines()[0])
    if payload["ok"]:
        return HandlerOutcome(value=payload["value"])
    if payload["tool_error"]:
        return HandlerOutcome(
            error=payload["message"] or payload["type"],
            status=Status.error,
            code=ResultCode.tool_error,
            metadata=_transient(payload["transient"]),
        )
    detail = f"{payload['type']}: {payload['message']}" if payload["message"] else payload["type"]
    return _failure(tool, f"failed with {detail}", Status.error, ResultCode.handler_error)


async def _builtin(call: ValidatedCall, env: TurnEnv) -> HandlerOutcome:
    function = BUILTIN_HANDLERS[call.tool.handler.target]
    timeout = call.tool.spec.timeout
    try:
        async with asyncio.timeout(timeout.total_s):
            # A built-in that shapes its own output to fit (artifact_read) is told its tool.
            value = await (
                function(call.args, env, call.tool)  # type: ignore[call-arg]
                if getattr(function, "wants_tool", False)
                else function(call.args, env)
            )
    except TimeoutError:
        return _failure(call.tool, f"timed out after {timeout.total_s:g} s", Status.timeout, ResultCode.timeout)
    except ToolError as err:
        return HandlerOutcome(error=str(err), status=Status.error, code=ResultCode.tool_error)
    return (
        value if isinstance(value, HandlerOutcome) else HandlerOutcome(value=value)
    )  # a built-in may report metadata too


async def _command(call: ValidatedCall, env: TurnEnv) -> HandlerOutcome:
    tool = call.tool
    command = tool.handler.command
    if command is None:  # pragma: no cover - the snapshot guarantees it
        return HandlerOutcome(
            error="command handler without a command", status=Status.internal, code=ResultCode.internal_error
        )
    try:
        prepared = prepare(command, call.args, env.workspace_root)
    except CommandError as err:
        return HandlerOutcome(
            error=f"`{tool.name}` cannot run: {err}.", status=Status.invalid, code=ResultCode.bad_command
        )
    return await _spawn(call, env, prepared, tool.spec.timeout.total_s)


async def _run_command(call: ValidatedCall, env: TurnEnv) -> HandlerOutcome:
    """The run_command built-in: the command line runs through bash, in the workspace."""
    try:
        prepared, total_s = prepare_command_line(call.args, env, call.tool.spec.timeout.total_s)
    except ToolError as err:
        return HandlerOutcome(error=str(err), status=Status.invalid, code=ResultCode.bad_command)
    return await _spawn(call, env, prepared, total_s)


def _output_redactor(tool: CompiledTool, env: TurnEnv, prepared: PreparedCommand) -> Any:
    """The stream redactor of a command's output: the tool's profiles, and first the
    private key material the command could print in pieces (when the tool redacts)."""
    inner = tool.redactor.stream() if tool.redactor is not None else None
    keys = env.keys
    if keys is None or tool.redactor is None or not tool.redaction:  # `redaction: []`: environment secrets only
        return inner
    words = command_words(prepared.argv)
    keys.note_paths(words, prepared.cwd)  # a key outside the workspace named by the line
    return KeyStream(keys, inner, words, prepared.cwd)


async def _spawn(call: ValidatedCall, env: TurnEnv, prepared: PreparedCommand, total_s: float) -> HandlerOutcome:
    """Run a prepared command under the tool's timeouts, streaming its output."""
    tool = call.tool
    artifacts = env.artifacts
    collector = OutputCollector(
        limit_chars=tool.output.max_chars,
        tail_chars=max(tool.output.tail_chars, tool.output.preview_chars),
        redactor=_output_redactor(tool, env, prepared),
        open_writer=(
            (
                lambda: artifacts.writer(
                    call_id=call.call.id,
                    tool=tool.name,
                    session=env.session.id,
                    untrusted=tool.spec.trust is Trust.untrusted,
                )
            )
            if artifacts is not None
            else None
        ),
        # One artifact may take at most a quarter of the store's byte budget (4 bytes a character at most).
        max_saved_chars=max(1, artifacts.max_bytes // 16) if artifacts is not None else None,
    )
    timeout = tool.spec.timeout
    jobs = env.jobs
    background = timeout.on_timeout is OnTimeout.background and jobs is not None
    try:
        if background:
            process = asyncio.ensure_future(
                run_process(
                    prepared.argv,
                    cwd=prepared.cwd,
                    env=prepared.env,
                    total_s=_BACKGROUND_MAX_S,
                    idle_s=timeout.idle_s,
                    grace_s=timeout.grace_s,
                    on_output=collector.feed,
                    hide=env.hide,
                    max_processes=env.settings.command_max_processes,
                )
            )
            try:
                await asyncio.wait({process}, timeout=total_s)
            except asyncio.CancelledError:
                process.cancel()
                raise
            if not process.done() and jobs is not None:
                job = jobs.adopt(tool.name, process, collector, session=env.session.id)
                return _backgrounded(tool, job, total_s)
            result = process.result()
        else:
            result = await run_process(
                prepared.argv,
                cwd=prepared.cwd,
                env=prepared.env,
                total_s=total_s,
                idle_s=timeout.idle_s,
                grace_s=timeout.grace_s,
                on_output=collector.feed,
                hide=env.hide,
                max_processes=env.settings.command_max_processes,
            )
    except FileNotFoundError:
        collector.abort()
        return HandlerOutcome(
            error=f"`{tool.name}` cannot run: program `{prepared.argv[0]}` was not found.",
            status=Status.error,
            code=ResultCode.program_not_found,
        )
    except PermissionError:
        collector.abort()
        return HandlerOutcome(
            error=f"`{tool.name}` cannot run: program `{prepared.argv[0]}` is not executable.",
            status=Status.error,
            code=ResultCode.program_not_executable,
        )
    except (ValueError, UnicodeError):
        collector.abort()
        return HandlerOutcome(
            error=(
                f"`{tool.name}` cannot run: an argument contains a NUL character or text that cannot be encoded; "
                "remove it."
            ),
            status=Status.invalid,
            code=ResultCode.bad_command,
        )
    except OSError as err:
        collector.abort()
        if err.errno == errno.E2BIG:
            return HandlerOutcome(
                error=f"`{tool.name}` cannot run: the arguments are too long for a command line; pass less text.",
                status=Status.invalid,
                code=ResultCode.bad_command,
            )
        return HandlerOutcome(
            error=f"`{tool.name}` cannot run: {err.strerror or err}.", status=Status.error, code=ResultCode.spawn_failed
        )
    except BaseException:
        collector.abort()
        raise
    output = collector.finish()
    meta: dict[str, Any] = {"pid": result.pid, "exit_code": result.exit_code, "output_chars": output.total_chars}
    if result.process_limit is not None:
        failure = _over_process_limit(tool, result.process_limit, meta)
        return HandlerOutcome(output, failure.error, failure.status, failure.code, failure.metadata)
    if result.timed_out is not None:
        limit = total_s if result.timed_out == "total" else timeout.idle_s
        reason = "no output" if result.timed_out == "idle" else "total time"
        failure = _failure(
            tool, f"timed out after {limit:g} s ({reason}); its process tree was stopped", Status.timeout, "timeout"
        )
        return HandlerOutcome(
            output,
            failure.error,
            failure.status,
            failure.code,
            MappingProxyType({**meta, "timed_out": result.timed_out}),
        )
    if result.exit_code != 0:
        return HandlerOutcome(
            output,
            f"`{tool.name}` exited with code {result.exit_code}.",
            Status.error,
            "exit_status",
            MappingProxyType(meta),
        )
    return HandlerOutcome(output, metadata=MappingProxyType(meta))


def _over_process_limit(tool: CompiledTool, limit: int, meta: Mapping[str, Any]) -> HandlerOutcome:
    """The outcome of a command stopped at its ceiling of processes (a fork bomb, or a
    build that starts far more processes than the runtime allows)."""
    failure = _failure(
        tool,
        f"started more than {limit} processes and threads at once (the runtime's command_max_processes limit); "
        "forks past it failed and its whole process tree was stopped",
        Status.error,
        ResultCode.process_limit,
    )
    return HandlerOutcome(
        error=failure.error,
        status=failure.status,
        code=failure.code,
        metadata=MappingProxyType({**meta, "process_limit": limit}),
    )


def _backgrounded(tool: CompiledTool, job: Any, after_s: float) -> HandlerOutcome:
    tail, total = job.collector.peek(2000)
    message = (
        f"`{tool.name}` is still running after {after_s:g} s and goes on in the background as job `{job.id}`. "
        f'Check on it with job_status(id="{job.id}"). Output so far: {total:,} characters'
        + (f"; the last part:\n{tail}" if tail else ".")
    )
    return HandlerOutcome(
        value=message,
        status=Status.background,
        code=ResultCode.background,
        metadata=MappingProxyType({"job_id": job.id}),
    )


def _failure(tool: CompiledTool, what: str, status: Status, code: str, *, transient: bool = False) -> HandlerOutcome:
    if not tool.spec.read_only:
        return HandlerOutcome(
            error=_UNKNOWN.format(tool=tool.name, what=what),
            status=Status.unknown,
            code=code,
            metadata=_transient(transient),
        )
    return HandlerOutcome(error=f"`{tool.name}` {what}.", status=status, code=code, metadata=_transient(transient))


def _progress_text(tool: CompiledTool, message: str | None) -> str | None:
    """A handler's progress message as a client may see it: redacted like its output,
    markers defused when the tool is untrusted (it goes out beside the result)."""
    if not message:
        return message
    if tool.redactor is not None and tool.redactor.enabled:
        message = tool.redactor.redact(message)[0]
    return defuse_markers(message) if tool.spec.trust is Trust.untrusted else message


def _text_of(error: BaseException) -> str:
    """``str(error)``, or "" when the exception cannot even say what it is."""
    try:
        return str(error)
    except Exception:  # noqa: BLE001 - a broken __str__ must not turn into a toolrt failure
        return ""


def _transient(flag: bool) -> Mapping[str, Any]:
    return MappingProxyType({"transient": True}) if flag else MappingProxyType({})
