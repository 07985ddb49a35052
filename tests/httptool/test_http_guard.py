"""The SSRF guard: every non-public address is refused by default, whatever its
spelling, unless the config allows its network; a name is resolved once and every
address it resolves to is checked."""

from __future__ import annotations

import pytest

from runtime.http.guard import AddressPolicy, AddressRefused, check_host

DEFAULT = AddressPolicy()

REFUSED = [
    ("127.0.0.1", "loopback"),
    ("127.255.255.254", "loopback"),
    ("localhost", "loopback"),
    ("2130706433", "loopback"),  # decimal
    ("0x7f000001", "loopback"),  # hexadecimal
    ("0177.0.0.1", "loopback"),  # octal
    ("0177.0000.0000.0001", "loopback"),
    ("127.1", "loopback"),  # short form
    ("0x7f.1", "loopback"),
    ("::1", "loopback"),
    ("[::1]", "loopback"),
    ("0:0:0:0:0:0:0:1", "loopback"),
    ("::ffff:127.0.0.1", "loopback"),  # IPv4-mapped
    ("::ffff:7f00:1", "loopback"),
    ("::127.0.0.1", "loopback"),  # IPv4-compatible
    ("0.0.0.0", "unspecified"),
    ("0", "unspecified"),
    ("::", "unspecified"),
    ("10.0.0.1", "private"),
    ("10.255.255.255", "private"),
    ("172.16.0.1", "private"),
    ("172.31.255.1", "private"),
    ("192.168.1.1", "private"),
    ("::ffff:10.1.2.3", "private"),
    ("::ffff:192.168.0.1", "private"),
    ("fd00::1", "private"),
    ("fc00::1", "private"),
    ("169.254.169.254", "metadata"),
    ("fd00:ec2::254", "metadata"),
    ("169.254.1.1", "link-local"),
    ("fe80::1", "link-local"),
    ("::ffff:169.254.169.254", "metadata"),
    ("2002:7f00:1::", "loopback"),  # 6to4 carrying 127.0.0.1
    ("2002:a00:1::", "private"),  # 6to4 carrying 10.0.0.1
    ("64:ff9b::7f00:1", "loopback"),  # NAT64 carrying 127.0.0.1
    ("100.64.0.1", "public"),  # carrier-grade NAT
    ("224.0.0.1", "multicast"),
    ("ff02::1", "multicast"),
    ("255.255.255.255", "reserved|private|public"),
    ("240.0.0.1", "reserved|public|private"),
    ("192.0.2.1", "public|private"),  # documentation
    ("198.18.0.1", "public|private"),  # benchmarking
]


@pytest.mark.parametrize(("host", "why"), REFUSED, ids=[h for h, _ in REFUSED])
def test_non_public_addresses_are_refused_in_every_spelling(host: str, why: str) -> None:
    with pytest.raises(AddressRefused) as refused:
        check_host(host, 80, DEFAULT)
    message = str(refused.value)
    assert any(word in message for word in why.split("|")), message
    assert "allow_networks" in message


def test_a_public_address_is_allowed() -> None:
    assert check_host("93.184.215.14", 443, DEFAULT, resolver=lambda h, p: [h]) == "93.184.215.14"
    assert check_host("2606:4700::1", 443, DEFAULT, resolver=lambda h, p: [h]) == "2606:4700::1"


def test_an_allowed_network_may_be_reached() -> None:
    policy = AddressPolicy.of(["127.0.0.0/8", "10.1.0.0/16"])
    assert check_host("127.0.0.1", 80, policy) == "127.0.0.1"
    assert check_host("10.1.2.3", 80, policy, resolver=lambda h, p: [h]) == "10.1.2.3"
    with pytest.raises(AddressRefused):
        check_host("10.2.0.1", 80, policy, resolver=lambda h, p: [h])
    with pytest.raises(AddressRefused):
        check_host("169.254.169.254", 80, policy, resolver=lambda h, p: [h])


def test_an_allowed_ipv4_network_covers_its_ipv4_mapped_spelling() -> None:
    policy = AddressPolicy.of(["127.0.0.1/32"])
    assert check_host("::ffff:127.0.0.1", 80, policy, resolver=lambda h, p: [h]) == "127.0.0.1"


def test_a_name_with_one_private_address_among_public_ones_is_refused() -> None:
    # A rebinding name that answers with both: never pick the public one and hope.
    with pytest.raises(AddressRefused) as refused:
        check_host("rebind.example", 80, DEFAULT, resolver=lambda h, p: ["93.184.215.14", "127.0.0.1"])
    assert "rebind.example" in str(refused.value) and "127.0.0.1" in str(refused.value)


def test_the_name_is_resolved_exactly_once_and_the_checked_address_is_returned() -> None:
    answers = [["93.184.215.14"], ["127.0.0.1"]]
    calls: list[str] = []

    def flipping(host: str, port: int) -> list[str]:
        calls.append(host)
        return answers[len(calls) - 1]

    assert check_host("flip.example", 80, DEFAULT, resolver=flipping) == "93.184.215.14"
    assert calls == ["flip.example"]


def test_a_name_that_does_not_resolve_is_refused_with_a_reason() -> None:
    def failing(host: str, port: int) -> list[str]:
        raise OSError(-2, "Name or service not known")

    with pytest.raises(AddressRefused, match="could not be resolved"):
        check_host("nowhere.invalid", 80, DEFAULT, resolver=failing)


def test_a_resolver_answering_nothing_or_garbage_is_refused() -> None:
    with pytest.raises(AddressRefused, match="no address"):
        check_host("empty.example", 80, DEFAULT, resolver=lambda h, p: [])
    with pytest.raises(AddressRefused, match="not an IP address"):
        check_host("junk.example", 80, DEFAULT, resolver=lambda h, p: ["not-an-ip"])


def test_an_ipv6_zone_index_is_refused() -> None:
    with pytest.raises(AddressRefused, match="zone"):
        check_host("fe80::1%eth0", 80, AddressPolicy.of(["fe80::/10"]))


def test_an_empty_host_is_refused() -> None:
    with pytest.raises(AddressRefused):
        check_host("", 80, DEFAULT)
