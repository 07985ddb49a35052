"""The request of an ``http`` tool: its templates parsed once, filled per call.

Argument values are percent-encoded in the URL (every reserved character, ``/``
included), so an argument can never change the scheme, the host, the port or the
path's structure that the config wrote. Secrets come from the environment at call
time and are named in ``secrets``; they never appear in the arguments, so the audit
log and the model never see them. CR, LF and NUL in a header value are refused
(header injection).
"""

from __future__ import annotations

import json
import os
import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, quote_plus

from runtime.config.models import HandlerHttp
from runtime.http.guard import AddressPolicy

Pieces = tuple[tuple[str, str | None], ...]  # (literal text, placeholder name or None)


class RequestError(Exception):
    """The request cannot be built from these arguments; the message says why."""


@dataclass(frozen=True, slots=True)
class HttpPlan:
    """An http handler, compiled: parsed templates and the address policy."""

    method: str
    url: Pieces
    headers: tuple[tuple[str, Pieces], ...]
    body: Any  # the body with every string replaced by its Pieces
    secrets: Mapping[str, str]  # placeholder -> environment variable
    secret_headers: frozenset[str]  # headers whose value holds a secret (dropped on a redirect to another host)
    policy: AddressPolicy
    max_response_bytes: int
    max_redirects: int


def build_plan(http: HandlerHttp) -> HttpPlan:
    """Compile ``http`` (its templates were checked by :mod:`runtime.http.lint`)."""
    headers = tuple((name, _pieces(value)) for name, value in http.headers.items())
    secret_headers = frozenset(name.lower() for name, pieces in headers if any(p in http.secrets for _, p in pieces))
    return HttpPlan(
        method=http.method,
        url=_pieces(http.url),
        headers=headers,
        body=_compile_body(http.body),
        secrets=dict(http.secrets),
        secret_headers=secret_headers,
        policy=AddressPolicy.of(http.allow_networks),
        max_response_bytes=http.max_response_bytes,
        max_redirects=http.max_redirects,
    )


def _pieces(template: str) -> Pieces:
    return tuple((literal, name) for literal, name, _spec, _conv in string.Formatter().parse(template))


def _compile_body(body: Any) -> Any:
    if isinstance(body, str):
        return _pieces(body)
    if isinstance(body, dict):
        return {str(k): _compile_body(v) for k, v in body.items()}
    if isinstance(body, list):
        return [_compile_body(v) for v in body]
    return ("const", body)


@dataclass(frozen=True, slots=True)
class Request:
    url: str
    headers: dict[str, str]
    content: bytes | None
    secret_values: tuple[str, ...]  # redacted from the response and from error messages, every spelling


def secret_spellings(secret: str) -> set[str]:
    """``secret`` as the request carries it and as a server or a library may echo it back:
    as is, percent-encoded (the URL form sent, ``/`` kept or not, ``+`` for spaces, hex in
    either case), and escaped inside a JSON string. An error page quoting the requested
    URL holds the encoded form, which a search for the plain value would miss."""
    forms = {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}
    for encoded in (quote(secret, safe=""), quote(secret, safe="/"), quote_plus(secret, safe="")):
        forms.add(encoded)
        forms.add(_lower_hex(encoded))
    return forms


def _lower_hex(encoded: str) -> str:
    parts = encoded.split("%")
    return parts[0] + "".join("%" + part[:2].lower() + part[2:] for part in parts[1:])


def render(plan: HttpPlan, args: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> Request:
    """The request for one call."""
    environ = os.environ if environ is None else environ
    used: dict[str, str] = {}

    def value(name: str) -> Any:
        if name in plan.secrets:
            variable = plan.secrets[name]
            secret = environ.get(variable)
            if not secret:
                raise RequestError(
                    f"the secret `{name}` is read from the environment variable {variable}, which is not set; ask the "
                    "operator to set it"
                )
            used[name] = secret
            return secret
        if name not in args:
            raise RequestError(f"argument `{name}` is needed to build the request; pass it")
        return args[name]

    url = "".join(
        literal + (quote(_text(value(name)), safe="") if name is not None else "") for literal, name in plan.url
    )
    headers: dict[str, str] = {}
    for header, pieces in plan.headers:
        text = "".join(literal + (_text(value(name)) if name is not None else "") for literal, name in pieces)
        if any(ch in text for ch in "\r\n\x00"):
            raise RequestError(
                f"the value of header `{header}` would contain a line break or NUL; remove it from the arguments"
            )
        headers[header] = text
    content = None
    if plan.body is not None and plan.body != ("const", None):
        body = _fill(plan.body, value)
        if isinstance(body, str):
            content = body.encode("utf-8")
            headers.setdefault("Content-Type", "text/plain; charset=utf-8")
        else:
            content = json.dumps(body, ensure_ascii=False).encode("utf-8")
            headers.setdefault("Content-Type", "application/json")
    forms = {form for secret in used.values() for form in secret_spellings(secret)}
    return Request(url, headers, content, tuple(sorted(forms, key=len, reverse=True)))


def _fill(template: Any, value: Any) -> Any:
    if isinstance(template, dict):
        return {k: _fill(v, value) for k, v in template.items()}
    if isinstance(template, list):
        return [_fill(v, value) for v in template]
    if isinstance(template, tuple) and len(template) == 2 and template[0] == "const":
        return template[1]
    pieces: Pieces = template
    if len(pieces) == 1 and pieces[0][0] == "" and pieces[0][1] is not None:
        return value(pieces[0][1])  # exactly `{name}`: the value as it is
    return "".join(literal + (_text(value(name)) if name is not None else "") for literal, name in pieces)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False)
