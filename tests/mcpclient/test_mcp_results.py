"""A ``CallToolResult`` becomes an Outcome: error text, structured value, or the
content blocks joined with the non-text ones described; and without the MCP SDK an
mcp tool answers with how to install it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import mcp_types as types
import pytest
from mcp_support import ALLOW_ALL, mcp_tool, server_doc, write_config

from runtime.mcpclient.results import MAX_BLOCKS, MAX_CHARS, outcome_of
from runtime.records import Status


def text(value: str) -> types.TextContent:
    return types.TextContent(type="text", text=value)


@pytest.mark.parametrize(
    ("result", "value", "error"),
    [
        (types.CallToolResult(content=[text("plain")]), "plain", None),
        (types.CallToolResult(content=[text("a"), text("b")]), "a\n\nb", None),
        (types.CallToolResult(content=[text("{}")], structured_content={"k": [1]}), {"k": [1]}, None),
        (types.CallToolResult(content=[text("nope")], is_error=True), None, "nope"),
        (
            types.CallToolResult(content=[], is_error=True),
            None,
            "The tool reported an error without saying what it was.",
        ),
        (types.CallToolResult(content=[]), "", None),
    ],
    ids=["text", "joined", "structured", "is-error", "silent-error", "empty"],
)
def test_call_tool_result_maps_to_an_outcome(result: types.CallToolResult, value: object, error: str | None) -> None:
    outcome = outcome_of(result)
    assert (outcome.value, outcome.error) == (value, error)
    assert outcome.status is (Status.error if error else Status.ok)


def test_non_text_blocks_are_described() -> None:
    blocks: list[types.ContentBlock] = [
        types.ImageContent(type="image", data="AAAA", mime_type="image/png"),
        types.AudioContent(type="audio", data="AAAAAAAA", mime_type="audio/wav"),
        types.ResourceLink(
            type="resource_link", name="report", uri="https://example.com/r.pdf", mime_type="application/pdf"
        ),
        types.EmbeddedResource(
            type="resource",
            resource=types.BlobResourceContents(uri="file:///x.bin", blob="AAAA", mime_type="application/octet-stream"),
        ),
    ]
    described = outcome_of(types.CallToolResult(content=blocks)).value.split("\n\n")
    assert described == [
        "[image content: image/png, 3 bytes; not shown]",
        "[audio content: audio/wav, 6 bytes; not shown]",
        "[resource link: report <https://example.com/r.pdf>, application/pdf]",
        "[resource <file:///x.bin> (application/octet-stream): binary, 3 bytes; not shown]",
    ]


def test_a_result_with_endless_content_blocks_keeps_a_bounded_number_and_counts_the_rest() -> None:
    blocks: list[types.ContentBlock] = [text("x") for _ in range(MAX_BLOCKS + 5000)]
    value = outcome_of(types.CallToolResult(content=blocks)).value
    assert value.count("x") == MAX_BLOCKS
    assert value.endswith("[5,000 more content block(s) from the MCP server not kept]")


@pytest.mark.parametrize("is_error", [False, True], ids=["value", "error"])
def test_a_result_with_more_text_than_the_ceiling_is_cut_and_says_so(is_error: bool) -> None:
    blocks: list[types.ContentBlock] = [text("a" * (MAX_CHARS // 2)), text("b" * MAX_CHARS), text("c")]
    outcome = outcome_of(types.CallToolResult(content=blocks, is_error=is_error))
    kept = outcome.error if is_error else outcome.value
    assert isinstance(kept, str)
    first, second, *notes = kept.split("\n\n")
    assert len(first) + len(second) + 2 == MAX_CHARS and set(second) == {"b"}
    assert notes == [
        f"[cut at {MAX_CHARS:,} characters: the MCP server sent more, which is not kept]",
        "[1 more content block(s) from the MCP server not kept]",
    ]


def test_a_result_exactly_at_the_ceiling_is_kept_whole() -> None:
    value = outcome_of(types.CallToolResult(content=[text("a" * MAX_CHARS)])).value
    assert value == "a" * MAX_CHARS


def test_without_the_sdk_an_mcp_tool_says_how_to_install_it(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "config", server_doc(), mcp_tool("remote_echo", "fx/echo", read_only=True), ALLOW_ALL
    )
    # A fresh interpreter in which `import mcp` fails, as when the extra is not installed.
    script = textwrap.dedent(
        f"""
        import sys
        sys.modules["mcp"] = None
        from runtime.records import Call
        from runtime.runtime import Runtime
        rt = Runtime([{str(config)!r}], workspace_root={str(tmp_path)!r}, watch=False)
        result = rt.run_turn_sync([Call("c", "remote_echo", {{}})])[0]
        rt.close_sync()
        print(result.status.value, list(rt.snapshot.tools), result.content)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=Path(__file__).parents[2]
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("error ['remote_echo']")
    assert "pip install 'toolrt[mcp]'" in done.stdout
