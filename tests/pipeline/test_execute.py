"""Stage 05, execute, through the pipeline with real handlers.

Command handlers: argv templates, shell quoting, the environment allow-list, stdin,
the working directory, exit codes, timeouts that stop the whole tree, and a 50 MB
output spilled to an artifact. Python handlers: sync and async, errors, ToolError vs
other exceptions in write tools, timeouts, progress and retries.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
import time
import uuid
from pathlib import Path

import pytest
from pipeline_support import ConfigDir, call, kill_all, live_pids_with, make_env

from runtime.pipeline.turn import run_turn
from runtime.records import Session, Stage, Status, ToolResult
from runtime.snapshot import Snapshot

PY = sys.executable
PRINT_ARGV = "import sys, json; print(json.dumps(sys.argv[1:]))"
BYPASS = Session(mode="bypass")
STR = {"type": "string"}


async def run_one(
    snapshot: Snapshot, workspace: Path, name: str, args: dict | None = None, *, session: Session = BYPASS
) -> ToolResult:
    (result,) = await run_turn([call(name, args or {})], make_env(snapshot, workspace, session=session))
    return result


# ---------------------------------------------------------------------------
# command handlers


@pytest.fixture
def commands(config: ConfigDir) -> ConfigDir:
    argv_props = {
        "a": STR,
        "b": STR,
        "files": {"type": "array", "items": STR},
        "n": {"type": "integer"},
        "flag": {"type": "boolean"},
    }
    config.command_tool(
        "argv",
        [PY, "-c", PRINT_ARGV, "{a}", "--b", "{b}", "{files}", "{n}", "{flag}"],
        properties=argv_props,
        read_only=True,
    )
    config.command_tool(
        "argv_inline", [PY, "-c", PRINT_ARGV, "--a={a}", "--b={b}"], properties=argv_props, read_only=True
    )
    config.command_tool(
        "shell_echo", ["echo", "{msg}"], properties={"msg": STR}, command={"shell": True}, read_only=True
    )
    config.command_tool(
        "shell_list",
        ["printf '[%s]'", "{items}"],
        properties={"items": {"type": "array", "items": STR}},
        command={"shell": True},
        read_only=True,
    )
    config.command_tool(
        "env",
        ["env"],
        command={"env": ["TOOLRT_TEST_ALLOWED"], "set_env": {"TOOLRT_TEST_SET": "from-config"}},
        read_only=True,
    )
    config.command_tool(
        "stdin", ["sh", "-c", "cat; read x; echo read-status=$?"], read_only=True, timeout={"total_s": 60}
    )
    config.command_tool("pwd", ["pwd"], read_only=True)
    config.command_tool("pwd_sub", ["pwd"], command={"cwd": "sub"}, read_only=True)
    config.command_tool("pwd_escape", ["pwd"], command={"cwd": "../outside"}, read_only=True)
    config.command_tool("pwd_missing", ["pwd"], command={"cwd": "no/such/dir"}, read_only=True)
    config.command_tool("fail", ["sh", "-c", "echo out; echo err >&2; exit 3"], read_only=True)
    config.command_tool("missing_program", ["toolrt-no-such-program-xyz"], read_only=True)
    return config


async def test_argv_whole_item_placeholders_drop_missing_optionals_and_splice_lists(
    commands: ConfigDir, workspace: Path
) -> None:
    result = await run_one(
        commands.snapshot(), workspace, "argv", {"a": "x y", "files": ["f 1", "f2"], "n": 3, "flag": True}
    )
    assert result.status is Status.ok, result.content
    assert json.loads(result.content) == ["x y", "--b", "f 1", "f2", "3", "true"]


async def test_argv_values_are_never_split_or_shell_interpreted(commands: ConfigDir, workspace: Path) -> None:
    (workspace / "victim").write_text("keep")
    hostile = "; rm -rf victim $(rm -rf victim) `rm -rf victim` *"
    result = await run_one(commands.snapshot(), workspace, "argv", {"a": hostile})
    assert json.loads(result.content) == [hostile, "--b"]
    assert (workspace / "victim").read_text() == "keep"


async def test_argv_placeholder_inside_an_item_needs_its_argument(commands: ConfigDir, workspace: Path) -> None:
    snapshot = commands.snapshot()
    ok = await run_one(snapshot, workspace, "argv_inline", {"a": "1", "b": "2"})
    assert json.loads(ok.content) == ["--a=1", "--b=2"]
    missing = await run_one(snapshot, workspace, "argv_inline", {"a": "1"})
    assert (missing.status, missing.code) == (Status.invalid, "bad_command")
    assert "argument `b` is needed to build the command" in missing.content


async def test_shell_true_quotes_values_so_metacharacters_stay_literal(commands: ConfigDir, workspace: Path) -> None:
    (workspace / "x").mkdir()
    (workspace / "x" / "file").write_text("keep")
    snapshot = commands.snapshot()
    for hostile in ("; rm -rf x", "$(rm -rf x)", "`rm -rf x`", "' ; rm -rf x ; '", "x && rm -rf x", "a\nrm -rf x"):
        result = await run_one(snapshot, workspace, "shell_echo", {"msg": hostile})
        assert result.status is Status.ok
        assert result.content == hostile + "\n"
    assert (workspace / "x" / "file").read_text() == "keep"


async def test_shell_true_quotes_each_list_item(commands: ConfigDir, workspace: Path) -> None:
    result = await run_one(commands.snapshot(), workspace, "shell_list", {"items": ["a b", "; rm -rf /", "c"]})
    assert result.content == "[a b][; rm -rf /][c]"


async def test_environment_is_an_allow_list_with_non_interactive_defaults(
    commands: ConfigDir, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLRT_TEST_SECRET", "s3cr3t-value")
    monkeypatch.setenv("TOOLRT_TEST_ALLOWED", "allowed-value")
    monkeypatch.setenv("PAGER", "less")
    monkeypatch.setenv("TERM", "xterm-256color")
    result = await run_one(commands.snapshot(), workspace, "env")
    env = dict(line.split("=", 1) for line in result.content.splitlines() if "=" in line)
    assert "TOOLRT_TEST_SECRET" not in env
    assert "s3cr3t-value" not in result.content
    assert env["TOOLRT_TEST_ALLOWED"] == "allowed-value"
    assert env["TOOLRT_TEST_SET"] == "from-config"
    assert (env["PAGER"], env["GIT_PAGER"], env["TERM"]) == ("cat", "cat", "dumb")
    assert env["PATH"] == os.environ["PATH"]


async def test_stdin_is_closed_so_cat_and_read_return_at_once(commands: ConfigDir, workspace: Path) -> None:
    started = time.monotonic()
    result = await run_one(commands.snapshot(), workspace, "stdin")
    assert time.monotonic() - started < 30  # returned on EOF, not at the 60 s limit, however loaded the machine
    assert result.status is Status.ok
    assert "read-status=1" in result.content


async def test_commands_run_in_the_workspace_or_a_directory_inside_it(commands: ConfigDir, workspace: Path) -> None:
    (workspace / "sub").mkdir()
    snapshot = commands.snapshot()
    assert (await run_one(snapshot, workspace, "pwd")).content.strip() == str(workspace.resolve())
    assert (await run_one(snapshot, workspace, "pwd_sub")).content.strip() == str((workspace / "sub").resolve())


async def test_a_working_directory_outside_the_workspace_is_refused(commands: ConfigDir, workspace: Path) -> None:
    (workspace.parent / "outside").mkdir()
    result = await run_one(commands.snapshot(), workspace, "pwd_escape")
    assert (result.status, result.code) == (Status.invalid, "bad_command")
    assert "outside the workspace" in result.content


async def test_a_missing_working_directory_is_reported(commands: ConfigDir, workspace: Path) -> None:
    result = await run_one(commands.snapshot(), workspace, "pwd_missing")
    assert (result.status, result.code) == (Status.invalid, "bad_command")
    assert "does not exist in the workspace" in result.content


async def test_a_non_zero_exit_is_an_error_result_with_the_output(commands: ConfigDir, workspace: Path) -> None:
    result = await run_one(commands.snapshot(), workspace, "fail")
    assert (result.status, result.code, result.stage) == (Status.error, "exit_status", Stage.execute)
    assert result.content.startswith("`fail` exited with code 3.")
    assert "out\n" in result.content and "err\n" in result.content
    assert result.metadata["exit_code"] == 3


async def test_a_missing_program_is_an_error_result(commands: ConfigDir, workspace: Path) -> None:
    result = await run_one(commands.snapshot(), workspace, "missing_program")
    assert (result.status, result.code) == (Status.error, "program_not_found")
    assert "toolrt-no-such-program-xyz" in result.content


# Background child, setsid'd child, double fork, SIGTERM-ignoring subshell.
TREE = "sleep 30 & setsid sleep 30 & ( (sleep 30 &) & ) ; (trap '' TERM; sleep 30) & echo ready; sleep 30"


# Tests that need a command to reach a point before its limit fires (the tree up, five
# ticks out) try the limits in turn: the first suits an idle machine, the later ones a
# loaded one, where a run that fired too early proves nothing and is repeated.
SCALES = (1, 4, 16)


def scaled(name: str, scale: int) -> str:
    return name if scale == 1 else f"{name}_x{scale}"


def tree_tools(config: ConfigDir, mark: str) -> ConfigDir:
    marker = {"set_env": {"TOOLRT_TEST_MARK": mark}}
    for k in SCALES:
        total = {"total_s": 0.3 * k, "grace_s": 0.1}
        config.command_tool(scaled("tree_ro", k), ["sh", "-c", TREE], command=marker, read_only=True, timeout=total)
        config.command_tool(
            scaled("ticker", k),
            ["sh", "-c", f"sleep 60 & for i in 1 2 3 4 5; do echo tick; sleep {0.1 * k}; done; sleep 60"],
            command=marker,
            read_only=True,
            timeout={"total_s": 10 * k, "idle_s": 0.3 * k, "grace_s": 0.1},
        )
    config.command_tool("tree_write", ["sh", "-c", TREE], command=marker, timeout={"total_s": 0.3, "grace_s": 0.1})
    return config


async def test_total_timeout_of_a_read_only_command_stops_its_tree(config: ConfigDir, workspace: Path) -> None:
    mark = uuid.uuid4().hex
    snapshot = tree_tools(config, mark).snapshot()
    for k in SCALES:
        name = scaled("tree_ro", k)
        result = await run_one(snapshot, workspace, name)
        left = await _gone(mark)
        assert (result.status, result.code) == (Status.timeout, "timeout")
        assert result.content.startswith(
            f"`{name}` timed out after {0.3 * k:g} s (total time); its process tree was stopped."
        )
        assert result.metadata["timed_out"] == "total"
        assert left == set()
        if "ready" in result.content:  # the output so far is kept (once the tree got that far)
            return
    raise AssertionError(f"the tree never printed ready before its limit: {result.content!r}")


async def test_total_timeout_of_a_write_command_is_result_unknown(config: ConfigDir, workspace: Path) -> None:
    mark = uuid.uuid4().hex
    result = await run_one(tree_tools(config, mark).snapshot(), workspace, "tree_write")
    left = await _gone(mark)
    assert (result.status, result.code) == (Status.unknown, "timeout")
    assert result.content.startswith("Result unknown: `tree_write` timed out after 0.3 s")
    assert "may or may not have taken effect. Check whether it did before retrying." in result.content
    assert left == set()


async def test_idle_timeout_is_reset_by_output_and_then_stops_the_tree(config: ConfigDir, workspace: Path) -> None:
    mark = uuid.uuid4().hex
    snapshot = tree_tools(config, mark).snapshot()
    for k in SCALES:
        started = time.monotonic()
        result = await run_one(snapshot, workspace, scaled("ticker", k))
        elapsed = time.monotonic() - started
        left = await _gone(mark)
        assert result.status is Status.timeout
        assert f"timed out after {0.3 * k:g} s (no output)" in result.content
        assert left == set()
        # A machine so loaded that it opened a gap as long as the limit between two ticks
        # fired it early: that run proves nothing and the next scale runs.
        if result.content.count("tick\n") == 5:
            assert elapsed >= 0.65 * k  # five ticks 0.1 s apart kept it alive past the 0.3 s idle limit
            return
    raise AssertionError(f"the idle limit fired while ticks were still coming: {result.content!r}")


async def _gone(mark: str, within_s: float = 10.0) -> set[int]:
    """Processes carrying ``mark`` still alive after up to ``within_s`` (killed if any)."""
    deadline = time.monotonic() + within_s
    while (left := live_pids_with(mark)) and time.monotonic() < deadline:
        await asyncio.sleep(0.005)
    kill_all(left)
    return left


# A generator script in the workspace: 50,000,000 characters of 100-character lines,
# with an AWS key line every 100,000 lines and one at the end.
GENERATOR = """
import sys
w = sys.stdout.write
line = "x" * 99 + "\\n"
block = line * 1000
for i in range(500):
    if i % 100 == 0:
        w("secret AKIAIOSFODNN7EXAMPLE here\\n")
    w(block)
w("end AKIAIOSFODNN7EXAMPLE\\n")
"""


def expected_redacted_chunks():
    line = "x" * 99 + "\n"
    block = line * 1000
    for i in range(500):
        if i % 100 == 0:
            yield "secret [REDACTED:aws_access_key] here\n"
        yield block
    yield "end [REDACTED:aws_access_key]\n"


def _peak_rss_kb() -> int | None:
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_peak_rss() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
    except OSError:
        return False
    return True


async def test_a_50mb_output_is_spilled_to_an_artifact_holding_the_whole_redacted_text(
    config: ConfigDir, workspace: Path
) -> None:
    (workspace / "gen.py").write_text(GENERATOR)
    config.include("redaction-default", "builtin-tools")
    # The limit is far off: the test is about the output, and a loaded machine can take
    # well over 30 s to generate, redact and spill 50 MB.
    big_timeout = {"total_s": 600}
    config.command_tool("big", [PY, "gen.py"], read_only=True, redaction=["secrets"], timeout=big_timeout)
    env = make_env(config.snapshot(), workspace)
    expected_total = sum(len(c) for c in expected_redacted_chunks())
    can_measure = _reset_peak_rss()
    before = _peak_rss_kb()
    (result,) = await run_turn([call("big")], env)
    after = _peak_rss_kb()

    assert result.status is Status.ok
    meta = result.metadata
    artifact_id = meta["artifact_id"]
    assert meta["truncated"] is True and meta["mode"] == "artifact"
    assert meta["original_chars"] == expected_total == meta["output_chars"]
    assert meta["redactions"] == {"aws_access_key": 6}
    notice, _, preview = result.content.partition("\n")
    assert notice == (
        f"[Output truncated: showing the first 2,000 of {expected_total:,} characters. The full output "
        f"({expected_total:,} characters) "
        f'is saved as artifact `{artifact_id}`; read more with artifact_read(id="{artifact_id}", offset=2000).]'
    )
    assert preview.startswith("secret [REDACTED:aws_access_key] here\n" + "x" * 99 + "\n")
    assert len(preview) == 2000
    assert "AKIA" not in result.content

    info = env.artifacts.info(artifact_id)
    assert info.chars == expected_total
    digest = hashlib.sha256()
    for chunk in expected_redacted_chunks():
        digest.update(chunk.encode())
    assert info.sha256 == digest.hexdigest()
    file_digest = hashlib.sha256()
    with open(info.path, "rb") as handle:
        while block := handle.read(1 << 20):
            assert b"AKIA" not in block
            file_digest.update(block)
    assert file_digest.hexdigest() == digest.hexdigest()
    if can_measure and before is not None and after is not None:
        assert after - before < 100_000, f"peak RSS grew by {after - before} kB while streaming 50 MB"


async def test_the_artifact_of_a_spilled_command_output_can_be_paged_to_the_end(
    config: ConfigDir, workspace: Path
) -> None:
    config.include("builtin-tools")
    script = "for i in $(seq 1 3000); do echo line-$i; done"
    config.command_tool("lines", ["sh", "-c", script], read_only=True, output={"max_chars": 1000, "preview_chars": 100})
    env = make_env(config.snapshot(), workspace)
    (result,) = await run_turn([call("lines")], env)
    artifact_id = result.metadata["artifact_id"]
    notice, _, preview = result.content.partition("\n")
    assert f'artifact_read(id="{artifact_id}", offset={len(preview)})' in notice
    text, offset = "", len(preview)
    for _ in range(50):
        (page,) = await run_turn([call("artifact_read", {"id": artifact_id, "offset": offset, "limit": 5000})], env)
        assert page.status is Status.ok, page.content
        body, _, footer = page.content.rpartition("\n")
        text += body
        if footer.startswith("[end of artifact"):
            break
        offset = int(footer.rsplit("offset=", 1)[1].rstrip(")]"))
    else:
        pytest.fail("never reached the end of the artifact")
    assert preview + text == "".join(f"line-{i}\n" for i in range(1, 3001))


# ---------------------------------------------------------------------------
# python handlers

PY_HANDLERS = """
import asyncio
import time
from pathlib import Path

from runtime.errors import ToolError, TransientError


def add(args):
    return {"sum": args["a"] + args["b"]}


async def async_add(args):
    await asyncio.sleep(0.01)
    return {"sum": args["a"] + args["b"]}


def boom(args):
    raise ValueError("boom: the handler broke")


async def async_boom(args):
    raise KeyError("missing")


def refuse(args):
    raise ToolError("ticket 42 not found")


def _log(context, args):
    return Path(context.workspace_root) / args["log"]


async def async_sleeper(args, context):
    log = _log(context, args)
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        log.write_text("cancelled")
        raise
    log.write_text("finished")
    return "finished"


def sync_sleeper(args, context):
    log = _log(context, args)
    seen = context.cancelled.wait(60)
    log.write_text("saw cancelled" if seen else "never cancelled")
    return "late"


def sync_steps(args, context):
    for _ in range(args["steps"]):
        time.sleep(args.get("gap", 0.1))
        if args["report"]:
            context.progress("one more step")
    return "done"


async def async_steps(args, context):
    for _ in range(args["steps"]):
        await asyncio.sleep(args.get("gap", 0.1))
        if args["report"]:
            context.progress()
    return "done"


def flaky(args, context):
    log = _log(context, args)
    with log.open("a") as handle:
        handle.write(f"{time.monotonic()}\\n")
    attempt = len(log.read_text().splitlines())
    if attempt <= args["fail"]:
        if args.get("kind") == "connection":
            raise ConnectionError("connection reset")
        raise TransientError(f"busy (attempt {attempt})")
    return f"ok on attempt {attempt}"
"""

LOG = {"log": STR}
AB = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}
STEPS = {
    "type": "object",
    "properties": {"steps": {"type": "integer"}, "report": {"type": "boolean"}, "gap": {"type": "number"}},
}
FLAKY = {"type": "object", "properties": {"log": STR, "fail": {"type": "integer"}, "kind": STR}}
RETRY = {"attempts": 3, "backoff_s": 0.05, "max_backoff_s": 1}


@pytest.fixture
def py_tools(config: ConfigDir) -> Snapshot:
    c = config.handlers(PY_HANDLERS)
    c.tool("add", c.py("add"), read_only=True, input_schema=AB)
    c.tool("async_add", c.py("async_add"), read_only=True, input_schema=AB)
    c.tool("boom_ro", c.py("boom"), read_only=True)
    c.tool("boom_write", c.py("boom"))
    c.tool("async_boom_write", c.py("async_boom"))
    c.tool("refuse_write", c.py("refuse"))
    log = {"type": "object", "properties": LOG, "required": ["log"]}
    c.tool("async_sleeper_ro", c.py("async_sleeper"), read_only=True, input_schema=log, timeout={"total_s": 0.3})
    c.tool("async_sleeper_write", c.py("async_sleeper"), input_schema=log, timeout={"total_s": 0.3})
    c.tool("sync_sleeper_ro", c.py("sync_sleeper"), read_only=True, input_schema=log, timeout={"total_s": 0.3})
    c.tool("sync_sleeper_write", c.py("sync_sleeper"), input_schema=log, timeout={"total_s": 0.3})
    for k in SCALES:  # steps 0.1 * k s apart under an idle limit of 0.25 * k s
        for kind in ("sync", "async"):
            steps = c.py(f"{kind}_steps")
            timeout = {"total_s": 3 * k, "idle_s": 0.25 * k}
            c.tool(scaled(f"{kind}_steps", k), steps, read_only=True, input_schema=STEPS, timeout=timeout)
        timeout = {"total_s": 0.35 * k, "idle_s": 0.25 * k}
        c.tool(scaled("sync_steps_total", k), c.py("sync_steps"), read_only=True, input_schema=STEPS, timeout=timeout)
    c.tool("flaky_ro", c.py("flaky"), read_only=True, input_schema=FLAKY, retry=RETRY)
    c.tool("flaky_idempotent", c.py("flaky"), idempotent=True, input_schema=FLAKY, retry=RETRY)
    c.tool("flaky_write", c.py("flaky"), input_schema=FLAKY, retry=RETRY)
    c.tool("flaky_no_retry", c.py("flaky"), read_only=True, input_schema=FLAKY)
    return c.snapshot()


@pytest.mark.parametrize("name", ["add", "async_add"])
async def test_sync_and_async_handlers_return_structured_results(
    py_tools: Snapshot, workspace: Path, name: str
) -> None:
    result = await run_one(py_tools, workspace, name, {"a": 2, "b": 3})
    assert result.status is Status.ok
    assert result.structured == {"sum": 5}
    assert json.loads(result.content) == {"sum": 5}


async def test_an_exception_in_a_read_only_handler_is_an_error_result(py_tools: Snapshot, workspace: Path) -> None:
    result = await run_one(py_tools, workspace, "boom_ro")
    assert (result.status, result.code, result.stage) == (Status.error, "handler_error", Stage.execute)
    assert result.content == "`boom_ro` failed with ValueError: boom: the handler broke."


async def test_tool_error_is_a_plain_error_even_for_a_write_tool(py_tools: Snapshot, workspace: Path) -> None:
    result = await run_one(py_tools, workspace, "refuse_write")
    assert (result.status, result.code) == (Status.error, "tool_error")
    assert result.content == "ticket 42 not found"


@pytest.mark.parametrize("name", ["boom_write", "async_boom_write"])
async def test_another_exception_in_a_write_tool_is_result_unknown(
    py_tools: Snapshot, workspace: Path, name: str
) -> None:
    result = await run_one(py_tools, workspace, name)
    assert (result.status, result.code) == (Status.unknown, "handler_error")
    assert result.content.startswith(f"Result unknown: `{name}` failed with ")
    assert "it may or may not have taken effect. Check whether it did before retrying." in result.content


async def test_an_async_handler_past_its_timeout_is_cancelled(py_tools: Snapshot, workspace: Path) -> None:
    started = time.monotonic()
    result = await run_one(py_tools, workspace, "async_sleeper_ro", {"log": "a.log"})
    assert time.monotonic() - started < 30  # stopped at its 0.3 s limit, not after the handler's 60 s
    assert (result.status, result.code) == (Status.timeout, "timeout")
    assert result.content == "`async_sleeper_ro` timed out after 0.3 s (total time)."
    assert (workspace / "a.log").read_text() == "cancelled"


async def test_an_async_write_handler_past_its_timeout_is_result_unknown(py_tools: Snapshot, workspace: Path) -> None:
    result = await run_one(py_tools, workspace, "async_sleeper_write", {"log": "w.log"})
    assert (result.status, result.code) == (Status.unknown, "timeout")
    assert result.content.startswith("Result unknown: `async_sleeper_write` timed out after 0.3 s")
    assert (workspace / "w.log").read_text() == "cancelled"


async def test_a_sync_handler_past_its_timeout_is_abandoned_still_running_and_told_to_stop(
    py_tools: Snapshot, workspace: Path
) -> None:
    started = time.monotonic()
    result = await run_one(py_tools, workspace, "sync_sleeper_ro", {"log": "s.log"})
    assert time.monotonic() - started < 30  # stopped at its 0.3 s limit, not after the handler's 60 s
    assert result.status is Status.timeout
    assert "timed out after 0.3 s (total time) and could not be stopped: it is still running" in result.content
    log = workspace / "s.log"
    deadline = time.monotonic() + 30
    # The thread sees context.cancelled and finishes on its own; the file may exist
    # before its text is written, so wait for the text, not the file.
    while not (log.exists() and log.read_text()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert log.read_text() == "saw cancelled"


async def test_a_sync_write_handler_still_running_is_result_unknown(py_tools: Snapshot, workspace: Path) -> None:
    result = await run_one(py_tools, workspace, "sync_sleeper_write", {"log": "sw.log"})
    assert result.status is Status.unknown
    assert "it is still running; it may or may not have taken effect" in result.content


@pytest.mark.parametrize("name", ["sync_steps", "async_steps"])
async def test_progress_reports_reset_the_idle_timer(py_tools: Snapshot, workspace: Path, name: str) -> None:
    # A machine so loaded that it opens a gap as long as the idle limit between two
    # reports fires the limit: the run is repeated with the gaps and the limit scaled up.
    for k in SCALES:
        started = time.monotonic()
        result = await run_one(py_tools, workspace, scaled(name, k), {"steps": 6, "report": True, "gap": 0.1 * k})
        if result.status is not Status.timeout:
            assert time.monotonic() - started >= 0.6 * k  # far past the 0.25 s idle limit
            assert result.status is Status.ok and result.content == "done"
            return
        assert "(no progress)" in result.content, result.content
    raise AssertionError(f"progress reports did not keep the call alive: {result.content!r}")


@pytest.mark.parametrize("name", ["sync_steps", "async_steps"])
async def test_without_progress_reports_the_idle_timer_fires(py_tools: Snapshot, workspace: Path, name: str) -> None:
    result = await run_one(py_tools, workspace, name, {"steps": 6, "report": False})
    assert result.status is Status.timeout
    assert "timed out after 0.25 s (no progress)" in result.content


async def test_progress_cannot_extend_a_call_past_its_total_limit(py_tools: Snapshot, workspace: Path) -> None:
    # Reports every 0.1 s keep the 0.25 s idle limit off, so the 0.35 s total limit fires;
    # a loaded machine that opens a gap as long as the idle limit gets the scaled-up run.
    for k in SCALES:
        result = await run_one(
            py_tools, workspace, scaled("sync_steps_total", k), {"steps": 6, "report": True, "gap": 0.1 * k}
        )
        assert result.status is Status.timeout
        if "(total time)" in result.content:
            assert f"timed out after {0.35 * k:g} s (total time)" in result.content
            return
    raise AssertionError(f"the total limit never fired first: {result.content!r}")


def _attempt_times(path: Path) -> list[float]:
    return [float(x) for x in path.read_text().split()]


async def test_transient_errors_are_retried_with_backoff_for_read_only_tools(
    py_tools: Snapshot, workspace: Path
) -> None:
    result = await run_one(py_tools, workspace, "flaky_ro", {"log": "ro.log", "fail": 2})
    assert result.status is Status.ok
    assert result.content == "ok on attempt 3"
    assert result.metadata["attempts"] == 3
    times = _attempt_times(workspace / "ro.log")
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert len(times) == 3
    # 0.05 s, then 0.1 s: exponential backoff. Lower bounds only: a loaded machine may
    # stretch either gap, so comparing the two measured gaps with each other is a race.
    assert gaps[0] >= 0.045 and gaps[1] >= 0.095


async def test_retries_stop_after_the_configured_attempts(py_tools: Snapshot, workspace: Path) -> None:
    result = await run_one(py_tools, workspace, "flaky_ro", {"log": "all.log", "fail": 99})
    assert (result.status, result.code) == (Status.error, "tool_error")
    assert result.content == "busy (attempt 4)"
    assert result.metadata["attempts"] == 4
    assert len(_attempt_times(workspace / "all.log")) == 4


async def test_transient_errors_are_retried_for_idempotent_write_tools(py_tools: Snapshot, workspace: Path) -> None:
    result = await run_one(py_tools, workspace, "flaky_idempotent", {"log": "idem.log", "fail": 1})
    assert result.content == "ok on attempt 2"
    assert len(_attempt_times(workspace / "idem.log")) == 2


async def test_transient_errors_are_not_retried_for_non_idempotent_write_tools(
    py_tools: Snapshot, workspace: Path
) -> None:
    result = await run_one(py_tools, workspace, "flaky_write", {"log": "w.log", "fail": 1})
    assert (result.status, result.code) == (Status.error, "tool_error")
    assert result.content == "busy (attempt 1)"
    assert "attempts" not in result.metadata
    assert len(_attempt_times(workspace / "w.log")) == 1


async def test_no_retries_without_a_retry_policy(py_tools: Snapshot, workspace: Path) -> None:
    result = await run_one(py_tools, workspace, "flaky_no_retry", {"log": "n.log", "fail": 1})
    assert result.status is Status.error
    assert len(_attempt_times(workspace / "n.log")) == 1


async def test_connection_errors_count_as_transient_for_read_only_tools(py_tools: Snapshot, workspace: Path) -> None:
    result = await run_one(py_tools, workspace, "flaky_ro", {"log": "c.log", "fail": 1, "kind": "connection"})
    assert result.content == "ok on attempt 2"
    assert "transient" not in result.metadata
