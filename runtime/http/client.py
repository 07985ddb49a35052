"""Sending an ``http`` tool's request with httpx: the one place httpx is used.

Each hop (the first request and every redirect) is checked by the guard and sent to
the address the guard resolved, with the original host in the ``Host`` header and as
the TLS server name (so certificates are still checked against the name). Redirects
are followed here, not by httpx, so that each one is checked like the first; a 303
(and a 301/302 after a POST) becomes a GET without a body; headers holding secrets
are dropped when a redirect leads to another host. The proxy environment variables
are ignored (a proxy would connect to the name itself). The body is read in chunks
and reading stops past ``max_response_bytes``.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
from dataclasses import dataclass

import httpx

from runtime.http.guard import AddressRefused, Resolver, check_host, system_resolver
from runtime.http.request import HttpPlan, Request

_DEFAULT_PORTS = {"http": 80, "https": 443}
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


class ResponseTooLarge(Exception):
    """The response body passed the handler's ``max_response_bytes``."""


class TooManyRedirects(Exception):
    """More redirects than the handler's ``max_redirects``."""


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    headers: dict[str, str]
    body: bytes
    host: str
    redirects: int


async def send(
    plan: HttpPlan, request: Request, *, idle_s: float | None, resolver: Resolver = system_resolver
) -> Response:
    """Send ``request``; raises :class:`AddressRefused`, :class:`ResponseTooLarge`,
    ``httpx.HTTPError`` (transport failures) or ``ValueError`` (a malformed URL).
    The caller bounds the total time."""
    timeout = httpx.Timeout(idle_s) if idle_s is not None else httpx.Timeout(None)
    method = plan.method
    url = httpx.URL(request.url)
    headers = dict(request.headers)
    content = request.content
    redirects = 0
    async with httpx.AsyncClient(
        trust_env=False, follow_redirects=False, timeout=timeout, verify=_tls_context()
    ) as client:
        while True:
            scheme = url.scheme
            if scheme not in _DEFAULT_PORTS:
                raise AddressRefused(f"the URL scheme `{scheme}` is not allowed; only http and https")
            host = url.host
            port = url.port or _DEFAULT_PORTS[scheme]
            address = await asyncio.to_thread(check_host, host, port, plan.policy, resolver)
            target = url.copy_with(host=address)
            sent_headers = {
                **headers,
                "Host": host if url.port in (None, _DEFAULT_PORTS[scheme]) else f"{host}:{url.port}",
            }
            extensions = {"sni_hostname": host} if scheme == "https" else {}
            outgoing = client.build_request(
                method, target, headers=sent_headers, content=content, extensions=extensions
            )
            response = await client.send(outgoing, stream=True)
            try:
                location = response.headers.get("location")
                if (
                    response.status_code in _REDIRECTS
                    and location is not None
                    and plan.max_redirects
                    and redirects >= plan.max_redirects
                ):
                    raise TooManyRedirects(f"more than {plan.max_redirects} redirects (the last to `{location[:200]}`)")
                if response.status_code in _REDIRECTS and location is not None and redirects < plan.max_redirects:
                    redirects += 1
                    following = url.join(location)
                    if response.status_code == 303 or (response.status_code in (301, 302) and method == "POST"):
                        method, content = ("HEAD" if method == "HEAD" else "GET"), None
                        headers = {k: v for k, v in headers.items() if k.lower() != "content-type"}
                    if (
                        following.host != host
                        or following.scheme != scheme
                        or (following.port or _DEFAULT_PORTS.get(following.scheme)) != port
                    ):
                        headers = {k: v for k, v in headers.items() if k.lower() not in plan.secret_headers}
                    url = following
                    continue
                body = await _read(response, plan.max_response_bytes)
                shown = {k.lower(): v for k, v in response.headers.items() if k.lower() in _SHOWN_HEADERS}
                return Response(response.status_code, shown, body, host, redirects)
            finally:
                await response.aclose()


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """The TLS settings every request verifies certificates with, built once per process.

    httpx builds a new context (loading the whole CA bundle) for each client unless it is
    given one: about 25 ms of CPU per call, plain HTTP included. A context holds no
    per-connection state and may be shared by clients, threads and event loops.
    """
    return httpx.create_ssl_context(trust_env=False)


_SHOWN_HEADERS = frozenset(
    {"content-type", "content-length", "location", "etag", "last-modified", "retry-after", "content-encoding"}
)


async def _read(response: httpx.Response, limit: int) -> bytes:
    declared = response.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ResponseTooLarge(f"the response is {int(declared):,} bytes, over this tool's limit of {limit:,} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            raise ResponseTooLarge(f"the response is over this tool's limit of {limit:,} bytes (reading stopped there)")
        chunks.append(chunk)
    return b"".join(chunks)
