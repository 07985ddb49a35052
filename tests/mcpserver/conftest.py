"""Fixtures shared by the ``toolrt serve`` tests of a test process."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mcpserver_support import SharedHttpServe


@pytest.fixture(scope="session")
def shared_http_serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedHttpServe]:
    """``toolrt serve --transport http`` over the test config, one per test process for
    the tests that leave nothing behind on it; tests that edit the config, stop the
    server or need other flags start their own."""
    serve = SharedHttpServe(tmp_path_factory.mktemp("shared-http"))
    yield serve
    serve.close()


@pytest.fixture
def shared_url(shared_http_serve: SharedHttpServe) -> str:
    """The URL of the shared server, running when the test starts (started again if an
    earlier test stopped it)."""
    return shared_http_serve.url()
