"""The stores a :class:`~runtime.runtime.Runtime` uses, chosen by the settings.

``limit_store = "memory"`` (the default) keeps quotas, breakers and session grants in
the process; a ``redis://`` URL puts all three in that Redis. ``audit_sink`` set to a
``postgresql://`` URL writes the audit log there (one hash chain per workspace).
Clients are imported only when their URL is configured.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.policy.grants import SessionGrants
from runtime.policy.limits import InMemoryLimitStore, LimitStore

if TYPE_CHECKING:
    from runtime.audit.postgres import PostgresSink
    from runtime.fleet.jobs import RedisJobIndex
    from runtime.fleet.presence import Presence
    from runtime.settings import Settings


def is_redis(url: str) -> bool:
    """Whether a ``limit_store`` setting names a Redis server."""
    return url.startswith(("redis://", "rediss://", "unix://"))


def is_postgres(sink: str) -> bool:
    """Whether an ``audit_sink`` setting names a PostgreSQL database."""
    return sink.startswith(("postgresql://", "postgres://"))


def limit_store_for(settings: Settings) -> LimitStore:
    """The limit store the ``limit_store`` setting names."""
    if not is_redis(settings.limit_store):
        return InMemoryLimitStore()
    from runtime.fleet.limits import RedisLimitStore

    return RedisLimitStore(
        settings.limit_store, timeout_s=settings.limit_store_timeout_s, lease_s=settings.limit_lease_s
    )


def grants_for(settings: Settings) -> SessionGrants:
    """Session grants: in the limit store's Redis when there is one, else in memory."""
    if not is_redis(settings.limit_store):
        return SessionGrants()
    from runtime.fleet.grants import RedisSessionGrants

    return RedisSessionGrants(settings.limit_store, timeout_s=settings.limit_store_timeout_s)


def chain_name(workspace_root: Path) -> str:
    """The name of a workspace's hash chain in a shared audit database: the name of
    its audit directory (the folder's name and a hash of its resolved path)."""
    from runtime.audit.location import audit_dir

    return audit_dir(workspace_root).name


def postgres_sink_for(settings: Settings, workspace_root: Path) -> PostgresSink:
    """The PostgreSQL audit sink of ``workspace_root``, spooling beside its local log."""
    from runtime.audit.location import workspace_dir
    from runtime.audit.postgres import PostgresSink

    return PostgresSink(
        settings.audit_sink,
        chain=chain_name(workspace_root),
        spool_dir=workspace_dir(workspace_root, "audit-spool", settings),
        spool_max_bytes=settings.audit_spool_max_bytes,
    )


def presence_for(settings: Settings, version: Callable[[], str]) -> Presence | None:
    """This worker's report to the fleet (``toolrt status``), when the limit store is shared."""
    if not is_redis(settings.limit_store):
        return None
    from runtime.fleet.presence import Presence

    return Presence(settings.limit_store, version, timeout_s=settings.limit_store_timeout_s)


def job_index_for(settings: Settings) -> RedisJobIndex | None:
    """The fleet's shared background-job entries, when the limit store is shared."""
    if not is_redis(settings.limit_store):
        return None
    from runtime.fleet.jobs import RedisJobIndex

    return RedisJobIndex(settings.limit_store, timeout_s=settings.limit_store_timeout_s)
