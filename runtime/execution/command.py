"""``command`` handlers: argv templates filled from validated arguments, run without a
shell unless the tool declares ``shell: true``, non-interactively, inside the workspace.
"""

from __future__ import annotations

import json
import os
import string
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.config.models import HandlerCommand

# Always passed through when set (plus the tool's own allow-list): enough to find
# programs and decode text, nothing that carries credentials.
BASE_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ")
# A pager, an editor or a credential prompt must never wait for a keyboard.
NON_INTERACTIVE = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "TERM": "dumb",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_EDITOR": "true",
    "EDITOR": "true",
    "PIP_NO_INPUT": "1",
    "DEBIAN_FRONTEND": "noninteractive",
}


# git opens a bare repository only when told to: a folder made to look like one (HEAD,
# objects/, refs/ and a config whose core.fsmonitor runs a command) is not picked up by
# discovery. Passed as git's environment-count config, which a tool's set_env may replace.
GIT_SAFETY = {
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "safe.bareRepository",
    "GIT_CONFIG_VALUE_0": "explicit",
}


class CommandError(ValueError):
    """A command that cannot be built from these arguments (told to the model)."""


@dataclass(frozen=True, slots=True)
class PreparedCommand:
    argv: list[str]
    cwd: Path
    env: dict[str, str]


def prepare(
    command: HandlerCommand, args: Mapping[str, Any], workspace_root: Path, base_env: Mapping[str, str] | None = None
) -> PreparedCommand:
    """The argv, working directory and environment for one call."""
    argv = _shell_line(command.argv, args) if command.shell else _argv(command.argv, args)
    return PreparedCommand(
        argv, _cwd(command.cwd, workspace_root), _environment(command, os.environ if base_env is None else base_env)
    )


def _argv(template: list[str], args: Mapping[str, Any]) -> list[str]:
    argv: list[str] = []
    for item in template:
        whole = _whole_placeholder(item)
        if whole is not None:
            # "{name}" alone: a missing optional argument drops the item, a list
            # becomes several items, anything else one item.
            if whole not in args or args[whole] is None:
                continue
            value = args[whole]
            argv.extend(_text(v) for v in value) if isinstance(value, list) else argv.append(_text(value))
            continue
        argv.append(_fill(item, args))
    if not argv:
        raise CommandError("the command line is empty for these arguments")
    return argv


def _shell_line(template: list[str], args: Mapping[str, Any]) -> list[str]:
    """The template as a shell script whose placeholders read positional parameters.

    Values never become script text: ``{msg}`` turns into ``"${1}"`` (or ``${1}`` inside
    double quotes) and the value is passed as ``$1``, so ``$(...)``, backticks and quotes
    in a value stay literal wherever the placeholder sits.
    """
    script: list[str] = []
    values: list[str] = []
    quote: str | None = None
    for position, item in enumerate(template):
        if position:
            script.append(" ")
        for literal, name, _spec, _conversion in string.Formatter().parse(item):
            quote = quote_state(literal, quote)
            script.append(literal)
            if name is None:
                continue
            if quote == "'":
                raise CommandError(
                    f"placeholder `{{{name}}}` sits inside single quotes in the command template, where the shell "
                    "cannot expand it"
                )
            if name not in args or args[name] is None:
                raise CommandError(f"argument `{name}` is needed to build the command; pass it")
            value = args[name]
            if isinstance(value, list) and quote is None:
                # Each item its own word, as in argv mode.
                references = []
                for item_value in value:
                    values.append(_text(item_value))
                    references.append('"${' + str(len(values)) + '}"')
                script.append(" ".join(references))
                continue
            values.append(" ".join(_text(v) for v in value) if isinstance(value, list) else _text(value))
            reference = "${" + str(len(values)) + "}"
            script.append(reference if quote == '"' else f'"{reference}"')
    return ["/bin/sh", "-c", "".join(script), "toolrt-command", *values]


def quote_state(text: str, quote: str | None) -> str | None:
    """The shell quoting in force after ``text``, starting from ``quote``."""
    escaped = False
    for char in text:
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote is None and char in "'\"":
            quote = char
        elif char == quote:
            quote = None
    return quote


def _whole_placeholder(item: str) -> str | None:
    parsed = list(string.Formatter().parse(item))
    if len(parsed) == 1 and parsed[0][0] == "" and parsed[0][1] and not parsed[0][2] and not parsed[0][3]:
        return parsed[0][1]
    return None


def _fill(item: str, args: Mapping[str, Any]) -> str:
    out = []
    for literal, name, _spec, _conversion in string.Formatter().parse(item):
        out.append(literal)
        if name is None:
            continue
        if name not in args or args[name] is None:
            raise CommandError(f"argument `{name}` is needed to build the command; pass it")
        value = args[name]
        out.append(" ".join(_text(v) for v in value) if isinstance(value, list) else _text(value))
    return "".join(out)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _cwd(relative: str | None, workspace_root: Path) -> Path:
    root = workspace_root.resolve()
    target = (root / relative).resolve() if relative else root
    if not target.is_relative_to(root):
        raise CommandError("the tool's working directory is outside the workspace")
    if not target.is_dir():
        raise CommandError(f"the tool's working directory `{relative or '.'}` does not exist in the workspace")
    return target


def _environment(command: HandlerCommand, source: Mapping[str, str]) -> dict[str, str]:
    env = {name: source[name] for name in (*BASE_ENV, *command.env) if name in source}
    env.update(NON_INTERACTIVE)
    env.update(GIT_SAFETY)
    env.update(command.set_env)
    return env
