"""toolrt: a declarative tool runtime for LLM agents.

Tools, rules, policies, redaction and output profiles are declared in YAML and
compiled into an immutable :class:`Snapshot`::

    from runtime import load_snapshot

    snapshot = load_snapshot(["examples/coding-agent"])
    tool = snapshot.tools["file_read"]
    problems = tool.arguments.validate({"path": 3})
"""

from runtime import adapters, logs
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

__version__ = "0.1.0"

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
