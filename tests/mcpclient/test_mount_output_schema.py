"""A mounted tool keeps its server's ``outputSchema``: its results are checked against it
(a server that breaks its own promise gets an error result), it is listed again to
toolrt's MCP clients, and the lock file records it so CI sees it change."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_support import ALLOW_ALL, doc, server_doc, write_config

from runtime.mcpclient.lock import drift
from runtime.mcpclient.mount import ListedTool
from runtime.records import Call, Status
from runtime.runtime import Runtime

MOUNTING = [
    doc("Include", "packs", {"packs": ["redaction-default", "output-default"]}),
    server_doc(include=["typed*", "echo"], trust="trusted"),
    ALLOW_ALL,
]


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    root = tmp_path_factory.mktemp("mcp-output-schema")
    rt = Runtime([write_config(root / "config", *MOUNTING)], workspace_root=root, watch=False)
    yield rt
    rt.close_sync()


def test_a_server_s_output_schema_becomes_the_mounted_tool_s(runtime: Runtime) -> None:
    typed = runtime.snapshot.tools["fx__typed"]
    assert typed.output_check is not None
    assert typed.output_check.schema["required"] == ["name", "size"]
    assert runtime.snapshot.tools["fx__echo"].output_check is None


def test_an_unusable_output_schema_is_dropped_and_the_tool_still_mounts(runtime: Runtime) -> None:
    broken = runtime.snapshot.tools["fx__typed_broken"]
    assert broken.output_check is None
    # The MCP client refuses the server's answer itself (it compiles the schema it listed):
    # an error result that says why, never a crash.
    (result,) = runtime.run_turn_sync([Call(id="c1", name="fx__typed_broken", args={})])
    assert result.status is Status.error and "Invalid schema" in result.content


def test_a_result_that_keeps_the_promise_passes_with_its_data(runtime: Runtime) -> None:
    (result,) = runtime.run_turn_sync([Call(id="c1", name="fx__typed", args={"name": "abc"})])
    assert result.status is Status.ok, result.content
    assert result.structured == {"name": "abc", "size": 3}


def test_a_server_that_breaks_its_own_output_schema_gets_an_error(runtime: Runtime) -> None:
    (result,) = runtime.run_turn_sync([Call(id="c1", name="fx__typed_liar", args={})])
    assert result.status is Status.error
    assert "Invalid structured content" in result.content and "integer" in result.content
    assert result.structured is None


def test_the_lock_records_the_output_schema_and_drift_names_its_change() -> None:
    before = ListedTool("t", "T", {"type": "object"})
    after = ListedTool("t", "T", {"type": "object"}, output_schema={"type": "object"})
    changed = ListedTool("t", "T", {"type": "object"}, output_schema={"type": "object", "required": ["a"]})
    assert drift([before], [after]) == ["`t` changed its output_schema"]
    assert drift([after], [changed]) == ["`t` changed its output_schema"]
    assert drift([after], [after]) == [] and drift([before], [before]) == []


def test_a_lock_written_before_output_schemas_still_reads(tmp_path: Path) -> None:
    from runtime.mcpclient.lock import _tool_json, _tool_of

    plain = ListedTool("t", "T", {"type": "object"})
    assert "output_schema" not in _tool_json(plain)
    typed = ListedTool("t", "T", {"type": "object"}, output_schema={"type": "object"})
    assert _tool_of(_tool_json(typed)) == typed
    with pytest.raises(TypeError, match="output_schema is not an object"):
        _tool_of({**_tool_json(plain), "output_schema": "object"})
