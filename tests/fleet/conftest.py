"""Fixtures of the fleet tests: a real redis-server and a real PostgreSQL for the session,
started here on free ports and stopped at the end. A test that must kill its server
starts its own (``fresh_redis``, ``fresh_postgres``). Tests skip only when the server
binaries are not installed, and say how to install them."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fleet_servers import PostgresServer, RedisServer


def _redis(*extra: str) -> RedisServer:
    try:
        return RedisServer(*extra)
    except FileNotFoundError as missing:
        pytest.skip(str(missing))


def _postgres() -> PostgresServer:
    try:
        return PostgresServer()
    except FileNotFoundError as missing:
        pytest.skip(str(missing))


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    server = _redis().start()
    yield server
    server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """The shared server's URL, emptied for this test."""
    redis_server.client().flushall()
    return redis_server.url


@pytest.fixture
def fresh_redis() -> Iterator[RedisServer]:
    """A server of this test's own, to kill, pause and restart."""
    server = _redis().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    server = _postgres().init()
    yield server
    server.stop()


@pytest.fixture
def postgres_dsn(postgres_server: PostgresServer) -> str:
    """A new empty database on the shared server."""
    return postgres_server.create_database(f"t_{uuid.uuid4().hex[:12]}")


@pytest.fixture
def fresh_postgres() -> Iterator[PostgresServer]:
    server = _postgres().init()
    yield server
    server.stop()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    return root
