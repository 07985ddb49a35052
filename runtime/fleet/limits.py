"""The :class:`~runtime.policy.limits.LimitStore` of a fleet: quotas, slots and breakers in Redis.

Keys (``prefix`` defaults to ``toolrt:``)::

    <prefix>s:<session>      hash: the session's counters (calls, calls:<tool>, seconds, bytes);
                             expires session_ttl_s after it was last counted
    <prefix>l:running:<tool> sorted set: in-flight slots as leases, scored by their expiry
    <prefix>b:<breaker>:<tool> string: one breaker's state for one tool (JSON)

**Atomic.** Every method is one Lua script, run by the server without interleaving,
so workers racing on one session never admit more than the quota. A call waits for
one round trip: :meth:`RedisLimitStore.admit_all` checks the breakers and budgets and
takes every counter at once (all or none). Settling it (giving back its slot, adding
the seconds and bytes it spent) never waits: it is queued, and sent in the same
pipeline as this process's next admission (ahead of it, so a call that just ended has
given its slot back) or by a thread of the store, whichever comes first. A read of
the store (``get``, so ``Limits.usage``) sends the queue first. Settlements lost with
a dropped connection or a worker that dies are not counted; their slots expire with
their leases.

**Leases.** A slot is a member of the tool's sorted set, scored with the server time
it expires at. A thread of this store renews the slots this process holds every
``lease_s / 3``; a worker that dies stops renewing, and its slots are gone
``lease_s`` later. A worker cut off from Redis for longer than ``lease_s`` loses its
slots too (the calls holding them run on; for a while more may run than the limit).

**Server time.** Leases are scored with the server's ``TIME`` inside the scripts, and
breaker windows use :attr:`RedisLimitStore.clock` (:class:`~runtime.fleet.connection.ServerClock`),
so workers whose clocks disagree still agree on when a breaker closes.

**Failures.** Every Redis error (refused, timed out, out of memory) is raised as
:class:`~runtime.errors.LimitStoreError`; :class:`~runtime.policy.limits.Limits` turns it
into a refused call (fail closed) unless ``limit_store_on_error`` is ``allow``. The
client reconnects on its own: no restart is needed once the server is back. What a
restarted server lost (it keeps counts only if persistence is on) starts from zero.

**Eviction.** An evicted key is a counter reset: run Redis with ``maxmemory-policy
noeviction`` (then a full server refuses writes, and calls fail closed). The store
logs a warning once when the server says it may evict.
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections import deque
from collections.abc import Sequence
from typing import Any

from loguru import logger

from runtime.errors import LimitStoreError
from runtime.fleet.connection import NoScriptError, ServerClock, connect, guarded, shown_url
from runtime.policy.limits import BreakerState

# KEYS[1] session hash; ARGV field, amount, limit, ttl
_TRY_ACQUIRE = """
local v = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if v + tonumber(ARGV[2]) > tonumber(ARGV[3]) then return {0, tostring(v)} end
local n = redis.call('HINCRBYFLOAT', KEYS[1], ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[4])
return {1, n}
"""
# KEYS[1] session hash; ARGV field, amount, ttl
_ADD = """
local n = redis.call('HINCRBYFLOAT', KEYS[1], ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return n
"""
# KEYS[1] session hash; ARGV field, amount
_RELEASE = """
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then return '0' end
v = tonumber(v) - tonumber(ARGV[2])
if v < 0 then v = 0 end
redis.call('HSET', KEYS[1], ARGV[1], tostring(v))
return tostring(v)
"""
# The server's time, then expired leases dropped. Used at the top of the lease scripts.
_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
"""
# KEYS[1] lease set; ARGV limit, lease_s, members...
_LEASE = (
    _NOW
    + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local n = redis.call('ZCARD', KEYS[1])
local count = #ARGV - 2
if n + count > tonumber(ARGV[1]) then return {0, tostring(n)} end
for i = 3, #ARGV do redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[i]) end
redis.call('PEXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2]) * 2000))
return {1, tostring(n + count)}
"""
)
# KEYS[1] lease set
_LIVE = (
    _NOW
    + """
return redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf')
"""
)
# KEYS[1] lease set; ARGV members...
_UNLEASE = (
    _NOW
    + """
if #ARGV > 0 then redis.call('ZREM', KEYS[1], unpack(ARGV)) end
return redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf')
"""
)
# KEYS lease sets; ARGV lease_s, then for each key: count, members...
_RENEW = (
    _NOW
    + """
local at = 2
local renewed = 0
for k = 1, #KEYS do
  local count = tonumber(ARGV[at])
  for i = at + 1, at + count do
    renewed = renewed + redis.call('ZADD', KEYS[k], 'XX', 'CH', now + tonumber(ARGV[1]), ARGV[i])
  end
  redis.call('PEXPIRE', KEYS[k], math.ceil(tonumber(ARGV[1]) * 2000))
  at = at + count + 1
end
return renewed
"""
)
# KEYS[1] breaker; ARGV expected ('' = none), new ('' = delete)
_CAS = """
local cur = redis.call('GET', KEYS[1]) or ''
if cur ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], ARGV[2]) end
return 1
"""
# One call's admission. KEYS: session hash, then the lease sets, then the breakers.
# ARGV: ttl, lease_s, nleases, nbreakers, nbudgets, (field, limit) per budget,
# ncounters, (kind, field or lease index, limit, member) per counter.
# Answers {'b'} (a breaker is not closed: nothing counted), {'q', i, used} (budget i
# is spent), {'c', i, value} (counter i is full), or {'ok'} with everything counted.
_ADMIT = (
    _NOW
    + """
local ttl, lease = ARGV[1], tonumber(ARGV[2])
local nleases, nbreakers = tonumber(ARGV[3]), tonumber(ARGV[4])
for i = 1, nbreakers do
  local raw = redis.call('GET', KEYS[1 + nleases + i])
  if raw and string.sub(raw, 1, 9) ~= '["closed"' then return {'b'} end
end
local at = 6
for i = 1, tonumber(ARGV[5]) do
  local used = tonumber(redis.call('HGET', KEYS[1], ARGV[at]) or '0')
  if used >= tonumber(ARGV[at + 1]) then return {'q', i, tostring(used)} end
  at = at + 2
end
local ncounters = tonumber(ARGV[at])
local first = at + 1
for i = 1, ncounters do
  local p = first + (i - 1) * 4
  local value
  if ARGV[p] == 's' then
    value = tonumber(redis.call('HGET', KEYS[1], ARGV[p + 1]) or '0')
  else
    local key = KEYS[1 + tonumber(ARGV[p + 1])]
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
    value = redis.call('ZCARD', key)
  end
  if value + 1 > tonumber(ARGV[p + 2]) then return {'c', i, tostring(value)} end
end
for i = 1, ncounters do
  local p = first + (i - 1) * 4
  if ARGV[p] == 's' then
    redis.call('HINCRBYFLOAT', KEYS[1], ARGV[p + 1], 1)
  else
    local key = KEYS[1 + tonumber(ARGV[p + 1])]
    redis.call('ZADD', key, now + lease, ARGV[p + 3])
    redis.call('PEXPIRE', key, math.ceil(lease * 2000))
  end
end
if ncounters > 0 then redis.call('EXPIRE', KEYS[1], ttl) end
return {'ok'}
"""
)
# One call's settlement. KEYS: session hash, then lease sets. ARGV: ttl, seconds,
# bytes, then one member per lease set.
_SETTLE = """
for i = 2, #KEYS do redis.call('ZREM', KEYS[i], ARGV[2 + i]) end
local counted = false
if tonumber(ARGV[2]) > 0 then redis.call('HINCRBYFLOAT', KEYS[1], 'seconds', ARGV[2]); counted = true end
if tonumber(ARGV[3]) > 0 then redis.call('HINCRBYFLOAT', KEYS[1], 'bytes', ARGV[3]); counted = true end
if counted then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return 1
"""

#: How long a settlement waits for the next admission to carry it before the store's
#: thread sends it alone: a slot is given back within this (plus a round trip).
_SETTLE_GRACE_S = 0.005


def encode_breaker(state: BreakerState | None) -> str:
    """A breaker state as the JSON text stored (deterministic: equal states, equal text)."""
    if state is None:
        return ""
    return json.dumps(
        [state.phase, list(state.failures), state.since, state.trials, state.opened_by], separators=(",", ":")
    )


def decode_breaker(raw: bytes | str | None) -> BreakerState | None:
    """The state stored as ``raw``; None for none (or for text that is no state: closed)."""
    if not raw:
        return None
    try:
        phase, failures, since, trials, opened_by = json.loads(raw)
        if phase not in ("closed", "open", "half_open"):
            return None
        return BreakerState(phase, tuple(float(t) for t in failures), float(since), int(trials), int(opened_by))
    except (ValueError, TypeError):
        return None


class RedisLimitStore:
    """A :class:`~runtime.policy.limits.LimitStore` in Redis, shared by every worker that names it.

    ``url`` is ``redis://[user:password@]host:port/db`` (``rediss://`` for TLS,
    ``unix:///path``). ``timeout_s`` bounds each round trip; ``lease_s`` is how long
    a slot outlives a worker that stopped renewing it; ``session_ttl_s`` how long a
    session's counts are kept after its last counted call. Connects lazily: making
    one never fails for an unreachable server (its calls do, closed).
    """

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "toolrt:",
        timeout_s: float = 0.5,
        lease_s: float = 30.0,
        session_ttl_s: int = 86_400,
        client: Any = None,
    ) -> None:
        if lease_s <= 0 or session_ttl_s < 1 or timeout_s <= 0:
            raise ValueError("lease_s and timeout_s must be > 0 and session_ttl_s >= 1")
        self.url = shown_url(url)
        self.prefix = prefix
        self.lease_s = float(lease_s)
        self.session_ttl_s = int(session_ttl_s)
        self._client = client if client is not None else connect(url, timeout_s=timeout_s)
        register = self._client.register_script
        self._try_acquire = register(_TRY_ACQUIRE)
        self._add = register(_ADD)
        self._release = register(_RELEASE)
        self._lease = register(_LEASE)
        self._live = register(_LIVE)
        self._unlease = register(_UNLEASE)
        self._renew = register(_RENEW)
        self._cas = register(_CAS)
        self._admit = register(_ADMIT)
        self._settle = register(_SETTLE)
        self.clock = ServerClock(self._client, self.url)
        # Slots this process holds, by lease set: renewed by the thread, given back on release.
        self._held: dict[str, list[str]] = {}
        self._held_lock = threading.Lock()
        self._worker = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self._serial = 0
        self._renewer: threading.Thread | None = None
        self._stop = threading.Event()
        self._checked_eviction = False
        # Settlements waiting to be sent; _settling is held while a batch is on its way
        # (_in_flight says so without taking it).
        self._settles: deque[tuple[list[str], list[Any]]] = deque()
        self._settling = threading.Lock()
        self._in_flight = False
        self._wake = threading.Event()
        self._closing = False
        self._closed = threading.Event()
        self._settler: threading.Thread | None = None

    # -- keys -------------------------------------------------------------------

    def _session_key(self, scope: str) -> str:
        return f"{self.prefix}s:{scope}"

    def _lease_key(self, key: str) -> str:
        return f"{self.prefix}l:{key}"

    def _breaker_key(self, key: str) -> str:
        return f"{self.prefix}b:{key}"

    def _run(self, action: Any) -> Any:
        if not self._checked_eviction:
            self._check_eviction()
        return guarded(self.url, action)

    def _member(self) -> str:
        with self._held_lock:
            self._serial += 1
            return f"{self._worker}:{self._serial}"

    # -- LimitStore -------------------------------------------------------------

    def get(self, scope: str | None, key: str) -> float:
        self.flush()
        if scope is None:
            return float(self._run(lambda: self._live(keys=[self._lease_key(key)])))
        raw = self._run(lambda: self._client.hget(self._session_key(scope), key))
        return float(raw) if raw is not None else 0.0

    def try_acquire(self, scope: str | None, key: str, amount: float, limit: float) -> tuple[bool, float]:
        if scope is None:
            members = [self._member() for _ in range(max(1, int(amount)))]
            lease_key = self._lease_key(key)
            admitted, value = self._run(lambda: self._lease(keys=[lease_key], args=[limit, self.lease_s, *members]))
            if admitted:
                self._hold(lease_key, members)
            return bool(admitted), float(value)
        admitted, value = self._run(
            lambda: self._try_acquire(keys=[self._session_key(scope)], args=[key, amount, limit, self.session_ttl_s])
        )
        return bool(admitted), float(value)

    def add(self, scope: str | None, key: str, amount: float) -> float:
        if scope is None:
            raise ValueError("shared state is only in-flight slots: take them with try_acquire")
        return float(
            self._run(lambda: self._add(keys=[self._session_key(scope)], args=[key, amount, self.session_ttl_s]))
        )

    def release(self, scope: str | None, key: str, amount: float) -> float:
        if scope is None:
            lease_key = self._lease_key(key)
            members = self._unhold(lease_key, max(1, int(amount)))
            return float(self._run(lambda: self._unlease(keys=[lease_key], args=members)))
        return float(self._run(lambda: self._release(keys=[self._session_key(scope)], args=[key, amount])))

    def get_breaker(self, key: str) -> BreakerState | None:
        return decode_breaker(self._run(lambda: self._client.get(self._breaker_key(key))))

    def cas_breaker(self, key: str, expected: BreakerState | None, new: BreakerState | None) -> bool:
        return bool(
            self._run(
                lambda: self._cas(keys=[self._breaker_key(key)], args=[encode_breaker(expected), encode_breaker(new)])
            )
        )

    def forget(self, scope: str) -> None:
        self._run(lambda: self._client.delete(self._session_key(scope)))

    # -- one round trip per call --------------------------------------------------

    def admit_all(
        self,
        session: str,
        budgets: Sequence[tuple[str, float]],
        counters: Sequence[tuple[bool, str, float]],
        breakers: Sequence[str],
    ) -> tuple[str, int, float]:
        """Check ``breakers`` (closed?) and ``budgets`` (field, limit: not spent?),
        then take one unit of every counter ``(per_session, key, limit)``: all or none.

        Answers ``("ok", -1, 0)`` with everything counted; ``("breaker", -1, 0)``
        when a breaker is not closed (nothing counted: the caller takes the slow
        path); ``("budget", i, used)`` or ``("counter", i, value)`` for the first
        that refused.
        """
        keys = [self._session_key(session)]
        args: list[Any] = [self.session_ttl_s, self.lease_s]
        counter_args: list[Any] = []
        leases: list[tuple[str, str]] = []
        for per_session, key, limit in counters:
            if per_session:
                counter_args += ["s", key, limit, ""]
            else:
                lease_key, member = self._lease_key(key), self._member()
                keys.append(lease_key)
                leases.append((lease_key, member))
                counter_args += ["l", len(keys) - 1, limit, member]
        keys += [self._breaker_key(key) for key in breakers]
        args += [len(leases), len(breakers), len(budgets)]
        for field, limit in budgets:
            args += [field, limit]
        args.append(len(counters))
        args += counter_args
        if self._settles or self._in_flight:
            # This process's own settlements go first, in the same round trip: a call
            # that ended just before must have given its slot back.
            with self._settling:
                answer = self._pipelined(self._drain(), (keys, args))
        else:
            answer = self._run(lambda: self._admit(keys=keys, args=args))
        kind = answer[0].decode() if isinstance(answer[0], bytes) else answer[0]
        if kind == "ok":
            for lease_key, member in leases:
                self._hold(lease_key, [member])
            return "ok", -1, 0.0
        if kind == "b":
            return "breaker", -1, 0.0
        return ("budget" if kind == "q" else "counter"), int(answer[1]) - 1, float(answer[2])

    def settle_all(self, session: str, slots: Sequence[str], seconds: float, output_bytes: float) -> None:
        """Give back one slot of each key in ``slots`` and add the spending. Never blocks:
        queued, and sent with this process's next admission (one pipeline) or by the
        store's thread, whichever comes first."""
        keys = [self._session_key(session)]
        members = []
        for key in slots:
            lease_key = self._lease_key(key)
            taken = self._unhold(lease_key, 1)
            keys.append(lease_key)
            members.append(taken[0] if taken else "")
        self._settles.append((keys, [self.session_ttl_s, seconds, output_bytes, *members]))
        if self._settler is None:
            with self._held_lock:
                if self._settler is None:
                    self._settler = threading.Thread(target=self._settle_loop, name="toolrt-limit-settler", daemon=True)
                    self._settler.start()
        self._wake.set()

    def _settle_loop(self) -> None:
        while not self._closing:
            self._wake.wait()
            # A call that follows within the grace carries the settlement in its own
            # round trip; only when none comes does this thread send it. Waking at most
            # once per grace (not once per call) also keeps this thread off the calls'
            # interpreter lock on a busy worker.
            self._closed.wait(_SETTLE_GRACE_S)
            self._wake.clear()
            self.flush()

    def _drain(self) -> list[tuple[list[str], list[Any]]]:
        """Take every queued settlement (caller holds ``_settling``)."""
        items = []
        while self._settles:
            items.append(self._settles.popleft())
        return items

    def flush(self) -> None:
        """Send every queued settlement now (waiting for one already on its way)."""
        if not self._settles and not self._in_flight:
            return
        with self._settling:
            self._in_flight = True
            try:
                items = self._drain()
                if items:
                    try:
                        self._pipelined(items, None)
                    except Exception as err:  # noqa: BLE001 - the calls have run; their slots expire with the leases
                        logger.warning(
                            "toolrt could not record the end of {} call(s) in {}: {}", len(items), self.url, err
                        )
            finally:
                self._in_flight = False

    def _pipelined(self, settles: list[tuple[list[str], list[Any]]], admit: tuple[list[str], list[Any]] | None) -> Any:
        """Send ``settles`` then ``admit`` (if any) in one round trip; the admission's answer.

        EVALSHA goes straight into the pipeline (the client's script objects would ask
        SCRIPT EXISTS first: a second round trip). A server that lost its scripts
        (restarted, flushed) answers NOSCRIPT: those commands, and only those, are
        sent again once the scripts are loaded, so nothing runs twice.
        """
        commands = [(self._settle, keys, args) for keys, args in settles]
        if admit is not None:
            commands.append((self._admit, *admit))

        def send(batch: list[Any]) -> list[Any]:
            pipe = self._client.pipeline(transaction=False)
            for script, keys, args in batch:
                pipe.evalsha(script.sha, len(keys), *keys, *args)
            return list(pipe.execute(raise_on_error=False))

        answers = self._run(lambda: send(commands))
        missing = [i for i, answer in enumerate(answers) if isinstance(answer, NoScriptError)]
        if missing:
            for script in {id(commands[i][0]): commands[i][0] for i in missing}.values():
                self._run(lambda script=script: self._client.script_load(script.script))
            again = self._run(lambda: send([commands[i] for i in missing]))
            for i, answer in zip(missing, again, strict=True):
                answers[i] = answer
        for answer in answers:
            if isinstance(answer, Exception):
                raise LimitStoreError(self.url, f"{type(answer).__name__}: {answer}") from answer
        return answers[-1] if admit is not None else None

    # -- leases -----------------------------------------------------------------

    def _hold(self, lease_key: str, members: list[str]) -> None:
        with self._held_lock:
            self._held.setdefault(lease_key, []).extend(members)
            if self._renewer is None or not self._renewer.is_alive():
                self._stop.clear()
                self._renewer = threading.Thread(target=self._renew_loop, name="toolrt-lease-renewer", daemon=True)
                self._renewer.start()

    def _unhold(self, lease_key: str, count: int) -> list[str]:
        with self._held_lock:
            members = self._held.get(lease_key, [])
            taken = members[-count:] if count else []
            del members[len(members) - len(taken) :]
            if not members:
                self._held.pop(lease_key, None)
            return taken

    @property
    def held_slots(self) -> int:
        """How many slots this process holds (and renews)."""
        with self._held_lock:
            return sum(len(m) for m in self._held.values())

    def renew(self) -> int:
        """Extend every slot this process holds by ``lease_s`` from now; how many were still there."""
        with self._held_lock:
            held = [(key, list(members)) for key, members in self._held.items() if members]
        if not held:
            return 0
        keys: list[str] = []
        args: list[object] = [self.lease_s]
        for key, members in held:
            keys.append(key)
            args += [len(members), *members]
        return int(guarded(self.url, lambda: self._renew(keys=keys, args=args)))

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.lease_s / 3):
            try:
                self.renew()
            except Exception as err:  # noqa: BLE001 - the next tick tries again; the lease covers the gap
                logger.warning("toolrt could not renew its concurrency slots in {}: {}", self.url, err)
            with self._held_lock:
                if not self._held:
                    self._renewer = None
                    return

    def _check_eviction(self) -> None:
        """Warn once when the server may evict keys (then a count can silently restart)."""
        self._checked_eviction = True
        try:
            policy = self._client.config_get("maxmemory-policy").get(b"maxmemory-policy", b"")
        except Exception:  # noqa: BLE001 - CONFIG may be disabled (managed Redis): nothing to say then
            return
        if policy and policy != b"noeviction":
            logger.warning(
                "toolrt limit store {} may evict keys (maxmemory-policy {}): an evicted count starts over;"
                " set maxmemory-policy noeviction",
                self.url,
                policy.decode(),
            )

    def close(self) -> None:
        """Stop renewing (slots still held expire after ``lease_s``) and close the connections."""
        self._stop.set()
        renewer = self._renewer
        if renewer is not None:
            renewer.join(timeout=1.0)
        self._closing = True
        self._closed.set()
        self._wake.set()
        settler = self._settler
        if settler is not None:
            settler.join(timeout=5.0)
        self.flush()  # what is still queued
        self._client.close()
