"""Resolving a tool's handler while the snapshot is built (never per call).

``builtin:NAME`` must name a built-in; ``python:module:function`` is imported (from
the environment, or from a module beside the config files); ``mcp:server/tool`` must
name a declared McpServer; ``command``/``http`` templates may only use ``{field}``
placeholders that the input schema declares.
"""

from __future__ import annotations

import inspect
import os
import string
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from runtime.config.expressions import Finding
from runtime.config.handler_import import import_handler_module
from runtime.config.models import HandlerSpec, ToolSpec
from runtime.config.suggest import did_you_mean
from runtime.execution.command import quote_state
from runtime.http.lint import http_findings
from runtime.http.request import build_plan
from runtime.snapshot import Handler

BUILTINS = (
    "file_read",
    "file_edit",
    "file_delete",
    "artifact_read",
    "list_dir",
    "glob",
    "grep",
    "run_command",
    "tool_search",
    "job_status",
)
_HANDLER_PATH = ("spec", "handler")


def handler_parts(spec: ToolSpec) -> tuple[str, str, HandlerSpec | None]:
    """(kind, target, object form) of a tool's handler."""
    handler = spec.handler
    if isinstance(handler, str):
        kind, _, target = handler.partition(":")
        return kind, target, None
    for kind in ("builtin", "python", "mcp"):
        target = getattr(handler, kind)
        if target is not None:
            return kind, target, handler
    return ("command" if handler.command is not None else "http"), "", handler


def resolve_handler(
    spec: ToolSpec, mcp_servers: Sequence[str], search_dirs: Sequence[Path]
) -> tuple[Handler | None, list[Finding]]:
    """The resolved handler, or None with findings saying what to fix."""
    kind, target, form = handler_parts(spec)
    findings: list[Finding] = []
    function: Callable[..., Any] | None = None
    path = _HANDLER_PATH if form is None else (*_HANDLER_PATH, kind)
    if kind == "builtin" and target not in BUILTINS:
        findings.append(
            Finding(
                path,
                "unknown-builtin",
                f"no built-in tool `{target}`.{did_you_mean(target, BUILTINS)} Built-ins: {', '.join(BUILTINS)}.",
            )
        )
    elif kind == "mcp":
        server = target.split("/", 1)[0]
        if server not in mcp_servers:
            known = ", ".join(sorted(mcp_servers)) or "none declared"
            findings.append(
                Finding(
                    path,
                    "unknown-mcp-server",
                    f"handler names MCP server `{server}`, which is not declared.{did_you_mean(server, mcp_servers)} "
                    f"Declare it with `kind: McpServer` (declared: {known}).",
                )
            )
    elif kind == "python":
        function, problem = _import_function(target, search_dirs)
        if problem:
            findings.append(Finding(path, "handler-unresolved", problem))
    elif form is not None and kind == "command" and form.command is not None:
        for index, item in enumerate(form.command.argv):
            findings.extend(_template_findings(item, spec, (*_HANDLER_PATH, "command", "argv", index)))
        if form.command.shell:
            findings.extend(_single_quoted_placeholders(form.command.argv))
    elif form is not None and kind == "http" and form.http is not None:
        findings.extend(http_findings(spec, form.http))
    if any(not f.warning for f in findings):
        return None, findings
    is_async, takes_context = _call_style(function) if function is not None else (False, False)
    handler = Handler(
        kind=kind,
        target=target,
        command=form.command if form is not None else None,
        http=form.http if form is not None else None,
        function=function,
        is_async=is_async,
        takes_context=takes_context,
        # Absolute: an isolated handler's child looks there from the workspace, not from here.
        search_dirs=tuple(os.path.abspath(d) for d in search_dirs) if kind == "python" else (),
        prepared=build_plan(form.http) if form is not None and form.http is not None and kind == "http" else None,
    )
    return handler, findings


def _call_style(function: Callable[..., Any]) -> tuple[bool, bool]:
    """(is a coroutine function, takes a second ``context`` parameter): decided once."""
    is_async = inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(type(function).__call__)
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return is_async, False
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    takes_context = len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in parameters)
    return is_async, takes_context


def _single_quoted_placeholders(argv: list[str]) -> Iterator[Finding]:
    """In a shell template a placeholder inside '...' would reach the shell unexpanded."""
    quote: str | None = None
    for index, item in enumerate(argv):
        for literal, name, _spec, _conversion in string.Formatter().parse(item):
            quote = quote_state(literal, quote)
            if name is not None and quote == "'":
                yield Finding(
                    (*_HANDLER_PATH, "command", "argv", index),
                    "handler-template",
                    f"placeholder `{{{name}}}` is inside single quotes, where the shell cannot expand it; use double "
                    "quotes or none (values are always passed safely).",
                )
        quote = quote_state(" ", quote)


def _template_findings(template: str, spec: ToolSpec, path: tuple[str | int, ...]) -> Iterator[Finding]:
    declared = spec.input_schema.get("properties", {}) if isinstance(spec.input_schema.get("properties"), dict) else {}
    try:
        fields = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
    except ValueError as err:
        yield Finding(
            path,
            "handler-template",
            f"bad template `{template}`: {err}. Use `{{name}}` for an argument and `{{{{`/`}}}}` for literal braces.",
        )
        return
    for name in fields:
        root = name.split(".")[0].split("[")[0]
        if root and name != root:
            yield Finding(
                path,
                "handler-template",
                f"template uses `{{{name}}}`; only plain argument names are filled in, e.g. `{{{root}}}`.",
            )
            continue
        if not root:
            yield Finding(
                path,
                "handler-template",
                f"template `{template}` has an empty `{{}}`; name the argument, e.g. `{{path}}`.",
            )
        elif root not in declared:
            yield Finding(
                path,
                "handler-template",
                f"template uses `{{{root}}}` but the input schema declares no `{root}`.{did_you_mean(root, declared)} "
                f"Declared: {', '.join(sorted(declared)) or 'none'}.",
            )


def _import_function(target: str, search_dirs: Sequence[Path]) -> tuple[Callable[..., Any] | None, str | None]:
    module_name, _, attribute = target.partition(":")
    try:
        module = import_handler_module(module_name, search_dirs)
    except ModuleNotFoundError as err:
        return (
            None,
            f"cannot import module `{module_name}` ({err}). Install it, put it beside the config files, or add its "
            "folder to PYTHONPATH.",
        )
    except Exception as err:  # noqa: BLE001 - importing user code can fail in any way; report it
        return None, f"importing `{module_name}` failed: {type(err).__name__}: {err}."
    function = getattr(module, attribute, None)
    if function is None:
        names = [n for n in dir(module) if not n.startswith("_")]
        return None, f"module `{module_name}` has no `{attribute}`.{did_you_mean(attribute, names)}"
    if not callable(function):
        return None, f"`{target}` is not callable."
    return function, None
