"""The scripted coding-agent session: what a model would say, turn by turn.

Each :class:`Step` builds one Anthropic-format assistant message from what the
"model" has read so far (the tool results of earlier turns, by call id), just as a
model's next turn depends on the last one: the edit uses the hash the read returned,
the retry the hash the conflict reported, the page the artifact id of the truncated
output. ``toolrt demo`` runs these messages through the runtime and adds what each
step shows; ``examples/coding-agent/app.py`` replays them as a stand-in model when no
API key is set.

The task: fix the reorder check of the example project (``examples/coding-agent/workspace``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime.demo.report import duration_ms
from runtime.demo.workspace import lock_released
from runtime.pipeline.permit import Approval
from runtime.policy.commands import split_cached
from runtime.records import ToolResult, ValidatedCall

TASK = "An item at its reorder level is not reordered. Fix the reorder check in src/inventory.py and run the tests."

_SCRIPT = re.compile(r"scripts/[A-Za-z0-9_]+\.py")


def _edits_under_src(call: ValidatedCall) -> bool:
    """A path under src/, by its components: startswith("src/") would pass src/../x."""
    parts = str(call.args.get("path", "")).split("/")
    return len(parts) > 1 and parts[0] == "src" and all(part not in ("", ".", "..") for part in parts)


def _runs_a_project_script(call: ValidatedCall) -> bool:
    """Exactly one command, ``python scripts/<name>.py``: a prefix check on the text would
    also pass ``python scripts/x.py; curl ... | sh``."""
    line = split_cached(str(call.args.get("command", "")))
    if not line.certain or len(line.commands) != 1:
        return False
    argv = line.commands[0]
    return len(argv) == 2 and argv[0] == "python" and bool(_SCRIPT.fullmatch(argv[1]))


# What the scripted approver answers (nobody is there to ask): the edit of the module,
# and running the project's own scripts. Anything else asked about is declined.
APPROVALS: Mapping[str, bool | Callable[[ValidatedCall], bool | Approval]] = {
    "file_edit": _edits_under_src,
    "run_command": _runs_a_project_script,
}

# The change a teammate saves to src/inventory.py between the agent's read and its edit.
TEAMMATE_CHANGE = '''

def total_units(items: list[Item]) -> int:
    """All units on hand."""
    return sum(item.on_hand for item in items)
'''
ARTIFACT_PAGE_OFFSET = 1_500_000


class OffScript(RuntimeError):
    """A result did not contain what the next scripted turn needs (a bug in the example)."""


@dataclass
class ScriptState:
    """What the scripted model has seen: the workspace it works in and every tool result so far."""

    workspace: Path
    results: dict[str, str] = field(default_factory=dict)  # tool_use id -> the text the model read

    def record(self, messages: Iterable[Any]) -> None:
        """Take in the ``tool_result`` blocks of Anthropic user messages (dicts)."""
        for message in messages:
            if (
                not isinstance(message, Mapping)
                or message.get("role") != "user"
                or not isinstance(message.get("content"), list)
            ):
                continue
            for block in message["content"]:
                if isinstance(block, Mapping) and block.get("type") == "tool_result":
                    content = block.get("content")
                    self.results[str(block.get("tool_use_id"))] = content if isinstance(content, str) else str(content)

    def find(self, call_id: str, pattern: str) -> str:
        """The first group of ``pattern`` in the result of ``call_id``."""
        match = re.search(pattern, self.results.get(call_id, ""))
        if match is None:
            raise OffScript(f"the result of {call_id} does not contain {pattern!r}; the scripted session cannot go on")
        return match.group(1)


@dataclass(frozen=True)
class Turn:
    """One turn as the demo saw it: the results, its wall time, and when each call ran
    (call id -> start and end in ms after the turn began, from the audit log; empty when
    the audit log is off)."""

    results: Sequence[ToolResult]
    wall_ms: float
    spans: Mapping[str, tuple[float, float]] = field(default_factory=dict)


Observe = Callable[[ScriptState, Turn], list[str]]


@dataclass(frozen=True)
class Step:
    """One assistant turn: a title, what it shows, the message (built from the state),
    and what the demo checks afterwards (from the results and the turn's wall time)."""

    title: str
    shows: str
    reply: Callable[[ScriptState], dict[str, Any]]
    observe: Observe | None = None


def _message(text: str, *uses: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    content += [{"type": "tool_use", "id": id_, "name": name, "input": args} for id_, name, args in uses]
    return {"role": "assistant", "content": content}


def _explore(state: ScriptState) -> dict[str, Any]:
    return _message(
        "Let me read the module and its tests, find the reorder logic, and list the test files and folders, all at "
        "once.",
        ("toolu_01", "file_read", {"path": "src/inventory.py"}),
        ("toolu_02", "file_read", {"path": "tests/unit/test_inventory.py"}),
        ("toolu_03", "grep", {"pattern": "reorder_level", "glob": "**/*.py"}),
        ("toolu_04", "glob", {"pattern": "tests/**/test_*.py"}),
        ("toolu_05", "list_dir", {"path": "tests", "depth": 2}),
    )


def _read_env(state: ScriptState) -> dict[str, Any]:
    return _message("The warehouse settings may be in .env.", ("toolu_06", "file_read", {"path": ".env"}))


def _stale_edit(state: ScriptState) -> dict[str, Any]:
    read_hash = state.find("toolu_01", r"sha256 ([0-9a-f]{64})")
    # Meanwhile a teammate saves a change to the same file (the script plays the teammate).
    module = state.workspace / "src" / "inventory.py"
    module.write_text(module.read_text(encoding="utf-8") + TEAMMATE_CHANGE, encoding="utf-8")
    return _message(
        "The check uses < where the docstring says 'at the reorder level or below'. Fixing it, against the version I "
        "read.",
        (
            "toolu_07",
            "file_edit",
            {
                "path": "src/inventory.py",
                "mode": "str_replace",
                "old_string": "item.on_hand < item.reorder_level",
                "new_string": "item.on_hand <= item.reorder_level",
                "expected_hash": read_hash,
            },
        ),
    )


def _retry_edit(state: ScriptState) -> dict[str, Any]:
    current = state.find("toolu_07", r"current sha256 ([0-9a-f]{64})")
    return _message(
        "Someone changed the file since I read it; the line I replace is untouched, so I redo the edit against the "
        "current version.",
        (
            "toolu_08",
            "file_edit",
            {
                "path": "src/inventory.py",
                "mode": "str_replace",
                "old_string": "item.on_hand < item.reorder_level",
                "new_string": "item.on_hand <= item.reorder_level",
                "expected_hash": current,
            },
        ),
    )


def _whole_suite(state: ScriptState) -> dict[str, Any]:
    return _message("Running the whole test suite.", ("toolu_09", "run_tests", {"path": "tests"}))


def _unit_tests(state: ScriptState) -> dict[str, Any]:
    return _message(
        "The integration tests hang on the warehouse service; running the unit tests on their own.",
        ("toolu_10", "run_tests", {"path": "tests/unit"}),
    )


def _export(state: ScriptState) -> dict[str, Any]:
    return _message(
        "Checking that the stock report still runs.",
        ("toolu_11", "run_command", {"command": "python scripts/export_report.py"}),
    )


def _page(state: ScriptState) -> dict[str, Any]:
    artifact = state.find("toolu_11", r"(art_[0-9a-f]{24})")
    return _message(
        "Looking at a page from the middle of the report.",
        ("toolu_12", "artifact_read", {"id": artifact, "offset": ARTIFACT_PAGE_OFFSET, "limit": 300}),
    )


def _settings(state: ScriptState) -> dict[str, Any]:
    return _message(
        "Last, the service settings, to see which model the report tool uses.",
        ("toolu_13", "file_read", {"path": "config/settings.ini"}),
    )


def _done(state: ScriptState) -> dict[str, Any]:
    return _message(
        "Done: needs_reorder now reorders at the reorder level too (<=), and the unit tests pass. "
        "The integration test waits forever for the warehouse service; someone with access to it should look."
    )


# ---------------------------------------------------------------------------
# What the demo checks after each turn (the tool results alone do not show it)


def _concurrency(state: ScriptState, turn: Turn) -> list[str]:
    total = sum(duration_ms(r) for r in turn.results)
    notes = [
        f"{len(turn.results)} read-only calls, one concurrent batch: the turn took {turn.wall_ms:.0f} ms, one after "
        f"another they would take {total:.0f} ms"
    ]
    if all(r.call_id in turn.spans for r in turn.results):
        notes.append("when each call ran, in ms after the turn began (from the audit log):")
        for result in turn.results:
            start, end = turn.spans[result.call_id]
            notes.append(f"  {result.call_id} {result.name:<14} {start:4.0f} -> {end:4.0f}")
        spans = [turn.spans[result.call_id] for result in turn.results]
        together = max(start for start, _ in spans) < min(end for _, end in spans)
        notes.append(
            f"all {len(spans)} calls ran at the same time (each started before any ended): "
            f"{'yes' if together else 'NO'}"
        )
    return notes


def _denial(state: ScriptState, turn: Turn) -> list[str]:
    (result,) = turn.results
    return [
        f"denied at the {result.stage.value if result.stage else '?'} stage by rule `{result.metadata.get('rule')}`; "
        "the file was never opened"
    ]


def _conflict(state: ScriptState, turn: Turn) -> list[str]:
    current = state.find("toolu_07", r"current sha256 ([0-9a-f]{64})")
    return [
        f"conflict: the result names the current hash {current[:12]}...; src/inventory.py still holds the teammate's "
        "change and not the edit"
    ]


def _retried(state: ScriptState, turn: Turn) -> list[str]:
    module = (state.workspace / "src" / "inventory.py").read_text(encoding="utf-8")
    both = "item.on_hand <= item.reorder_level" in module and "def total_units" in module
    return [f"src/inventory.py now has the fix and the teammate's change: {'yes' if both else 'NO'}"]


def _killed(state: ScriptState, turn: Turn) -> list[str]:
    pid_file = state.workspace / "build" / "warehouse-service.pid"
    if not pid_file.is_file():
        return ["the test was stopped before it started the warehouse service"]
    pid = int(pid_file.read_text(encoding="ascii").strip())
    stopped = lock_released(state.workspace / "build" / "warehouse-service.lock")
    return [
        f"the turn took {turn.wall_ms / 1000:.1f} s; the warehouse service the test started in a session of its own "
        f"(pid {pid}): {'stopped' if stopped else 'STILL RUNNING'}"
    ]


def _artifact(state: ScriptState, turn: Turn) -> list[str]:
    meta = turn.results[0].metadata
    return [
        f"{meta.get('original_chars', 0):,} characters of output saved as artifact {meta.get('artifact_id')}; the "
        f"model read {len(turn.results[0].content):,} characters"
    ]


def _paged(state: ScriptState, turn: Turn) -> list[str]:
    first = next((line for line in turn.results[0].content.splitlines() if line.startswith("SKU-")), "?")
    return [f"a page from offset {ARTIFACT_PAGE_OFFSET:,}: it starts at {first.split(',')[0]}, deep inside the report"]


def _redacted(state: ScriptState, turn: Turn) -> list[str]:
    on_disk = (state.workspace / "config" / "settings.ini").read_text(encoding="utf-8")
    key_on_disk = "sk-proj-" in on_disk
    key_in_result = "sk-proj-" in turn.results[0].content
    line = next((line.split(None, 1)[-1] for line in turn.results[0].content.splitlines() if "REDACTED" in line), "?")
    return [
        f"the file on disk holds the key: {'yes' if key_on_disk else 'no'}; the model read it: "
        f"{'YES' if key_in_result else 'no'}, it read `{line}`"
    ]


STEPS: Sequence[Step] = (
    Step("parallel reads", "five read-only calls in one turn run as one concurrent batch", _explore, _concurrency),
    Step("a denied read", "the default permissions pack keeps .env away from the agent", _read_env, _denial),
    Step(
        "a stale edit",
        "a teammate changed the file after the read: the edit's expected_hash no longer matches",
        _stale_edit,
        _conflict,
    ),
    Step(
        "the retry",
        "the same edit with the current hash succeeds (the scripted approver approves it)",
        _retry_edit,
        _retried,
    ),
    Step(
        "a hanging test run",
        "run_tests has a 2 s timeout: the run and every process it started are stopped",
        _whole_suite,
        _killed,
    ),
    Step("the unit tests", "a normal test run", _unit_tests),
    Step("a huge output", "megabytes of output become an artifact; the model reads a preview", _export, _artifact),
    Step("paging the artifact", "artifact_read reads the artifact from an offset", _page, _paged),
    Step("a redacted secret", "the key in the settings file reaches the model redacted", _settings, _redacted),
    Step("the answer", "the model's final message: no more tool calls", _done),
)


def replies(workspace: Path) -> Callable[[Sequence[Any]], dict[str, Any]]:
    """A stand-in model for the scripted session: given the conversation so far (Anthropic
    messages, as dicts), the next assistant message. Past the last step it repeats the answer."""
    steps = iter(STEPS)

    def next_message(messages: Sequence[Any]) -> dict[str, Any]:
        state = ScriptState(workspace)
        state.record(messages)
        return next(steps, STEPS[-1]).reply(state)

    return next_message
