"""Ending a session when the store that holds its state may be down.

``Runtime.end_session`` forgets a session's grants and quota counts. With a shared
store (Redis) that can fail, and an agent loop or an MCP transport calling it must
never crash for it. So a failure is logged (once per outage, not once per session)
and the session is remembered as *unfinished*: until its end is recorded, a turn of
that session first tries again, and if the store still cannot be used the turn runs
with no session grants (every ask is asked again) while quota counts stay as they
were (never less than they should be). Both err on the closed side, as the stated
failure behaviour of the limit store does. What is never retried expires in the
store with the session's time to live (``session_ttl_s``).

Unfinished sessions are bounded (oldest dropped, then they only expire); a
successful end also retries a few of the others, so they clear once the store is
back.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from loguru import logger

from runtime.errors import LimitStoreError
from runtime.policy.grants import SessionGrants

#: Sessions whose end waits to be recorded, at most (past it the oldest only expire).
MAX_UNFINISHED = 10_000
#: Other unfinished sessions retried after each end that succeeded.
_RETRY_WITH_EACH = 8


class SessionEnds:
    """Records session ends in ``forget`` (which raises :class:`LimitStoreError` when a
    store cannot be used) and never raises itself."""

    def __init__(self, forget: Callable[[str], None], *, max_unfinished: int = MAX_UNFINISHED) -> None:
        self._forget = forget
        self._max = max_unfinished
        self._unfinished: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()
        self._failing = False  # an outage is being logged: say so once, and when it ends

    def __len__(self) -> int:
        return len(self._unfinished)

    def end(self, session_id: str) -> bool:
        """Forget ``session_id`` in the stores; False when that has to wait (logged)."""
        if not self._try(session_id):
            return False
        with self._lock:
            others = list(self._unfinished)[:_RETRY_WITH_EACH]
        for other in others:
            if not self._try(other):
                break
        return True

    def grants_for(self, session_id: str, grants: SessionGrants) -> SessionGrants:
        """The grants a turn of ``session_id`` may use: ``grants``, or none while the
        session's earlier end could not be recorded (tried again here first)."""
        if not self._unfinished or session_id not in self._unfinished:
            return grants
        if self._try(session_id):
            return grants
        return _NO_GRANTS

    def _try(self, session_id: str) -> bool:
        try:
            self._forget(session_id)
        except LimitStoreError as err:
            with self._lock:
                self._unfinished[session_id] = None
                self._unfinished.move_to_end(session_id)
                dropped = len(self._unfinished) - self._max
                while len(self._unfinished) > self._max:
                    self._unfinished.popitem(last=False)
                first, self._failing = not self._failing, True
                waiting = len(self._unfinished)
            if first:
                logger.warning(
                    "toolrt could not record the end of session {}: {}; its grants are not used and its counts kept"
                    " until it is recorded (tried again on the session's next turn and after later ends)",
                    session_id,
                    err,
                )
            if dropped > 0:
                logger.warning(
                    "toolrt gave up recording the end of {} session(s) ({} wait); they expire in the store",
                    dropped,
                    waiting,
                )
            return False
        with self._lock:
            self._unfinished.pop(session_id, None)
            recovered, left = self._failing, len(self._unfinished)
            self._failing = False
        if recovered:
            logger.info("toolrt records session ends again ({} still to record)", left)
        return True


class _NoGrants(SessionGrants):
    """Grants that hold nothing and take nothing: every ask is put to the approver."""

    def add(self, *args: object, **kwargs: object) -> None:  # type: ignore[override]
        return None


_NO_GRANTS = _NoGrants(max_sessions=1, max_grants_per_session=1)
