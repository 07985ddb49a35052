"""Shared helpers for the pipeline tests (fixtures in conftest.py): small config dirs
written into tmp_path, with handler modules beside the YAML, a TurnEnv built by hand,
a fake Approver, and /proc scans for leftover processes.

Every :class:`ConfigDir` gets its own handler module name, because a handler module
beside the config is imported once and then cached in ``sys.modules`` by name.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import textwrap
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from runtime.config.compile import build_snapshot
from runtime.pipeline.env import TurnEnv
from runtime.pipeline.permit import Approval, Approver
from runtime.policy.decision import PolicyPermitter
from runtime.policy.grants import SessionGrants
from runtime.records import Call, Decision, Session, ValidatedCall
from runtime.settings import Settings
from runtime.shaping.artifacts import ArtifactStore
from runtime.snapshot import Snapshot

API = "toolrt/v1"


class ConfigDir:
    """A config directory under construction: ``tool(...)`` adds Tool documents,
    ``handlers(code)`` writes the handler module, ``write()`` writes tools.yaml."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.path.mkdir(parents=True, exist_ok=True)
        self.module = f"toolrt_test_h_{uuid.uuid4().hex[:12]}"
        self.documents: list[dict[str, Any]] = []

    def handlers(self, code: str) -> ConfigDir:
        """Write the handler module (``py("name")`` refers to its functions)."""
        (self.path / f"{self.module}.py").write_text(textwrap.dedent(code), encoding="utf-8")
        return self

    def py(self, function: str) -> str:
        return f"python:{self.module}:{function}"

    def tool(
        self,
        name: str,
        handler: str | Mapping[str, Any],
        *,
        version: str | None = None,
        description: str = "A test tool.",
        **spec: Any,
    ) -> ConfigDir:
        metadata: dict[str, Any] = {"name": name}
        if version is not None:
            metadata["version"] = version
        self.documents.append(
            {
                "apiVersion": API,
                "kind": "Tool",
                "metadata": metadata,
                "spec": {"description": description, "handler": handler, **spec},
            }
        )
        return self

    def command_tool(
        self,
        name: str,
        argv: Sequence[str],
        *,
        properties: Mapping[str, Any] | None = None,
        required: Sequence[str] = (),
        command: Mapping[str, Any] | None = None,
        **spec: Any,
    ) -> ConfigDir:
        schema = {"type": "object", "properties": dict(properties or {}), "required": list(required)}
        return self.tool(name, {"command": {"argv": list(argv), **(command or {})}}, input_schema=schema, **spec)

    def document(self, kind: str, name: str, spec: Mapping[str, Any]) -> ConfigDir:
        self.documents.append({"apiVersion": API, "kind": kind, "metadata": {"name": name}, "spec": dict(spec)})
        return self

    def include(self, *packs: str) -> ConfigDir:
        return self.document("Include", f"packs-{len(self.documents)}", {"packs": list(packs)})

    def output_profile(self, name: str, **spec: Any) -> ConfigDir:
        return self.document("OutputProfile", name, spec)

    def write(self, filename: str = "tools.yaml") -> Path:
        # JSON is YAML: one document per `---`, no quoting surprises.
        text = "\n---\n".join(json.dumps(doc, ensure_ascii=False) for doc in self.documents) + "\n"
        (self.path / filename).write_text(text, encoding="utf-8")
        return self.path

    def snapshot(self, settings: Settings | None = None) -> Snapshot:
        self.write()
        result = build_snapshot([self.path], settings or Settings())
        assert result.snapshot is not None, "\n".join(str(p) for p in result.errors)
        return result.snapshot

    def loaded_module(self) -> ModuleType:
        """The handler module as the snapshot imported it (for counters kept in it)."""
        return sys.modules[self.module]


def make_env(
    snapshot: Snapshot,
    workspace: Path,
    *,
    session: Session | None = None,
    approver: Approver | None = None,
    approval_timeout_s: float = 300.0,
    settings: Settings | None = None,
    artifacts: ArtifactStore | None | bool = True,
    grants: SessionGrants | None = None,
) -> TurnEnv:
    """A TurnEnv built the way Runtime builds one, with every knob reachable."""
    store = ArtifactStore(workspace / ".artifacts") if artifacts is True else (artifacts or None)
    return TurnEnv(
        snapshot=snapshot,
        settings=settings or Settings(),
        session=session or Session(),
        permitter=PolicyPermitter(),
        approver=approver,
        artifacts=store,
        workspace_root=workspace,
        request_id=uuid.uuid4().hex,
        approval_timeout_s=approval_timeout_s,
        grants=grants,
    )


def call(
    name: str,
    args: Mapping[str, Any] | None = None,
    *,
    id: str | None = None,
    index: int = 0,
    parse_error: str | None = None,
) -> Call:  # noqa: A002 - mirrors Call.id
    return Call(
        id=id or f"call_{uuid.uuid4().hex[:8]}",
        name=name,
        args=dict(args) if args is not None else (None if parse_error is not None else {}),
        index=index,
        parse_error=parse_error,
    )


@dataclass
class FakeApprover:
    """An Approver seam: answers ``answer`` after ``delay`` seconds, or raises ``error``.
    Records what it was asked."""

    answer: Approval = field(default_factory=lambda: Approval(True))
    delay: float = 0.0
    error: BaseException | None = None
    asked: list[tuple[ValidatedCall, Session, Decision]] = field(default_factory=list)

    async def __call__(self, call: ValidatedCall, session: Session, decision: Decision) -> Approval:
        self.asked.append((call, session, decision))
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.error is not None:
            raise self.error
        return self.answer


def live_pids_with(marker: str, where: str = "environ") -> set[int]:
    """Live (not zombie) processes whose environment (or, with ``where="cmdline"``,
    command line) contains ``marker``."""
    needle = marker.encode()
    found: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/{where}", "rb") as handle:
                if needle not in handle.read():
                    continue
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        state = stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3]
        if state not in (b"Z", b"X"):
            found.add(int(entry))
    return found


def kill_all(pids: set[int]) -> None:
    """Clean up after a failed tree-kill assertion (only processes this test started)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
