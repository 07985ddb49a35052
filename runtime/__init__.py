"""toolrt: a declarative tool runtime for LLM agents.

Tools, rules, policies, redaction and output profiles are declared in YAML and
compiled into an immutable :class:`Snapshot`::

    from runtime import load_snapshot

    snapshot = load_snapshot(["examples/coding-agent"])
    tool = snapshot.tools["file_read"]
    problems = tool.arguments.validate({"path": 3})
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Imported now for its side effect: the library's logs are off until the app turns them
# on (logger.disable), before any other module of the package can log.
from runtime import logs
from runtime._version import __version__ as __version__

if TYPE_CHECKING:
    from runtime import adapters
    from runtime.config.cache import CompileCache
    from runtime.config.compile import BuildResult, build_snapshot, load_snapshot
    from runtime.config.problems import Location, Problem, Severity
    from runtime.errors import CelCompileError, ConfigError, ToolError, ToolrtError, TransientError, UsageError
    from runtime.pipeline.permit import Approval, Approver
    from runtime.records import Call, Session, Status, ToolResult
    from runtime.runtime import Runtime
    from runtime.settings import Settings
    from runtime.snapshot import CompiledRule, CompiledTool, Snapshot
    from runtime.validation.arguments import ArgumentProblem

# The rest of the public names are imported on first use (PEP 562), so that a process
# that needs one module (the isolated handler's child, the audit child, a CLI command)
# does not pay for importing the whole runtime.
_LAZY = {
    "adapters": ("runtime.adapters", None),
    "CompileCache": ("runtime.config.cache", "CompileCache"),
    "BuildResult": ("runtime.config.compile", "BuildResult"),
    "build_snapshot": ("runtime.config.compile", "build_snapshot"),
    "load_snapshot": ("runtime.config.compile", "load_snapshot"),
    "Location": ("runtime.config.problems", "Location"),
    "Problem": ("runtime.config.problems", "Problem"),
    "Severity": ("runtime.config.problems", "Severity"),
    "CelCompileError": ("runtime.errors", "CelCompileError"),
    "ConfigError": ("runtime.errors", "ConfigError"),
    "ToolError": ("runtime.errors", "ToolError"),
    "ToolrtError": ("runtime.errors", "ToolrtError"),
    "TransientError": ("runtime.errors", "TransientError"),
    "UsageError": ("runtime.errors", "UsageError"),
    "Approval": ("runtime.pipeline.permit", "Approval"),
    "Approver": ("runtime.pipeline.permit", "Approver"),
    "Call": ("runtime.records", "Call"),
    "Session": ("runtime.records", "Session"),
    "Status": ("runtime.records", "Status"),
    "ToolResult": ("runtime.records", "ToolResult"),
    "Runtime": ("runtime.runtime", "Runtime"),
    "Settings": ("runtime.settings", "Settings"),
    "CompiledRule": ("runtime.snapshot", "CompiledRule"),
    "CompiledTool": ("runtime.snapshot", "CompiledTool"),
    "Snapshot": ("runtime.snapshot", "Snapshot"),
    "ArgumentProblem": ("runtime.validation.arguments", "ArgumentProblem"),
}


def __getattr__(name: str) -> Any:
    """Import a public name on first use and keep it as a module attribute."""
    try:
        module_name, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'runtime' has no attribute {name!r}") from None
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "Approval",
    "Approver",
    "ArgumentProblem",
    "Call",
    "BuildResult",
    "CelCompileError",
    "CompileCache",
    "CompiledRule",
    "CompiledTool",
    "ConfigError",
    "Location",
    "Problem",
    "Runtime",
    "Session",
    "Settings",
    "Severity",
    "Snapshot",
    "Status",
    "ToolError",
    "ToolResult",
    "ToolrtError",
    "TransientError",
    "UsageError",
    "__version__",
    "adapters",
    "logs",
    "build_snapshot",
    "load_snapshot",
]
