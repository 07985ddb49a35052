"""State shared by a fleet of workers: quotas, breakers, grants and jobs in Redis.

A single process keeps all of this in memory (the default). A fleet of workers, on
one host or many, points every worker at the same Redis (``TOOLRT_LIMIT_STORE=
redis://...`` or ``Runtime(limit_store=...)``) and each limit becomes one count:

- :class:`RedisLimitStore` (:mod:`runtime.fleet.limits`): session and per-tool quotas,
  concurrency slots held as leases that a live worker renews and a dead one lets
  expire, circuit breakers. Every check-and-count is one Lua script run atomically
  by the server, with the server's clock.
- :class:`RedisSessionGrants` (:mod:`runtime.fleet.grants`): "allow for this session"
  answers, seen by every worker.
- :class:`~runtime.fleet.jobs.RedisJobIndex`: which worker runs which background job
  and how it ended, so ``job_status`` answers on every worker.
- :class:`~runtime.fleet.presence.Presence`: which snapshot each worker serves
  (``toolrt status``).

The ``redis`` extra installs the client (``pip install 'toolrt[redis]'``); nothing
here is imported unless a Redis URL is configured.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime.fleet.grants import RedisSessionGrants
    from runtime.fleet.limits import RedisLimitStore

__all__ = ["RedisLimitStore", "RedisSessionGrants"]


def __getattr__(name: str) -> Any:
    # Imported on first use: the default install has no redis client.
    if name == "RedisLimitStore":
        from runtime.fleet.limits import RedisLimitStore

        return RedisLimitStore
    if name == "RedisSessionGrants":
        from runtime.fleet.grants import RedisSessionGrants

        return RedisSessionGrants
    raise AttributeError(name)
