"""Rendering lint results: text, JSON, SARIF 2.1.0 and GitHub workflow annotations."""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from urllib.parse import quote

from runtime.config.problems import Problem, Severity
from runtime.lint.codes import help_for

FORMATS = ("text", "json", "sarif", "github")
_SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def render(problems: Sequence[Problem], fmt: str, *, files: int, documents: int, strict: bool = False) -> str:
    """The report in ``fmt``. With ``strict``, warnings are shown as errors."""
    shown = [_promote(p) for p in problems] if strict else list(problems)
    if fmt == "json":
        return _json(shown, files, documents)
    if fmt == "sarif":
        return _sarif(shown)
    if fmt == "github":
        return _github(shown)
    return _text(shown, files, documents)


def _promote(problem: Problem) -> Problem:
    if problem.severity is Severity.warning:
        return Problem(problem.location, problem.code, problem.message, Severity.error)
    return problem


def _counts(problems: Sequence[Problem]) -> tuple[int, int]:
    errors = sum(1 for p in problems if p.is_error)
    return errors, len(problems) - errors


def _text(problems: Sequence[Problem], files: int, documents: int) -> str:
    lines = [str(p) for p in problems]
    errors, warnings = _counts(problems)
    lines.append(f"{files} file(s), {documents} document(s): {errors} error(s), {warnings} warning(s)")
    return "\n".join(lines) + "\n"


def _json(problems: Sequence[Problem], files: int, documents: int) -> str:
    errors, warnings = _counts(problems)
    body = {
        "files": files,
        "documents": documents,
        "errors": errors,
        "warnings": warnings,
        "problems": [
            {
                "file": p.location.file,
                "line": p.location.line,
                "col": p.location.col,
                "severity": p.severity.value,
                "code": p.code,
                "message": p.message,
            }
            for p in problems
        ],
    }
    return json.dumps(body, indent=2, ensure_ascii=False) + "\n"


def _sarif(problems: Sequence[Problem]) -> str:
    codes = sorted({p.code for p in problems})
    root = Path.cwd()
    results = []
    for p in problems:
        region = {"startLine": max(p.location.line, 1), "startColumn": max(p.location.col, 1)}
        results.append(
            {
                "ruleId": p.code,
                "ruleIndex": codes.index(p.code),
                "level": "error" if p.is_error else "warning",
                "message": {"text": p.message},
                "locations": [
                    {"physicalLocation": {"artifactLocation": _artifact(p.location.file, root), "region": region}}
                ],
            }
        )
    rules = []
    for code in codes:
        short, fix = help_for(code)
        rules.append(
            {
                "id": code,
                "name": code,
                "shortDescription": {"text": short},
                "help": {"text": f"{short} {fix}"},
                "helpUri": f"{_INFORMATION_URI}#in-ci",
            }
        )
    driver = {
        "name": "toolrt",
        "version": _version(),
        "semanticVersion": _version(),
        "informationUri": _INFORMATION_URI,
        "rules": rules,
    }
    log = {
        "$schema": _SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": driver},
                # Paths are relative to where lint ran, so that code scanning places them in the repository.
                "originalUriBaseIds": {_BASE: {"uri": root.as_uri() + "/"}},
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


_BASE = "%SRCROOT%"
_INFORMATION_URI = "https://github.com/toolrt/toolrt"  # the project page (pyproject.toml, [project.urls])


def _artifact(file: str, root: Path) -> dict[str, str]:
    """A SARIF artifactLocation: a URI relative to ``%SRCROOT%`` (percent-encoded, so
    spaces and other characters survive), or an absolute file URI outside it."""
    path = Path(file)
    if path.is_absolute():
        try:
            path = path.relative_to(root)
        except ValueError:
            return {"uri": path.as_uri()}
    return {"uri": quote(path.as_posix()), "uriBaseId": _BASE}


def _version() -> str:
    try:
        return version("toolrt")
    except PackageNotFoundError:
        return "0.0.0"


def _github(problems: Sequence[Problem]) -> str:
    lines = []
    for p in problems:
        level = "error" if p.is_error else "warning"
        message = p.message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        where = f"file={_property(p.location.file)}"
        if p.location.line > 0:
            where += f",line={p.location.line},col={p.location.col}"
        lines.append(f"::{level} {where},title={_property(p.code)}::{message}")
    return "\n".join(lines) + ("\n" if lines else "")


def _property(value: str) -> str:
    """Escape a workflow-command property value (GitHub: %, CR, LF, ':' and ',')."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A").replace(":", "%3A").replace(",", "%2C")
