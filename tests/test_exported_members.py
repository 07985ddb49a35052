"""The public API is what runtime/__init__.py exports; this pins it."""

import runtime


def test_public_api_is_exactly_the_documented_names():
    assert sorted(runtime.__all__) == sorted(
        [
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
    )


def test_every_exported_name_exists():
    for name in runtime.__all__:
        assert hasattr(runtime, name), name


def test_config_errors_are_toolrt_errors():
    assert issubclass(runtime.ConfigError, runtime.ToolrtError)
    assert issubclass(runtime.CelCompileError, runtime.ToolrtError)
    assert issubclass(runtime.UsageError, runtime.ToolrtError)
    assert issubclass(runtime.TransientError, runtime.ToolError)
