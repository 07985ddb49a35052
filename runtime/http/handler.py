"""The execute stage of an ``http`` tool: build, guard, send, and describe the response.

The output is ``{"status", "headers", "body"}``: the body parsed as JSON when the
response says so, else text; a binary body is described, not dumped. An HTTP error
status is an error result with the body's start. Secret values are removed from
the response and from every message (a server may echo a header back). Transient
failures (connection errors, 429, 502, 503, 504) are marked so that the execute
stage may retry them, for idempotent methods and declared idempotent tools only.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

from runtime.http.guard import AddressRefused, system_resolver
from runtime.http.request import HttpPlan, RequestError, render
from runtime.records import HandlerOutcome, Status, ValidatedCall

#: Methods that may be repeated without changing the result (RFC 9110).
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
_TRANSIENT_STATUS = frozenset({429, 502, 503, 504})
_ERROR_BODY_CHARS = 2000


async def call_http(call: ValidatedCall, env: Any, failure: Callable[..., HandlerOutcome]) -> HandlerOutcome:
    """Run one ``http`` tool call; every failure becomes a HandlerOutcome."""
    tool = call.tool
    plan: HttpPlan | None = tool.handler.prepared
    if plan is None:  # pragma: no cover - the snapshot builds one for every http handler
        return HandlerOutcome(error="http handler without a plan", status=Status.internal, code="internal_error")
    try:
        from runtime.http.client import ResponseTooLarge, TooManyRedirects, send
    except ImportError:
        return HandlerOutcome(
            error=f"`{tool.name}` needs the `http` extra (pip install 'toolrt[http]'), which is not installed.",
            status=Status.error,
            code="not_available",
        )
    import httpx

    try:
        request = render(plan, call.args)
    except RequestError as err:
        return HandlerOutcome(
            error=f"`{tool.name}` cannot send its request: {err}.", status=Status.invalid, code="bad_request"
        )
    secrets = request.secret_values
    timeout = tool.spec.timeout
    try:
        async with asyncio.timeout(timeout.total_s):
            response = await send(plan, request, idle_s=timeout.idle_s, resolver=system_resolver)
    except TimeoutError:
        return failure(
            tool, f"timed out after {timeout.total_s:g} s (total time)", Status.timeout, "timeout", transient=True
        )
    except AddressRefused as err:
        return HandlerOutcome(
            error=f"`{tool.name}` refused to connect: {_scrub(str(err), secrets)}",
            status=Status.denied,
            code="address_refused",
        )
    except TooManyRedirects as err:
        return HandlerOutcome(
            error=f"`{tool.name}` stopped: {_scrub(str(err), secrets)}.", status=Status.error, code="too_many_redirects"
        )
    except (httpx.InvalidURL, httpx.UnsupportedProtocol) as err:
        return HandlerOutcome(
            error=(
                f"`{tool.name}` refused to connect: the URL (or a redirect's) is not valid: "
                f"{_scrub(str(err), secrets)}."
            ),
            status=Status.denied,
            code="address_refused",
        )
    except httpx.RemoteProtocolError as err:
        if "location" in str(err).lower():  # a redirect to a URL that does not parse: never followed
            return HandlerOutcome(
                error=f"`{tool.name}` refused to follow a redirect: {_scrub(str(err), secrets)}.",
                status=Status.denied,
                code="address_refused",
            )
        return failure(
            tool,
            f"failed while talking to the server: {_scrub(_describe(err), secrets)}",
            Status.error,
            "http_error",
            transient=True,
        )
    except ResponseTooLarge as err:
        return failure(tool, _scrub(str(err), secrets), Status.error, "response_too_large")
    except httpx.ReadTimeout:
        return failure(
            tool, f"got no data for {timeout.idle_s:g} s (idle timeout)", Status.timeout, "timeout", transient=True
        )
    except (httpx.ConnectError, httpx.ConnectTimeout) as err:
        # Nothing was sent: not an unknown result, even for a write.
        return HandlerOutcome(
            error=f"`{tool.name}` could not connect: {_scrub(_describe(err), secrets)}.",
            status=Status.error,
            code="connect_failed",
            metadata=MappingProxyType({"transient": True}),
        )
    except httpx.HTTPError as err:
        return failure(
            tool,
            f"failed while talking to the server: {_scrub(_describe(err), secrets)}",
            Status.error,
            "http_error",
            transient=True,
        )
    except (ValueError, UnicodeError) as err:
        return HandlerOutcome(
            error=f"`{tool.name}` cannot send its request: {_scrub(str(err), secrets)}.",
            status=Status.invalid,
            code="bad_request",
        )
    body = _body(response.body, response.headers.get("content-type", ""), secrets)
    meta = MappingProxyType(
        {
            "http_status": response.status,
            "host": response.host,
            "redirects": response.redirects,
            "response_bytes": len(response.body),
        }
    )
    if response.status >= 400:
        text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
        shown = (
            text
            if len(text) <= _ERROR_BODY_CHARS
            else text[:_ERROR_BODY_CHARS] + f"... [{len(text) - _ERROR_BODY_CHARS:,} more characters]"
        )
        message = f"`{tool.name}` got HTTP {response.status} from {response.host}." + (
            f" Response:\n{shown}" if shown else ""
        )
        transient = response.status in _TRANSIENT_STATUS
        return HandlerOutcome(
            error=message,
            status=Status.error,
            code="http_status",
            metadata=MappingProxyType({**meta, **({"transient": True} if transient else {})}),
        )
    return HandlerOutcome(
        value={"status": response.status, "headers": _scrub_value(response.headers, secrets), "body": body},
        metadata=meta,
    )


def _body(raw: bytes, content_type: str, secrets: tuple[str, ...]) -> Any:
    kind = content_type.split(";", 1)[0].strip().lower()
    charset = "utf-8"
    for part in content_type.split(";")[1:]:
        key, _, value = part.strip().partition("=")
        if key.lower() == "charset" and value:
            charset = value.strip('"')
    if kind == "application/json" or kind.endswith("+json"):
        try:
            return _scrub_value(json.loads(raw.decode(charset, errors="replace")), secrets)
        except (ValueError, LookupError):
            pass
    if raw and (b"\x00" in raw[:4096]) and not kind.startswith("text/"):
        return f"[binary response: {len(raw):,} bytes of {kind or 'unknown type'}]"
    try:
        text = raw.decode(charset, errors="replace")
    except LookupError:
        text = raw.decode("utf-8", errors="replace")
    return _scrub(text, secrets)


def _scrub(text: str, secrets: tuple[str, ...]) -> str:
    for secret in secrets:
        if len(secret) >= 4:
            text = text.replace(secret, "[REDACTED:secret]")
    return text


def _scrub_value(value: Any, secrets: tuple[str, ...]) -> Any:
    if not secrets:
        return value
    if isinstance(value, str):
        return _scrub(value, secrets)
    if isinstance(value, dict):
        return {_scrub(str(k), secrets): _scrub_value(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_value(v, secrets) for v in value]
    return value


def _describe(err: Exception) -> str:
    text = str(err)
    return f"{type(err).__name__}: {text}" if text else type(err).__name__
