"""The workspace built-ins: file_read, file_edit, file_delete, list_dir, glob, grep, run_command.

Each is declared in YAML like any tool (``handler: builtin:file_read``; the shipped
declarations are in the ``workspace-tools`` pack), so platform teams can rename one,
narrow its schema, add rules and policies. The handlers here only translate
arguments: every path goes through the one resolver of :mod:`runtime.workspace`,
and the file work runs in a worker thread so that a large file or a lock wait never
stalls the event loop that serves the other calls.
"""

from __future__ import annotations

import asyncio
import shutil
import threading
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from runtime.config.models import HandlerCommand
from runtime.errors import ToolError
from runtime.execution.command import CommandError, PreparedCommand, prepare
from runtime.records import HandlerOutcome
from runtime.tools.workspace_set import WorkspaceTools as WorkspaceTools  # re-exported: defined there
from runtime.tools.workspace_set import lock_dir_for as lock_dir_for
from runtime.workspace import WorkspaceError, delete_file
from runtime.workspace import search as workspace_search

if TYPE_CHECKING:
    from runtime.pipeline.env import TurnEnv


_FALLBACK: dict[Path, WorkspaceTools] = {}
_FALLBACK_LOCK = threading.Lock()


def tools_for(env: TurnEnv) -> WorkspaceTools:
    """The turn's workspace tools (a TurnEnv built by hand gets a shared default set)."""
    tools = env.workspace_tools
    if tools is not None:
        return tools  # type: ignore[no-any-return]
    root = Path(env.workspace_root)
    with _FALLBACK_LOCK:
        tools = _FALLBACK.get(root)
        if tools is None:
            if not root.is_dir():
                raise ToolError("the workspace root does not exist, so there are no files to work with")
            tools = WorkspaceTools.create(root, env.settings.workspace_deny, lock_dir_for(env.settings, root))
            _FALLBACK[root] = tools
    return tools


def _integer(args: Mapping[str, Any], name: str, default: int | None) -> int | None:
    value = args.get(name, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError(f"`{name}` must be a whole number")
    return value


async def file_read(args: Mapping[str, Any], env: TurnEnv) -> HandlerOutcome:
    """Numbered lines of a text file, with the whole file's sha256 for later edits."""
    tools = tools_for(env)
    result = await asyncio.to_thread(
        tools.reader.read, str(args.get("path", "")), _integer(args, "offset", None), _integer(args, "limit", None)
    )
    meta = {
        "path": result.path,
        "sha256": result.sha256,
        "cache_hit": result.cache_hit,
        "total_lines": result.total_lines,
    }
    return HandlerOutcome(value=result.render(), metadata=MappingProxyType(meta))


async def file_edit(args: Mapping[str, Any], env: TurnEnv) -> HandlerOutcome:
    """replace / append / insert / str_replace, atomically, under a cross-process lock."""
    tools = tools_for(env)
    result = await asyncio.to_thread(
        tools.editor.edit,
        str(args.get("path", "")),
        str(args.get("mode", "str_replace")),
        content=args.get("content"),
        old_string=args.get("old_string"),
        new_string=args.get("new_string"),
        replace_all=bool(args.get("replace_all", False)),
        line=_integer(args, "line", None),
        expected_hash=args.get("expected_hash"),
    )
    meta = {
        "path": result.path,
        "hash_before": result.old_sha256,
        "hash_after": result.new_sha256,
        "created": result.created,
        "changed": result.changed,
    }
    return HandlerOutcome(value=result.render(), metadata=MappingProxyType(meta))


async def file_delete(args: Mapping[str, Any], env: TurnEnv) -> HandlerOutcome:
    """Remove one regular file (never a directory or a link), under the edit lock."""
    tools = tools_for(env)
    result = await asyncio.to_thread(delete_file, tools.editor, str(args.get("path", "")), args.get("expected_hash"))
    meta = {"path": result.path, "hash_before": result.sha256, "deleted": True, "bytes": result.size}
    return HandlerOutcome(value=result.render(), metadata=MappingProxyType(meta))


async def list_dir(args: Mapping[str, Any], env: TurnEnv) -> str:
    """A depth-limited listing of a workspace directory."""
    tools = tools_for(env)
    return await asyncio.to_thread(
        workspace_search.list_dir,
        tools.workspace,
        str(args.get("path", ".")),
        depth=_integer(args, "depth", 1) or 1,
        limit=_integer(args, "limit", 500) or 500,
        show_hidden=bool(args.get("show_hidden", False)),
    )


async def glob(args: Mapping[str, Any], env: TurnEnv) -> str:
    """Workspace files matching a glob pattern."""
    tools = tools_for(env)
    return await asyncio.to_thread(
        workspace_search.glob,
        tools.workspace,
        str(args.get("pattern", "")),
        str(args.get("path", ".")),
        limit=_integer(args, "limit", 1000) or 1000,
    )


async def grep(args: Mapping[str, Any], env: TurnEnv) -> str:
    """Lines (or files, or counts) matching a regular expression."""
    tools = tools_for(env)
    output = str(args.get("output", "content"))
    if output not in ("content", "files", "count"):
        raise ToolError("`output` must be one of content, files, count")
    return await asyncio.to_thread(
        workspace_search.grep,
        tools.workspace,
        str(args.get("pattern", "")),
        str(args.get("path", ".")),
        glob=args.get("glob"),
        ignore_case=bool(args.get("ignore_case", False)),
        output=output,  # type: ignore[arg-type]
        context=_integer(args, "context", 0) or 0,
        limit=_integer(args, "limit", 200) or 200,
    )


def prepare_command_line(args: Mapping[str, Any], env: TurnEnv, tool_total_s: float) -> tuple[PreparedCommand, float]:
    """run_command: the argv (bash -c LINE), working directory inside the workspace,
    allow-listed non-interactive environment, and the time limit for this call (the
    call's ``timeout_s`` if it asks for less than the tool allows).

    bash, not sh: the permission stage splits the line the way bash reads it."""
    line = args.get("command")
    if not isinstance(line, str) or not line.strip():
        raise ToolError("`command` must be a non-empty command line")
    cwd = "."
    if args.get("cwd") not in (None, "", "."):
        resolved = tools_for(env).workspace.resolve(str(args["cwd"]))
        if not resolved.is_dir:
            raise WorkspaceError(f"cwd `{resolved.relative}` is not a directory; give a directory inside the workspace")
        cwd = resolved.relative
    total_s = tool_total_s
    asked = args.get("timeout_s")
    if isinstance(asked, int | float) and not isinstance(asked, bool) and asked > 0:
        total_s = min(float(asked), tool_total_s)
    shell = shutil.which("bash")
    if shell is None:
        # The permission stage judged the line as bash reads it; another shell could run other commands.
        raise ToolError("run_command needs bash, which is not installed on this machine")
    template = HandlerCommand(argv=[shell, "-c", "{command}"], cwd=cwd)
    try:
        prepared = prepare(template, {"command": line}, env.workspace_root)
    except CommandError as err:
        raise ToolError(str(err)) from None
    return prepared, total_s


HANDLERS = {
    "file_read": file_read,
    "file_edit": file_edit,
    "file_delete": file_delete,
    "list_dir": list_dir,
    "glob": glob,
    "grep": grep,
}
