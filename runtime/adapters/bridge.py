"""What every framework bridge shares: toolrt's tools behind a framework's own tool objects.

A bridge (:mod:`runtime.adapters.openai_agents`, :mod:`runtime.adapters.langchain`,
:mod:`runtime.adapters.pydantic_ai`, :mod:`runtime.adapters.claude_agent`) wraps a
:class:`Bridge`: the framework's runner calls a tool, the bridge turns that into one
toolrt :class:`~runtime.records.Call`, runs it through the whole pipeline (validation,
rules, policy and approvals, timeouts, shaping, audit) and hands back the
:class:`~runtime.records.ToolResult`, which each bridge renders in its framework's own
result or error form. Nothing a model sends makes a bridge raise: bad JSON, unknown
tools, invalid arguments, denials, timeouts and crashing handlers are all results.
Only cancellation (the framework cancelling the task) goes on as a cancellation.

The tool *list* comes from the snapshot serving when the bridge is built (frameworks
bind their tool list up front); every call still reads the snapshot serving at call
time, so a reload that removes a tool makes calls to it error results.

Approvals: a framework with its own human-in-the-loop interruption asks
:meth:`Bridge.needs_approval` before the call runs and raises its interruption; the
answer reaches toolrt's permit stage through :func:`framework_approver`. Where a
framework has none, toolrt's own approver (the one the :class:`~runtime.Runtime` was
built with) is asked, as it is for every other way in.
"""

from __future__ import annotations

import asyncio
import copy
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from runtime.adapters._common import exported_tools, text_of
from runtime.adapters.arguments import check_object, decode_arguments
from runtime.adapters.openai import strict_form
from runtime.adapters.strict_schema import strip_strict_nulls
from runtime.pipeline.permit import Approval, Approver
from runtime.records import Call, Decision, Session, Stage, Status, ToolResult, ValidatedCall, error_result
from runtime.runtime import Runtime
from runtime.snapshot import CompiledTool

ERROR_PREFIX = "Error: "

# What the framework said about one call: True approved, False rejected, None not asked.
ApprovalState = Callable[[], "bool | None"]


class Bridge:
    """A :class:`Runtime` as seen by one framework, for one session.

    ``tools`` picks tools by name (default: every tool the snapshot exports, without
    ``defer_loading`` ones unless ``include_deferred``). An app with several users
    builds one bridge per session; a bridge is cheap (no copies of the snapshot).
    """

    def __init__(
        self,
        runtime: Runtime,
        *,
        session: Session | None = None,
        tools: Iterable[str] | None = None,
        include_deferred: bool = False,
    ) -> None:
        self.runtime = runtime
        self.session = session or Session(mode=runtime.settings.permission_mode.value)
        snapshot = runtime.snapshot
        available = {tool.name: tool for tool in exported_tools(snapshot, include_deferred=True)}
        if tools is None:
            chosen = exported_tools(snapshot, include_deferred)
        else:
            names = list(dict.fromkeys(tools))
            missing = [name for name in names if name not in available]
            if missing:
                known = ", ".join(sorted(available)) or "(none)"
                raise ValueError(f"no tool named {', '.join(map(repr, missing))} in the config; the tools are: {known}")
            chosen = [available[name] for name in names]
        self._tools: tuple[CompiledTool, ...] = tuple(chosen)

    @property
    def tools(self) -> tuple[CompiledTool, ...]:
        """The tools this bridge offers, as compiled when it was built."""
        return self._tools

    def call_of(self, name: str, arguments: Any, call_id: str | None = None) -> Call:
        """One :class:`Call` from what a framework hands its tool: the raw JSON argument
        string (decoded here, with strict mode's ``null`` for an omitted optional argument
        undone) or an already decoded value (checked like a provider's: it must be an
        object). Never raises."""
        identifier = call_id if isinstance(call_id, str) and call_id else f"call_{uuid.uuid4().hex[:12]}"
        if isinstance(arguments, str) or arguments is None:
            args, problem = decode_arguments("{}" if arguments is None or not arguments.strip() else arguments)
        else:
            problem = check_object(arguments)
            args = None if problem else dict(arguments)
        if args is not None:
            tool = self.runtime.snapshot.tools.get(name)
            if tool is not None and strict_form(self.runtime.snapshot, tool).strict:
                args = strip_strict_nulls(args, tool.spec.input_schema)
        raw = arguments if isinstance(arguments, str) else None
        return Call(id=identifier, name=name, args=args, raw_arguments=raw, parse_error=problem)

    def needs_approval(self, call: Call) -> bool:
        """Whether ``call`` would be put to an approver now (see :meth:`Runtime.needs_approval`).

        A failure here answers True: the framework then asks its person, and toolrt's
        permit stage still judges the call when it runs."""
        try:
            return self.runtime.needs_approval(call, self.session)
        except Exception:  # noqa: BLE001 - asking once too often is safe; crashing the framework's run is not
            return True

    async def run(self, call: Call, approver: Approver | None = None) -> ToolResult:
        """Run ``call`` through the pipeline; exactly one result. Never raises but for
        cancellation, which is the framework's to handle."""
        try:
            (result,) = await self.runtime.run_turn([call], self.session, approver=approver)
            return result
        except asyncio.CancelledError:
            raise
        except Exception as err:  # noqa: BLE001 - run_turn answers every call; this is a last line of defence
            return error_result(
                call,
                Status.internal,
                "internal_error",
                Stage.execute,
                f"toolrt failed while handling this call ({type(err).__name__}); the call may not have run.",
            )

    async def run_many(self, calls: list[Call], approver: Approver | None = None) -> list[ToolResult]:
        """Run ``calls`` as one turn (read-only runs concurrently, anything else alone, in
        order); one result per call, in order. Never raises but for cancellation."""
        if not calls:
            return []
        try:
            return await self.runtime.run_turn(calls, self.session, approver=approver)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # noqa: BLE001 - as in run()
            why = f"toolrt failed while handling this turn ({type(err).__name__}); the call may not have run."
            return [error_result(call, Status.internal, "internal_error", Stage.execute, why) for call in calls]


def framework_approver(framework: str, state: ApprovalState, fallback: Approver | None) -> Approver:
    """An approver that answers with the framework's own decision for this call.

    ``state()`` is True when a person approved it through the framework's interruption,
    False when they rejected it, None when the framework was not asked (the decision
    changed between the check and the run, e.g. a reload): then ``fallback`` (the
    runtime's own approver) is asked, and with none the call is denied."""

    async def approve(call: ValidatedCall, session: Session, decision: Decision) -> Approval:
        answer = state()
        if answer is True:
            return Approval(True, f"approved in the {framework} run")
        if answer is False:
            return Approval(False, f"rejected in the {framework} run")
        if fallback is not None:
            return await fallback(call, session, decision)
        return Approval(False, f"it was not approved in the {framework} run and no other approver is set", asked=False)

    return approve


def result_text(result: ToolResult, *, mark_errors: bool = True) -> str:
    """What the model reads: the result's text, never empty; an error result starts
    with ``Error:`` (unless it says so already) for frameworks without an error flag."""
    text = text_of(result)
    if mark_errors and result.is_error and not text[:6].lower().startswith("error"):
        return ERROR_PREFIX + text
    return text


def input_schema(tool: CompiledTool) -> dict[str, Any]:
    """A copy of the tool's declared JSON Schema (callers may change it)."""
    return copy.deepcopy(dict(tool.spec.input_schema))
