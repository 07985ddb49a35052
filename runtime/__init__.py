"""toolrt: a declarative tool runtime for LLM agents.

Tools, rules, policies, redaction and output profiles are declared in YAML and
compiled into an immutable :class:`Snapshot`::

    from runtime import load_snapshot

    snapshot = load_snapshot(["examples/coding-agent"])
    tool = snapshot.tools["file_read"]
    problems = tool.arguments.validate({"path": 3})
"""

from runtime.config.cache import CompileCache
from runtime.config.compile import BuildResult, build_snapshot, load_snapshot
from runtime.config.problems import Location, Problem, Severity
from runtime.errors import CelCompileError, ConfigError, ToolrtError, UsageError
from runtime.settings import Settings
from runtime.snapshot import CompiledRule, CompiledTool, Snapshot
from runtime.validation.arguments import ArgumentProblem

__version__ = "0.1.0"

__all__ = [
    "ArgumentProblem",
    "BuildResult",
    "CelCompileError",
    "CompileCache",
    "CompiledRule",
    "CompiledTool",
    "ConfigError",
    "Location",
    "Problem",
    "Settings",
    "Severity",
    "Snapshot",
    "ToolrtError",
    "UsageError",
    "__version__",
    "build_snapshot",
    "load_snapshot",
]
