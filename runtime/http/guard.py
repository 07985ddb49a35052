"""Which addresses an ``http`` tool may reach: the SSRF guard.

A host is resolved once, by the system resolver (which also reads the spellings that
``inet_aton`` accepts: ``2130706433``, ``0177.0.0.1``, ``0x7f.1``, ``127.1``); every
address it resolves to must be allowed, and the connection then goes to one of those
addresses (never to the name again), so a name cannot answer with a public address to
the check and a private one to the connection (DNS rebinding).

An address is allowed when it is global (public) or inside one of the handler's
``allow_networks``. Not global: private ranges (10/8, 172.16/12, 192.168/16, fc00::/7),
loopback, link-local (169.254/16 with the cloud metadata service, fe80::/10),
carrier-grade NAT (100.64/10), multicast, reserved, unspecified (0.0.0.0, ::),
documentation and benchmarking ranges. An IPv6 address that carries an IPv4 one
(IPv4-mapped ``::ffff:a.b.c.d``, IPv4-compatible, 6to4, Teredo, NAT64) is judged by
that IPv4 address as well.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], Sequence[str]]

_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_METADATA = frozenset({ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")})


class AddressRefused(Exception):
    """The host may not be reached; the message says why, for the model."""


@dataclass(frozen=True, slots=True)
class AddressPolicy:
    """The networks allowed although they are not public (compiled once per tool)."""

    allowed: tuple[Network, ...] = ()

    @classmethod
    def of(cls, networks: Sequence[str]) -> AddressPolicy:
        return cls(tuple(ipaddress.ip_network(n, strict=False) for n in networks))

    def refusal(self, address: IPAddress) -> str | None:
        """Why ``address`` may not be reached, or None when it may."""
        if any(address in network for network in self.allowed if network.version == address.version):
            return None
        for inner in _embedded_ipv4(address):
            if any(inner in network for network in self.allowed if network.version == 4):
                return None
        kind = None
        for inner in _embedded_ipv4(address):  # what the IPv4 address inside says first
            kind = kind or _kind(inner) or (None if inner.is_global else "not a public address")
        kind = kind or _kind(address)
        if kind is None and not address.is_global:
            kind = "not a public address"
        return kind


def _kind(address: IPAddress) -> str | None:
    if address in _METADATA:
        return "the cloud metadata service"
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_unspecified:
        return "an unspecified address"
    if address.is_multicast:
        return "a multicast address"
    if address.is_private:
        return "a private address"
    if address.is_reserved:
        return "a reserved address"
    return None


def _embedded_ipv4(address: IPAddress) -> list[ipaddress.IPv4Address]:
    if not isinstance(address, ipaddress.IPv6Address):
        return []
    found: list[ipaddress.IPv4Address] = []
    if address.ipv4_mapped is not None:
        found.append(address.ipv4_mapped)
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found.extend(address.teredo)
    packed = address.packed
    if (
        packed[:12] == bytes(12) and packed[12:] != bytes(4) and not address.is_loopback
    ):  # IPv4-compatible ::a.b.c.d (deprecated)
        found.append(ipaddress.IPv4Address(packed[12:]))
    if address in _NAT64:
        found.append(ipaddress.IPv4Address(packed[12:]))
    return found


def system_resolver(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (TCP), as the system resolver gives them."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def check_host(host: str, port: int, policy: AddressPolicy, resolver: Resolver = system_resolver) -> str:
    """The address to connect to for ``host``: resolved once, every address checked.

    Raises :class:`AddressRefused` when the name does not resolve or any of its
    addresses is refused (a name with one private address among public ones is a
    rebinding trick, not a reason to pick the public one)."""
    name = host.strip("[]")
    if not name:
        raise AddressRefused("the URL has no host")
    if "%" in name:
        raise AddressRefused(f"host `{_shown(host)}` has an IPv6 zone index, which is not allowed")
    try:
        resolved = resolver(name, port)
    except (OSError, UnicodeError) as err:
        raise AddressRefused(
            f"host `{_shown(host)}` could not be resolved ({getattr(err, 'strerror', None) or err})"
        ) from None
    if not resolved:
        raise AddressRefused(f"host `{_shown(host)}` resolves to no address")
    addresses: list[IPAddress] = []
    for text in resolved:
        try:
            address = ipaddress.ip_address(text.split("%", 1)[0])
        except ValueError:
            raise AddressRefused(
                f"host `{_shown(host)}` resolved to `{_shown(text)}`, which is not an IP address"
            ) from None
        why = policy.refusal(address)
        if why is not None:
            shown = f"`{_shown(host)}`" if name == str(address) else f"`{_shown(host)}` (it resolves to {address})"
            raise AddressRefused(
                f"{shown} is {why}; this tool may only reach public addresses. The config can allow a network with "
                "`allow_networks`."
            )
        # An IPv4-mapped address is an IPv4 address: connect to it as one.
        mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
        addresses.append(mapped or address)
    return str(addresses[0])


def _shown(text: str) -> str:
    return text if len(text) <= 100 else text[:100] + "..."
