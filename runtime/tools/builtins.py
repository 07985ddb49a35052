"""The built-in handlers that ship with the pipeline.

``artifact_read`` pages through outputs the pipeline truncated into artifacts, so that
a truncation notice is always actionable; ``tool_search`` finds tools declared with
``defer_loading`` (left out of the initial tool list). The workspace tools
(file_read, file_edit, grep, ...) are declared the same way.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from runtime.config.models import Trust
from runtime.errors import ToolError
from runtime.shaping.artifacts import ArtifactError, ArtifactPage
from runtime.shaping.page_secrets import LOOK_BEHIND, keep_secrets_whole
from runtime.shaping.untrusted import LOOK_AHEAD, defuse_page, wrap_untrusted
from runtime.tools.workspace_tools import HANDLERS as WORKSPACE_HANDLERS

if TYPE_CHECKING:
    from runtime.pipeline.env import TurnEnv
    from runtime.snapshot import CompiledTool

BuiltinHandler = Callable[[Mapping[str, Any], "TurnEnv"], Awaitable[Any]]


_FIT_ATTEMPTS = 8


async def artifact_read(args: Mapping[str, Any], env: TurnEnv, tool: CompiledTool | None = None) -> str:
    """A page of an artifact: ``id``, ``offset`` and ``limit`` in characters, optional RE2 ``pattern``.

    The page is made to fit what this tool's result may carry (its ``max_chars``, after
    redaction and, for an untrusted tool's output, the untrusted-data markers), so the
    result is never cut and always ends with the exact offset to go on from: paging
    from 0 with the offsets given returns every character once, in order.
    """
    if env.artifacts is None:
        raise ToolError("no artifact store is configured in this runtime")
    # Any value: the store's id check answers a missing or malformed one.
    artifact_id: str = args.get("id")  # type: ignore[assignment]
    try:
        offset = int(args.get("offset", 0))
        limit = int(args.get("limit", 2000))
    except (TypeError, ValueError):
        raise ToolError("offset and limit must be whole numbers") from None
    pattern = args.get("pattern")
    budget = tool.output.max_chars if tool is not None else None
    redactor = tool.redactor if tool is not None and tool.redactor is not None and tool.redactor.enabled else None
    for _attempt in range(_FIT_ATTEMPTS):
        try:
            # The session's own artifacts only: another session's id is "unknown", like a missing one.
            page = env.artifacts.read(
                artifact_id, offset=offset, limit=limit, pattern=pattern, session=env.session.id, look_ahead=LOOK_AHEAD
            )
            if redactor is not None and pattern is None:
                page = keep_secrets_whole(page, _before(env, artifact_id, offset), redactor)
        except ArtifactError as err:
            raise ToolError(str(err)) from err
        content = _page_text(page, str(artifact_id))
        size = len(redactor.redact(content)[0]) if redactor is not None else len(content)
        if budget is None or size <= budget or limit <= 1 or not page.text:
            return content
        limit = max(1, limit - (size - budget) - 16)  # the notice and markers take room too
    return content


artifact_read.wants_tool = True  # type: ignore[attr-defined]


def _before(env: TurnEnv, artifact_id: Any, offset: int) -> str:
    """Up to :data:`LOOK_BEHIND` characters of the artifact before ``offset``."""
    if offset <= 0 or env.artifacts is None:
        return ""
    first = max(0, offset - LOOK_BEHIND)
    return env.artifacts.read(artifact_id, offset=first, limit=offset - first, session=env.session.id).text


def _page_text(page: ArtifactPage, artifact_id: str) -> str:
    if page.next_offset is None:
        footer = f"[end of artifact: {page.total_chars:,} characters in all]"
    else:
        footer = (
            f"[characters {page.offset:,}-{page.next_offset:,} of {page.total_chars:,};"
            f' continue with artifact_read(id="{artifact_id}", offset={page.next_offset})]'
        )
    text = page.text
    if page.untrusted and text:
        # Defused with what follows in view: a marker cut by the page's end is seen whole.
        text = wrap_untrusted(defuse_page(text + page.after, len(text)), tool=page.tool or "unknown")
    return f"{text}\n{footer}" if text else footer


async def tool_search(args: Mapping[str, Any], env: TurnEnv) -> list[dict[str, Any]]:
    """Tools whose name or description match ``query`` (deferred tools included), best first."""
    words = [w for w in re.split(r"\W+", str(args.get("query", "")).lower()) if w]
    try:
        limit = int(args.get("limit", 5))
    except (TypeError, ValueError):
        raise ToolError("limit must be a whole number") from None
    scored = []
    for tool in env.snapshot.tools.values():
        name = tool.name.lower()
        text = f"{name} {tool.spec.description.lower()}"
        score = sum(3 if w in name else 1 if w in text else 0 for w in words)
        if score:
            scored.append((-score, tool.name, tool))
    scored.sort(key=lambda item: (item[0], item[1]))
    return [
        {"name": t.name, "description": t.spec.description, "input_schema": t.spec.input_schema}
        for _, _, t in scored[:limit]
    ]


async def job_status(args: Mapping[str, Any], env: TurnEnv) -> str:
    """Where a background job of this session is: running or finished, exit code, the end of its output."""
    job = env.jobs.lookup(args.get("id"), session=env.session.id) if env.jobs is not None else None
    remote = env.jobs.remote(args.get("id"), session=env.session.id) if job is None and env.jobs is not None else None
    if remote is not None:  # started by another worker of the fleet
        from runtime.fleet.jobs import describe

        known = env.snapshot.tools.get(remote.tool)
        untrusted = known is None or known.spec.trust is Trust.untrusted
        try:
            return describe(
                remote, int(args.get("tail_chars", 2000)), lambda text: _marked(text, remote.tool, untrusted)
            )
        except (TypeError, ValueError):
            raise ToolError("tail_chars must be a whole number") from None
    if job is None:
        # The same answer for a job of another session as for one that never existed.
        raise ToolError(f"no background job {_shown(args.get('id'))} in this session")
    try:
        tail_chars = int(args.get("tail_chars", 2000))
    except (TypeError, ValueError):
        raise ToolError("tail_chars must be a whole number") from None
    elapsed = time.monotonic() - job.started
    # A job of a tool that is untrusted (or no longer known) shows its output marked as data.
    known = env.snapshot.tools.get(job.tool)
    untrusted = known is None or known.spec.trust is Trust.untrusted
    if job.running:
        tail, total = job.collector.peek(tail_chars)
        return (
            f"job `{job.id}` ({job.tool}) is running ({elapsed:.0f} s so far, {total:,} characters of output)."
            f" Last output:\n{_marked(tail, job.tool, untrusted)}"
        )
    output = job.output
    state = f"exited with code {job.exit_code}" if job.error is None else job.error
    lines = [f"job `{job.id}` ({job.tool}) {state} after {elapsed:.0f} s."]
    if output is not None:
        text = output.text if output.text is not None else output.tail
        if output.artifact is not None:
            lines.append(
                f"Its full output ({output.total_chars:,} characters) is artifact `{output.artifact.id}`:"
                f' read it with artifact_read(id="{output.artifact.id}").'
            )
        lines.append(f"Last output:\n{_marked(text[-tail_chars:], job.tool, untrusted)}")
    return "\n".join(lines)


def _marked(text: str, tool: str, untrusted: bool) -> str:
    return wrap_untrusted(text, tool=tool) if untrusted and text else text


def _shown(value: Any) -> str:
    """A model-sent id quoted back, bounded (it may be megabytes long)."""
    text = value if isinstance(value, str) else repr(value)
    return f"`{text[:60]}...`" if len(text) > 60 else f"`{text}`"


HANDLERS: dict[str, BuiltinHandler] = {
    "artifact_read": artifact_read,
    "tool_search": tool_search,
    "job_status": job_status,
    **WORKSPACE_HANDLERS,
}
