"""Checks of an ``http`` handler while the snapshot is built (never per call)."""

from __future__ import annotations

import ipaddress
import re
import string
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from runtime.config.expressions import Finding
from runtime.config.models import HandlerHttp, ToolSpec
from runtime.config.suggest import did_you_mean

_PATH = ("spec", "handler", "http")
# Header values that are credentials: a literal one is a secret written in YAML.
_CREDENTIAL_HEADERS = re.compile(r"(?i)^(authorization|proxy-authorization|x-api-key|api-key|x-auth-token|cookie)$")


def http_findings(spec: ToolSpec, http: HandlerHttp) -> list[Finding]:
    """Every problem of ``http``: templates naming unknown arguments or secrets, a URL
    that is not http(s), CIDRs that do not parse, credentials written in the YAML."""
    properties = spec.input_schema.get("properties")
    declared: Mapping[str, Any] = properties if isinstance(properties, dict) else {}
    names = {*declared, *http.secrets}
    findings: list[Finding] = []
    for clash in sorted(set(declared) & set(http.secrets)):
        findings.append(
            Finding(
                (*_PATH, "secrets", clash),
                "handler-template",
                f"`{clash}` is both an argument and a secret; rename the secret so that a template is never ambiguous.",
            )
        )
    findings.extend(_template(http.url, names, (*_PATH, "url")))
    literal = http.url.split("{", 1)[0]
    scheme = urlsplit(literal).scheme.lower() if "://" in literal else ""
    if scheme not in ("http", "https"):
        findings.append(
            Finding(
                (*_PATH, "url"),
                "handler-template",
                f"the url must start with http:// or https:// written in the YAML (it starts `{literal[:40]}`); only "
                "the path, query or host may come from arguments.",
            )
        )
    for name, value in http.headers.items():
        findings.extend(_template(value, names, (*_PATH, "headers", name)))
        if _CREDENTIAL_HEADERS.match(name) and "{" not in value:
            findings.append(
                Finding(
                    (*_PATH, "headers", name),
                    "handler-secret",
                    f"header `{name}` holds a literal credential; put it in an environment variable and name it in "
                    f"`secrets` (e.g. secrets: {{token: API_TOKEN}} and `{name}: Bearer {{token}}`).",
                    warning=True,
                )
            )
    for path, text in _strings(http.body, (*_PATH, "body")):
        findings.extend(_template(text, names, path))
    for index, network in enumerate(http.allow_networks):
        try:
            ipaddress.ip_network(network, strict=False)
        except ValueError:
            findings.append(
                Finding(
                    (*_PATH, "allow_networks", index),
                    "invalid-value",
                    f"`{network}` is not a network in CIDR form, e.g. 10.0.0.0/8 or fd00::/8.",
                )
            )
    return findings


def _strings(value: Any, path: tuple[str | int, ...]) -> Iterator[tuple[tuple[str | int, ...], str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, (*path, str(key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, (*path, index))


def _template(template: str, names: set[str], path: tuple[str | int, ...]) -> Iterator[Finding]:
    try:
        fields = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
    except ValueError as err:
        yield Finding(
            path,
            "handler-template",
            f"bad template `{template[:80]}`: {err}. Use `{{name}}` for an argument or secret and `{{{{`/`}}}}` for "
            "literal braces.",
        )
        return
    for name in fields:
        if not name or not name.isidentifier():
            yield Finding(
                path,
                "handler-template",
                f"template uses `{{{name}}}`; only plain argument or secret names are filled in, e.g. `{{path}}`.",
            )
        elif name not in names:
            yield Finding(
                path,
                "handler-template",
                f"template uses `{{{name}}}`, which is neither an argument of the input schema nor a name in "
                f"`secrets`.{did_you_mean(name, names)} Known: {', '.join(sorted(names)) or 'none'}.",
            )
