"""Session grants in Redis: an "allow for this session" answer given on one worker holds on all.

Each session's grants are a list ``<prefix>g:<session>`` of JSON texts, oldest first,
kept ``session_ttl_s`` after the last grant, at most ``max_grants_per_session`` (the
oldest go first). A grant is stored as its fields (tool, pattern, rule, and the
command signatures the grant was made from, exactly as
:class:`~runtime.policy.grants.SessionGrants` computed them); whether a call is
covered is decided by :meth:`Grant.covers <runtime.policy.grants.Grant.covers>` on the
worker asking, as in one process.

**Fails closed.** When Redis cannot be read, no grant covers anything: the call is
put to the approver again (or denied when there is none). A grant that cannot be
written is not kept, and the warning says so; the call it was given for still runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from loguru import logger

from runtime.config.models import Risk
from runtime.errors import LimitStoreError
from runtime.fleet.connection import connect, guarded, shown_url
from runtime.policy.grants import Grant, SessionGrants
from runtime.records import ValidatedCall

# KEYS[1] the session's list; ARGV grant, max grants, ttl. Appends unless present.
_ADD = """
if not redis.call('LPOS', KEYS[1], ARGV[1]) then
  redis.call('RPUSH', KEYS[1], ARGV[1])
  redis.call('LTRIM', KEYS[1], -tonumber(ARGV[2]), -1)
end
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
"""


def _plain(value: Any) -> Any:
    """A signature value (strings, tuples, frozensets of them) as JSON, order-free sets sorted."""
    if isinstance(value, str):
        return value
    if isinstance(value, frozenset):
        items = [_plain(item) for item in value]
        return {"set": sorted(items, key=lambda item: json.dumps(item, sort_keys=True))}
    if isinstance(value, tuple):
        return {"tuple": [_plain(item) for item in value]}
    raise TypeError(f"a grant holds a {type(value).__name__}, which cannot be shared")


def _python(value: Any) -> Any:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "set" in value:
        return frozenset(_python(item) for item in value["set"])
    if isinstance(value, dict) and "tuple" in value:
        return tuple(_python(item) for item in value["tuple"])
    raise ValueError("not a stored grant")


def encode_grant(grant: Grant) -> str:
    """The grant as the JSON text stored: equal grants give equal text."""
    return json.dumps(
        {
            "tool": grant.tool,
            "pattern": dict(grant.pattern) if grant.pattern is not None else None,
            "rule": grant.rule,
            "commands": _plain(grant.commands) if grant.commands is not None else None,
        },
        sort_keys=True,
        separators=(",", ":"),
    )


def decode_grant(raw: bytes | str) -> Grant | None:
    """The grant stored as ``raw``; None for text that is none (it covers nothing)."""
    try:
        data = json.loads(raw)
        pattern = data["pattern"]
        commands = data["commands"]
        if not isinstance(data["tool"], str) or not (pattern is None or isinstance(pattern, dict)):
            return None
        return Grant(
            data["tool"],
            MappingProxyType({str(k): str(v) for k, v in pattern.items()}) if pattern else None,
            data["rule"] if isinstance(data["rule"], str) else None,
            _python(commands) if commands is not None else None,
        )
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


class RedisSessionGrants(SessionGrants):
    """:class:`~runtime.policy.grants.SessionGrants` kept in Redis, shared by every worker."""

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "toolrt:",
        timeout_s: float = 0.5,
        session_ttl_s: int = 86_400,
        max_grants_per_session: int = 200,
        client: Any = None,
    ) -> None:
        super().__init__(max_grants_per_session=max_grants_per_session)
        self.url = shown_url(url)
        self.prefix = prefix
        self.session_ttl_s = int(session_ttl_s)
        self._client = client if client is not None else connect(url, timeout_s=timeout_s)
        self._add_script = self._client.register_script(_ADD)

    def __bool__(self) -> bool:
        return True  # another worker may have granted something: always ask the store

    def _key(self, session_id: str) -> str:
        return f"{self.prefix}g:{session_id}"

    def add(
        self, session_id: str, call: ValidatedCall, pattern: Mapping[str, str] | None = None, rule: str | None = None
    ) -> Grant | None:
        """Grant as :meth:`SessionGrants.add` does, stored in Redis; None when it cannot be
        granted, or cannot be stored (then a warning says so)."""
        local = SessionGrants(max_sessions=1, max_grants_per_session=1)
        grant = local.add(session_id, call, pattern, rule)  # the one place a grant is made
        if grant is None:
            return None
        try:
            text = encode_grant(grant)
            guarded(
                self.url,
                lambda: self._add_script(
                    keys=[self._key(session_id)], args=[text, self._max_grants, self.session_ttl_s]
                ),
            )
        except (LimitStoreError, TypeError) as err:
            logger.warning(
                "toolrt could not keep a session grant for `{}`: {}; the next such call is asked about again",
                grant.tool,
                err,
            )
            return None
        return grant

    def of(self, session_id: str) -> tuple[Grant, ...]:
        """The session's grants, oldest first; raises :class:`LimitStoreError` when Redis cannot be read."""
        raws = guarded(self.url, lambda: self._client.lrange(self._key(session_id), 0, -1))
        return tuple(grant for grant in (decode_grant(raw) for raw in raws) if grant is not None)

    def covering(self, session_id: str, call: ValidatedCall, rule: str | None = None) -> Grant | None:
        """The grant covering ``call``; None also when Redis cannot be read (fail closed)."""
        if call.tool.spec.risk is Risk.critical:
            return None  # asked about every time, as in one process
        try:
            grants = self.of(session_id)
        except LimitStoreError as err:
            logger.warning("toolrt cannot read session grants ({}); the call is asked about again", err)
            return None
        return next((g for g in grants if g.covers(call, rule)), None)

    def forget(self, session_id: str) -> None:
        """Drop the session's grants everywhere."""
        guarded(self.url, lambda: self._client.delete(self._key(session_id)))

    def close(self) -> None:
        """Close the connections."""
        self._client.close()
