"""A server's Tool documents are made once per listing: a reload whose server lists what
it listed before (declared and surrounded as before) gets the same documents, without
checking every schema again; a changed listing, declaration or config is mounted afresh.
The real fixture server, whose listing a file changes while it runs."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from drift_support import change_listing
from loguru import logger
from mcp_support import ALLOW_ALL, server_doc, write_config

from runtime.runtime import Runtime


@contextmanager
def mount_warnings() -> Iterator[list[str]]:
    """The messages of the warnings about tools left out, logged inside the block."""
    seen: list[str] = []

    def sink(message: Any) -> None:
        if "is not mounted" in message.record["message"]:
            seen.append(message.record["message"])

    handle = logger.add(sink, level="WARNING")
    logger.enable("runtime")
    try:
        yield seen
    finally:
        logger.disable("runtime")
        logger.remove(handle)


def test_an_unchanged_listing_is_mounted_once_and_a_changed_one_again(tmp_path: Path) -> None:
    listing = tmp_path / "listing.json"
    declared = {"include": ["echo", "broken*"], "env": {"FIXTURE_LISTING": str(listing)}}
    config = write_config(tmp_path / "config", server_doc(**declared), ALLOW_ALL)
    with mount_warnings() as warnings:
        runtime = Runtime([config], workspace_root=tmp_path, watch=False)
        try:
            assert "fx__echo" in runtime.snapshot.tools and len(warnings) == 1  # broken.schema left out
            echo = runtime.snapshot.tools["fx__echo"]
            runtime.reload()
            runtime.reload()
            assert len(warnings) == 1  # the same listing: not mounted (nor warned about) again
            assert runtime.snapshot.tools["fx__echo"] == echo
            change_listing(listing, patch={"echo": {"description": "Return the text, changed."}})
            runtime.reload()
            assert len(warnings) == 2  # a new listing is mounted afresh
            assert runtime.snapshot.tools["fx__echo"].spec.description == "Return the text, changed."
            write_config(config, server_doc(**{**declared, "include": ["echo"]}), ALLOW_ALL)
            runtime.reload()  # a changed declaration: mounted afresh, without the broken tool now
            assert len(warnings) == 2 and "fx__echo" in runtime.snapshot.tools
            write_config(config, server_doc(**{**declared, "include": ["echo"], "trust": "trusted"}), ALLOW_ALL)
            runtime.reload()
            assert runtime.snapshot.tools["fx__echo"].spec.read_only is True  # the hint believed now
        finally:
            runtime.close_sync()
