# ruff: noqa: F811 - the fixtures of test_http_handler are imported by name and taken as parameters
"""SSRF through a real Runtime and a real local server: every spelling of a loopback,
unspecified, private or link-local address in an http tool's URL (and in each hop of a
redirect chain) is refused before anything is sent, and the address the guard checked
is the one connected to (the name is resolved once per hop: no DNS rebinding)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from test_http_handler import _Handler, make, server, tool  # noqa: F401 - fixtures

from runtime import Runtime
from runtime.records import Status

pytest.importorskip("httpx")

# Hosts that all lead to this machine (or to no public address), in the spellings an
# attacker would try; the tool has no allow_networks, so each must be refused.
LOCAL_FORMS = [
    "127.0.0.1",
    "127.0.0.2",
    "127.255.255.254",
    "127.1",
    "127.0.1",
    "0x7f.1",
    "0x7f.0.0.1",
    "0X7F.0X0.0X0.0X1",
    "0x7f000001",
    "0x7F000001",
    "2130706433",
    "017700000001",
    "0177.1",
    "0177.0.1",
    "0177.0.0.1",
    "0177.0000.0000.0001",
    "00000177.0.0.1",
    "127.000.000.001",
    "0",
    "0.0.0.0",
    "0x0",
    "000.000.000.000",
    "localhost",
    "LOCALHOST",
    "LocalHost",
    "localhost.",
    "127.0.0.1.",
    "[::1]",
    "[0:0:0:0:0:0:0:1]",
    "[0000:0000:0000:0000:0000:0000:0000:0001]",
    "[::]",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "[::FFFF:7F00:0001]",
    "[0:0:0:0:0:ffff:127.0.0.1]",
    "[::127.0.0.1]",
    "[::ffff:0.0.0.0]",
    "[64:ff9b::7f00:1]",
    "[2002:7f00:1::]",
    "[fe80::1]",
    "[fe80::1%25lo]",
    "[fe80::1%25eth0]",
    "[fe80::1%lo]",
    "169.254.169.254",
    "0xa9fea9fe",
    "2852039166",
    "[::ffff:169.254.169.254]",
    "[fd00:ec2::254]",
    "10.0.0.1",
    "012.0.0.1",
    "0xa.0.0.1",
    "167772161",
    "172.16.0.1",
    "192.168.0.1",
    "0xc0a80001",
    "[fc00::1]",
    "[fd12:3456::1]",
    "[::ffff:10.0.0.1]",
    "[::ffff:192.168.1.1]",
]


def _port(server: str) -> str:
    return server.rsplit(":", 1)[1]


@pytest.mark.parametrize("host", LOCAL_FORMS)
async def test_every_spelling_of_a_non_public_host_is_refused_before_anything_is_sent(
    server: str,
    make: Callable[[str], Runtime],
    host: str,
) -> None:
    runtime = make(tool("local", f'{{url: "http://{host}:{_port(server)}/echo"}}'))
    result = await runtime.call("local", {})
    assert result.is_error, (host, result.content)
    assert result.status in (Status.denied, Status.invalid), (host, result.status, result.content)
    assert _Handler.seen == [], host
    assert "Traceback" not in result.content


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "0x7f.1",
        "2130706433",
        "017700000001",
        "localhost",
        "[::ffff:127.0.0.1]",
        "169.254.169.254",
        "[fe80::1%25eth0]",
        "10.0.0.1",
        "0",
    ],
)
async def test_a_host_from_an_argument_is_refused_in_every_spelling(
    server: str,
    make: Callable[[str], Runtime],
    host: str,
) -> None:
    # The argument is percent-encoded into the URL: it can only be a host when the
    # template puts it there, and even then the guard judges what it resolves to.
    runtime = make(tool("anyhost", f'{{url: "http://{{who}}:{_port(server)}/echo"}}'))
    result = await runtime.call("anyhost", {"who": host})
    assert result.is_error and result.status in (Status.denied, Status.invalid), (host, result.content)
    assert _Handler.seen == []


# Each hop of a redirect chain is checked like the first: the tool may reach 127.0.0.1
# only, and a chain that ends anywhere else is refused at that hop, in any spelling.
REDIRECT_TARGETS = [
    "http://127.0.0.2:{port}/echo",
    "http://0x7f.2:{port}/echo",
    "http://2130706434:{port}/echo",
    "http://017700000002:{port}/echo",
    "http://127.2:{port}/echo",
    "http://[::1]:{port}/echo",
    "http://[::ffff:127.0.0.2]:{port}/echo",
    "http://[::ffff:7f00:2]:{port}/echo",
    "http://[fe80::1%25lo]:{port}/echo",
    "http://0:{port}/echo",
    "http://169.254.169.254/latest/meta-data/",
    "http://[fd00:ec2::254]/latest/meta-data/",
    "http://10.0.0.1/",
    "http://2852039166/",
    "file:///etc/passwd",
    "gopher://127.0.0.1:{port}/",
]


def _hop(server: str, target: str) -> str:
    return f"http://{server}/redirect?to={quote(target, safe='')}"


@pytest.mark.parametrize("hops", [1, 2, 3])
@pytest.mark.parametrize("target", REDIRECT_TARGETS)
async def test_a_redirect_chain_ending_at_a_refused_address_stops_at_that_hop(
    server: str,
    make: Callable[[str], Runtime],
    target: str,
    hops: int,
) -> None:
    url = target.format(port=_port(server))
    for _ in range(hops - 1):
        url = _hop(server, url)  # earlier hops stay on the allowed server
    first = _hop(server, url)
    runtime = make(tool("hop", f'{{url: "{first}", max_redirects: 5, allow_networks: [127.0.0.1/32]}}'))
    result = await runtime.call("hop", {})
    assert result.status is Status.denied and result.code == "address_refused", (target, result.content)
    assert len(_Handler.seen) == hops  # every allowed hop, and nothing past the refused one
    assert all(seen["path"] == "/redirect" for seen in _Handler.seen)


async def test_the_connection_goes_to_the_address_checked_not_to_a_second_answer(server: str) -> None:
    # A resolver that answers the allowed address first and a refused one afterwards
    # (DNS rebinding): the request reaches the server, and the name is asked once.
    from runtime.config.models import HandlerHttp
    from runtime.http.client import send
    from runtime.http.request import build_plan, render

    port = int(_port(server))
    asked: list[str] = []

    def rebinding(host: str, _port: int) -> list[str]:
        asked.append(host)
        return ["127.0.0.1"] if len(asked) == 1 else ["10.0.0.1"]

    plan = build_plan(HandlerHttp(url=f"http://rebind.test:{port}/echo", allow_networks=["127.0.0.1/32"]))
    response = await send(plan, render(plan, {}), idle_s=10, resolver=rebinding)
    assert response.status == 200 and asked == ["rebind.test"]
    assert _Handler.seen[-1]["headers"]["host"] == f"rebind.test:{port}"  # type: ignore[index]


async def test_a_name_answering_a_private_address_among_public_ones_is_never_connected_to(server: str) -> None:
    from runtime.config.models import HandlerHttp
    from runtime.http.client import send
    from runtime.http.guard import AddressRefused
    from runtime.http.request import build_plan, render

    plan = build_plan(HandlerHttp(url=f"http://mixed.test:{_port(server)}/echo"))
    with pytest.raises(AddressRefused):
        await send(plan, render(plan, {}), idle_s=10, resolver=lambda h, p: ["93.184.215.14", "127.0.0.1"])
    assert _Handler.seen == []


@pytest.fixture(autouse=True)
def _fresh_log() -> Iterator[None]:
    _Handler.seen = []
    yield


def test_the_forms_are_many() -> None:
    assert len(LOCAL_FORMS) >= 50 and len(REDIRECT_TARGETS) >= 15
    assert Path(__file__).exists()
