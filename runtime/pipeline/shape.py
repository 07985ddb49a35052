"""Stage 06, shape: serialize -> redact -> truncate -> mark untrusted content.

Redaction happens before anything is stored, logged or returned: streamed command
output was redacted as it arrived (see :mod:`runtime.execution.output`), everything
else is redacted here, error messages included.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from runtime.codes import ResultCode
from runtime.config.models import TruncationMode, Trust
from runtime.execution.output import CollectedOutput
from runtime.pipeline.env import TurnEnv
from runtime.records import Call, HandlerOutcome, Stage, Status, ToolResult
from runtime.shaping._unicode import clean
from runtime.shaping.serialize import serialize, to_text
from runtime.shaping.truncate import read_more_call, truncate
from runtime.shaping.untrusted import wrap_untrusted
from runtime.snapshot import CompiledTool, ResolvedOutput
from runtime.validation.arguments import ArgumentProblem
from runtime.validation.output import mismatch_text


def shape(
    call: Call, tool: CompiledTool, outcome: HandlerOutcome, env: TurnEnv, metadata: Mapping[str, Any]
) -> ToolResult:
    """The result the model reads for ``outcome``."""
    value = outcome.value
    if (
        type(value) is str
        and outcome.error is None
        and len(value) <= tool.output.max_chars
        and tool.spec.trust is Trust.trusted
        and not outcome.metadata
        and tool.output_check is None
    ):
        return _short_text(call, tool, value, outcome, metadata)
    meta: dict[str, Any] = {**metadata, **{k: v for k, v in outcome.metadata.items() if k != "transient"}}
    redactions: dict[str, int] = dict(meta.pop("redactions", {}) or {})
    is_error = outcome.is_error
    structured = None
    if isinstance(value, CollectedOutput):
        if tool.output_check is not None and not is_error:
            return _output_mismatch(call, tool, tool.output_check.problems(None), metadata)
        body, truncation = _collected(value, tool.output, is_error)
        redactions = _merge(redactions, value.redactions)
    else:
        serialized = serialize(value) if value is not None else None
        text = serialized.text if serialized is not None else ""
        structured = serialized.structured if serialized is not None else None
        if tool.output_check is not None and not is_error:
            problems = tool.output_check.problems(structured)
            if problems:
                return _output_mismatch(call, tool, problems, metadata)
        if tool.redactor is not None and tool.redactor.enabled:
            text, structured, redactions = _redact(tool.redactor, text, structured, redactions)
        body, info = truncate(text, tool.output, is_error=is_error, save=_saver(call, tool, env))
        truncation = (
            {
                "truncated": info.truncated,
                "original_chars": info.original_chars,
                "mode": info.mode,
                "artifact_id": info.artifact_id,
            }
            if info.truncated
            else {}
        )
        if truncation:
            structured = None  # a cut-down text no longer matches the data
    error_text = outcome.error or ""
    if error_text and tool.redactor is not None and tool.redactor.enabled:
        error_text, counts = tool.redactor.redact(error_text)
        redactions = _merge(redactions, counts)
    if len(error_text) > tool.output.max_chars:
        # A handler's exception text is output too, and as unbounded.
        error_text, _ = truncate(error_text, tool.output, is_error=True, save=None)
    content = f"{error_text}\n\n{body}" if error_text and body else (error_text or body)
    if tool.spec.trust is Trust.untrusted and content:
        # The error text too: a failing untrusted tool's message is its output as much as
        # its result is (an MCP server's isError text, a page quoted in an exception).
        content = wrap_untrusted(content, tool=tool.name)
    if redactions:
        meta["redactions"] = redactions
    meta.update(truncation)
    return ToolResult(
        call_id=call.id,
        name=call.name,
        content=content,
        status=outcome.status,
        code=outcome.code,
        stage=Stage.execute if is_error else None,
        structured=structured,
        metadata=MappingProxyType(meta),
    )


def _output_mismatch(
    call: Call, tool: CompiledTool, problems: tuple[ArgumentProblem, ...], metadata: Mapping[str, Any]
) -> ToolResult:
    """The error result for a result that breaks the tool's output_schema (its data withheld)."""
    result = ToolResult(
        call_id=call.id,
        name=call.name,
        content=mismatch_text(tool.name, problems),
        status=Status.error,
        code=ResultCode.output_invalid,
        stage=Stage.shape,
        metadata=MappingProxyType(
            {**metadata, "problems": [{"pointer": p.pointer, "message": p.message} for p in problems]}
        ),
    )
    # The messages can quote the data (`'sk-...' does not match ...`): redact them like any output.
    result = redact_error(result, tool)
    if tool.spec.trust is Trust.untrusted:
        result = dataclasses.replace(result, content=wrap_untrusted(result.content, tool=tool.name))
    return result


def _redact(redactor: Any, text: str, structured: Any, redactions: dict[str, int]) -> tuple[str, Any, dict[str, int]]:
    """The text and the structured form of a result, redacted alike.

    Structured data is redacted value by value first (a value under a secret-looking
    key goes whole, whatever it looks like) and the text is written again from it, so
    ``content`` and ``structuredContent`` say the same; then the text is scanned as
    well. If that scan still finds something (a secret spread over several values),
    the structured form is dropped: only the redacted text goes out."""
    if structured is not None:
        structured, counts = redactor.redact_value(structured)
        if counts:
            text = to_text(structured)
            redactions = _merge(redactions, counts)
    text, more = redactor.redact(text)
    if more:
        redactions = _merge(redactions, more)
        structured = None
    return text, structured, redactions


def _short_text(
    call: Call, tool: CompiledTool, text: str, outcome: HandlerOutcome, metadata: Mapping[str, Any]
) -> ToolResult:
    """The common case, kept cheap: a short string result from a trusted tool."""
    text = clean(text)
    meta = dict(metadata)
    if tool.redactor is not None and tool.redactor.enabled:
        text, counts = tool.redactor.redact(text)
        if counts:
            meta["redactions"] = counts
    return ToolResult(call.id, call.name, text, outcome.status, outcome.code, None, None, meta)


def redact_error(result: ToolResult, tool: CompiledTool | None) -> ToolResult:
    """An earlier stage's error result with the tool's redaction applied (such
    messages can quote the arguments)."""
    if tool is None or tool.redactor is None or not tool.redactor.enabled:
        return result
    content, counts = tool.redactor.redact(result.content)
    metadata = dict(result.metadata)
    if "problems" in metadata:
        metadata["problems"], more = tool.redactor.redact_value(metadata["problems"])
        counts = _merge(counts, more) if more else counts
    if not counts:
        return result
    metadata["redactions"] = counts
    return ToolResult(
        result.call_id,
        result.name,
        content,
        result.status,
        result.code,
        result.stage,
        result.structured,
        MappingProxyType(metadata),
    )


def _saver(call: Call, tool: CompiledTool, env: TurnEnv) -> Any:
    if env.artifacts is None:
        return None
    untrusted = tool.spec.trust is Trust.untrusted
    return lambda text: env.artifacts.save(
        text, call_id=call.id, tool=tool.name, session=env.session.id, untrusted=untrusted
    )


def _collected(output: CollectedOutput, limits: ResolvedOutput, is_error: bool) -> tuple[str, dict[str, Any]]:
    """Body text for streamed command output (already redacted; maybe spilled)."""
    if not output.spilled:
        text = output.text or ""
        if len(text) <= limits.max_chars:
            return text, {}
        # Held in memory but over the limit (the limit counts the kept text): cut it here.
        body, cut = truncate(text, limits, is_error=is_error, save=None)
        return body, {"truncated": True, "original_chars": cut.original_chars, "mode": cut.mode}
    total = output.total_chars
    artifact = output.artifact
    mode = limits.on_error if is_error else limits.on_success
    head, tail = output.head, output.tail
    where = (
        (
            f"The full output ({total:,} characters) is saved as artifact `{artifact.id}`; read more with "
            f"{read_more_call(artifact.id, len(head[: limits.preview_chars]))}."
        )
        if artifact is not None
        else f"The full output ({total:,} characters) could not be kept: {output.spill_error or 'no artifact store'}."
    )
    if artifact is not None and output.saved_chars is not None:
        where += (
            f" The artifact holds only its first {output.saved_chars:,} characters (the size limit of one artifact);"
            " the end is shown here."
        )
    if mode is TruncationMode.artifact and artifact is not None:
        preview = head[: limits.preview_chars]
        body = f"[Output truncated: showing the first {len(preview):,} of {total:,} characters. {where}]\n{preview}"
    elif mode is TruncationMode.head:
        body = (
            f"{head[: limits.head_chars or limits.max_chars]}\n[... output truncated after "
            f"{limits.head_chars or limits.max_chars:,} of {total:,} characters. {where}]"
        )
    elif mode is TruncationMode.tail:
        kept = tail[-(limits.tail_chars or limits.max_chars) :]
        body = f"[... output truncated: showing the last {len(kept):,} of {total:,} characters. {where}]\n{kept}"
    else:
        first = head[: limits.head_chars]
        last = tail[-limits.tail_chars :] if limits.tail_chars else ""
        omitted = max(total - len(first) - len(last), 0)
        body = f"{first}\n[... {omitted:,} characters omitted. {where}]\n{last}"
    info: dict[str, Any] = {"truncated": True, "original_chars": total, "mode": mode.value}
    if artifact is not None:
        info["artifact_id"] = artifact.id
    return body, info


def _merge(into: dict[str, int], more: Mapping[str, int]) -> dict[str, int]:
    for name, count in more.items():
        into[name] = into.get(name, 0) + count
    return into


def not_executed(call: Call, reason: str, code: str) -> ToolResult:
    """The result of a call that was never run."""
    return ToolResult(call.id, call.name, f"Not executed: {reason}.", Status.not_executed, code, Stage.respond)
