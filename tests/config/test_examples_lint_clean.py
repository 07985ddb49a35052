"""The shipped examples and packs lint without a single problem, whichever engines run."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.config.compile import build_snapshot
from runtime.settings import Settings

REPO = Path(__file__).resolve().parents[2]
ENGINES = [pytest.param(Settings(cel_engine=e, schema_engine=e), id=e) for e in ("fast", "portable")]


@pytest.mark.parametrize("settings", ENGINES)
@pytest.mark.parametrize(
    ("folder", "files", "documents"),
    [
        pytest.param("examples/coding-agent", 7, 21, id="coding-agent"),
        pytest.param("examples/customer-service", 3, 11, id="customer-service"),
        pytest.param("examples/warehouse", 4, 17, id="warehouse"),
        pytest.param("policies", 5, 15, id="policies"),
    ],
)
def test_shipped_config_lints_clean(folder: str, files: int, documents: int, settings: Settings) -> None:
    result = build_snapshot([REPO / folder], settings)
    assert [str(p) for p in result.problems] == []
    assert result.snapshot is not None
    assert result.snapshot.warnings == ()
    assert (len(result.files), result.documents) == (files, documents)
    assert result.snapshot.cel_engine == settings.cel_engine


def test_coding_agent_example_compiles_its_tools_and_packs() -> None:
    snapshot = build_snapshot(
        [REPO / "examples" / "coding-agent"], Settings(cel_engine="fast", schema_engine="fast")
    ).snapshot
    assert snapshot is not None
    assert sorted(snapshot.tools) == [
        "artifact_read",
        "collect_tests",
        "file_edit",
        "file_read",
        "git_push",
        "glob",
        "grep",
        "job_status",
        "list_dir",
        "run_command",
        "run_tests",
        "tool_search",
    ]
    assert {"secrets", "pii"} <= set(snapshot.redaction_profiles)
    assert {"inline-large", "test-output"} <= set(snapshot.output_profiles)


@pytest.mark.parametrize(
    "folder", ["examples/coding-agent", "examples/customer-service", "examples/warehouse", "policies"]
)
def test_each_folder_lints_clean_on_its_own_as_make_lint_runs_them(folder: str) -> None:
    result = build_snapshot([REPO / folder], Settings(cel_engine="fast", schema_engine="fast"))
    assert [str(p) for p in result.problems] == []


def test_the_examples_folder_lints_clean_as_a_whole() -> None:
    # Both examples in one run: names stay unique across them, and each python handler
    # module is found beside the YAML that names it, not only in the folders passed.
    result = build_snapshot([REPO / "examples"], Settings(cel_engine="fast", schema_engine="fast"))
    assert [str(p) for p in result.problems] == []
