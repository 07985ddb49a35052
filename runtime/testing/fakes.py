"""Fake tool handlers that record their calls and answer on cue.

A :class:`FakeTool` stands in for a tool's handler in a test (see
:func:`runtime.testing.runtime_from_yaml`): the call goes through the whole pipeline
(validation, rules, policy, timeouts, shaping, audit) and ends in the fake instead of
the real handler. The fake records every call and answers as told::

    lookup = FakeTool(returns={"status": "shipped"})        # every call
    refund = FakeTool(raises=ToolError("card declined"))   # every call fails this way
    flaky = FakeTool(returns="ok").next(raises=TransientError("busy"))  # the first call only
    stuck = FakeTool(hang=True)                            # until the tool's timeout stops it
    gate = threading.Event()
    slow = FakeTool(wait_for=gate, returns="done")         # answers once the test sets gate

A cue set with :meth:`FakeTool.next` serves one call, in order; when none is left the
constructor's cue serves. ``respond=`` computes the answer from the arguments.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from runtime.context import ToolContext

__all__ = ["Cue", "FakeCall", "FakeTool"]

_UNSET: Any = object()


@dataclass(frozen=True)
class Cue:
    """How a fake answers one call: wait for ``wait_for`` (if any), then hang, raise,
    compute with ``respond``, or return ``returns`` (in that order of precedence)."""

    returns: Any = "ok"
    raises: BaseException | type[BaseException] | None = None
    respond: Callable[..., Any] | None = None
    wait_for: Any = None  # a threading.Event, or an asyncio.Event of the runtime's loop
    hang: bool = False

    def __post_init__(self) -> None:
        chosen = [self.raises is not None, self.respond is not None, self.hang]
        if sum(chosen) > 1:
            raise ValueError("a cue takes one of raises=, respond= and hang=, not several")
        if self.wait_for is not None and not callable(getattr(self.wait_for, "wait", None)):
            raise TypeError("wait_for must be a threading.Event or an asyncio.Event")
        if self.respond is not None and not callable(self.respond):
            raise TypeError("respond must be a function of the call's arguments")


@dataclass
class FakeCall:
    """One call a fake received, and how it ended.

    ``outcome`` is ``running`` while the fake works on it, then ``returned`` (``value``
    is what it returned), ``raised`` (``error``) or ``cancelled`` (the runtime stopped
    it: a timeout or an interrupted turn)."""

    args: dict[str, Any]
    tool: str
    call_id: str
    session_id: str
    context: ToolContext | None = field(repr=False)
    outcome: str = "running"
    value: Any = None
    error: BaseException | None = None


class FakeTool:
    """A python handler for tests: records each call in :attr:`calls` and answers on cue.

    The constructor's keywords are the default :class:`Cue`; :meth:`next` queues cues
    for the coming calls. Safe to inspect from the test's thread while the runtime's
    loop runs the calls (``wait_for_calls`` blocks until enough have arrived).
    """

    def __init__(
        self,
        returns: Any = "ok",
        *,
        raises: BaseException | type[BaseException] | None = None,
        respond: Callable[..., Any] | None = None,
        wait_for: Any = None,
        hang: bool = False,
        name: str | None = None,
    ) -> None:
        self.default = Cue(returns=returns, raises=raises, respond=respond, wait_for=wait_for, hang=hang)
        self.name = name  # set by runtime_from_yaml to the tool it stands in for
        self.calls: list[FakeCall] = []
        self._queued: deque[Cue] = deque()
        self._changed = threading.Condition()

    def __repr__(self) -> str:
        return f"FakeTool({self.name or '?'}, calls={len(self.calls)})"

    def next(
        self,
        returns: Any = _UNSET,
        *,
        raises: BaseException | type[BaseException] | None = None,
        respond: Callable[..., Any] | None = None,
        wait_for: Any = None,
        hang: bool = False,
    ) -> FakeTool:
        """Queue a cue for one coming call (after those already queued); chainable.
        An unset ``returns`` is the default cue's."""
        value = self.default.returns if returns is _UNSET else returns
        cue = Cue(returns=value, raises=raises, respond=respond, wait_for=wait_for, hang=hang)
        with self._changed:
            self._queued.append(cue)
        return self

    @property
    def args(self) -> list[dict[str, Any]]:
        """The arguments of every call so far, in order."""
        with self._changed:
            return [call.args for call in self.calls]

    @property
    def last(self) -> FakeCall:
        """The latest call; AssertionError when there was none."""
        with self._changed:
            if not self.calls:
                raise AssertionError(f"{self!r} was never called")
            return self.calls[-1]

    def wait_for_calls(self, count: int = 1, timeout: float = 10.0, *, finished: bool = False) -> list[FakeCall]:
        """Block until ``count`` calls have arrived (``finished``: and have ended); the calls.
        AssertionError after ``timeout`` seconds, saying how many came."""

        def enough() -> bool:
            done = [c for c in self.calls if not finished or c.outcome != "running"]
            return len(done) >= count

        with self._changed:
            if not self._changed.wait_for(enough, timeout):
                state = [c.outcome for c in self.calls]
                raise AssertionError(f"{self!r}: waited {timeout} s for {count} call(s), got {state}")
            return list(self.calls)

    async def wait_for_calls_async(
        self, count: int = 1, timeout: float = 10.0, *, finished: bool = False
    ) -> list[FakeCall]:
        """:meth:`wait_for_calls` for async tests (waits in a thread, the loop goes on)."""
        return await asyncio.to_thread(self.wait_for_calls, count, timeout, finished=finished)

    async def __call__(self, args: Mapping[str, Any], context: ToolContext) -> Any:
        call = FakeCall(
            args=copy.deepcopy(dict(args)),
            tool=context.tool,
            call_id=context.call_id,
            session_id=context.session_id,
            context=context,
        )
        with self._changed:
            cue = self._queued.popleft() if self._queued else self.default
            self.calls.append(call)
            self._changed.notify_all()
        try:
            value = await self._answer(cue, call, args)
        except asyncio.CancelledError:
            self._finish(call, "cancelled")
            raise
        except BaseException as err:
            self._finish(call, "raised", error=err)
            raise
        self._finish(call, "returned", value=value)
        return value

    async def _answer(self, cue: Cue, call: FakeCall, args: Mapping[str, Any]) -> Any:
        if cue.wait_for is not None:
            await _wait(cue.wait_for)
        if cue.hang:
            await asyncio.Event().wait()  # until the runtime cancels the call
        if cue.raises is not None:
            raise cue.raises
        if cue.respond is not None:
            result = cue.respond(dict(args))  # the record stays as the call came
            return await result if inspect.isawaitable(result) else result
        return copy.deepcopy(cue.returns)

    def _finish(self, call: FakeCall, outcome: str, *, value: Any = None, error: BaseException | None = None) -> None:
        with self._changed:
            call.outcome, call.value, call.error = outcome, value, error
            self._changed.notify_all()


async def _wait(event: Any) -> None:
    """Wait until ``event`` is set. A threading.Event is waited for in short slices off
    the loop, so that a cancellation (the tool's timeout) ends the wait at once."""
    if inspect.iscoroutinefunction(event.wait):
        await event.wait()
        return
    while not event.is_set():
        await asyncio.to_thread(event.wait, 0.05)
