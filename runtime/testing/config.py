"""A config, a workspace and a state folder for one test, from YAML text.

:class:`ConfigFolder` writes the YAML documents (and any handler modules beside them)
into a folder of its own, puts a workspace and a state directory next to it (so audit
logs, artifacts and locks never land in the real ones), and builds snapshots and
runtimes over it. Tools named in ``fakes`` are served by :class:`FakeTool` objects in
place of their declared handler; everything else about them (schema, rules, policy,
timeouts, output) stays as declared::

    lookup = FakeTool(returns={"status": "shipped"})
    with runtime_from_yaml(APP_YAML, fakes={"lookup_order": lookup}) as runtime:
        [result] = runtime.run_turn_sync([Call(id="c1", name="lookup_order", args={"order_id": "O-1"})])
    assert lookup.args == [{"order_id": "O-1"}]

The folder is a temporary one, removed on :meth:`ConfigFolder.close`, unless a
``directory`` is given (pytest's ``tmp_path``, kept for a failing test's post-mortem).
"""

from __future__ import annotations

import io
import itertools
import shutil
import sys
import tempfile
import textwrap
import types
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from runtime.config.compile import build_snapshot
from runtime.errors import ConfigError
from runtime.runtime import Runtime
from runtime.settings import Settings
from runtime.snapshot import Snapshot
from runtime.testing.fakes import FakeTool

__all__ = ["ConfigFolder", "runtime_from_yaml", "snapshot_from_yaml"]

_folders = itertools.count(1)


class ConfigFolder:
    """YAML texts written as ``app.yaml``, ``app-2.yaml``, ... in ``config/``, beside
    ``workspace/`` and ``state/``. ``files`` adds files to ``config/`` (handler modules,
    more YAML); ``workspace_files`` fills the workspace. Texts are dedented, so a
    triple-quoted string in a test can be indented with the code."""

    def __init__(
        self,
        *yaml_texts: str,
        fakes: Mapping[str, FakeTool] | None = None,
        files: Mapping[str, str] | None = None,
        workspace_files: Mapping[str, str] | None = None,
        directory: Path | str | None = None,
    ) -> None:
        if not yaml_texts:
            raise ValueError("give at least one YAML text (the config documents)")
        self._owned = directory is None
        root = Path(tempfile.mkdtemp(prefix="toolrt-test-")) if directory is None else Path(directory)
        self.root = root / f"toolrt-{next(_folders)}" if directory is not None else root
        self.path = self.root / "config"
        self.workspace = self.root / "workspace"
        self.state = self.root / "state"
        for folder in (self.path, self.workspace, self.state):
            folder.mkdir(parents=True, exist_ok=True)
        self.fakes: dict[str, FakeTool] = dict(fakes or {})
        # Fakes are found as ``python:<module>:<attribute>`` in a module of this folder's own.
        self._module = types.ModuleType(f"toolrt_testing_fakes_{uuid.uuid4().hex[:12]}")
        sys.modules[self._module.__name__] = self._module
        self._runtimes: list[Runtime] = []
        try:
            texts = [textwrap.dedent(text) for text in yaml_texts]
            self._place_fakes(texts)
            for index, text in enumerate(texts, start=1):
                self.write("app.yaml" if index == 1 else f"app-{index}.yaml", text)
            for name, content in (files or {}).items():
                self.write(name, content)
            for name, content in (workspace_files or {}).items():
                target = self.workspace / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(textwrap.dedent(content), encoding="utf-8")
        except BaseException:
            self.close()  # a folder that cannot be made leaves nothing behind
            raise

    def write(self, name: str, text: str) -> Path:
        """Write (or overwrite) ``config/name``, e.g. to test a reload; fakes are not applied."""
        target = self.path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        return target

    def settings(self, **overrides: Any) -> Settings:
        """Settings whose state (audit log, artifacts, locks) lives in this folder."""
        return Settings(**{"state_dir": self.state, **overrides})

    def snapshot(self, settings: Settings | None = None) -> Snapshot:
        """The compiled snapshot; :class:`ConfigError` listing every problem if it does not compile."""
        result = build_snapshot([self.path], settings or self.settings())
        if result.snapshot is None:
            raise ConfigError(result.problems)
        return result.snapshot

    def runtime(self, *, settings: Settings | None = None, **options: Any) -> Runtime:
        """A Runtime over this config and workspace (hot reload off unless ``watch=True``),
        closed by :meth:`close`. ``options`` go to :class:`~runtime.Runtime` (``approver``, ...)."""
        options.setdefault("workspace_root", self.workspace)
        options.setdefault("watch", False)
        runtime = Runtime([self.path], settings=settings or self.settings(), **options)
        self._runtimes.append(runtime)
        return runtime

    def close(self) -> None:
        """Close the runtimes made here, forget the fakes' module, remove a temporary folder."""
        runtimes, self._runtimes = self._runtimes, []
        try:
            for runtime in runtimes:
                runtime.close_sync()
        finally:
            sys.modules.pop(self._module.__name__, None)
            _forget_modules_under(self.path)
            if self._owned:
                shutil.rmtree(self.root, ignore_errors=True)

    async def aclose(self) -> None:
        """:meth:`close` from async code."""
        runtimes, self._runtimes = self._runtimes, []
        try:
            for runtime in runtimes:
                await runtime.close()
        finally:
            self.close()

    def __enter__(self) -> ConfigFolder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> ConfigFolder:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _place_fakes(self, texts: list[str]) -> None:
        """Point each faked tool's handler at its fake, in the texts (every version of it)."""
        if not self.fakes:
            return
        for name, fake in self.fakes.items():
            if not isinstance(fake, FakeTool):
                raise TypeError(f"fakes[{name!r}] is a {type(fake).__name__}, not a FakeTool")
        yaml = YAML()  # round trip: comments and layout stay as written
        yaml.preserve_quotes = True
        declared: set[str] = set()
        unreadable = False
        for index, text in enumerate(texts):
            try:
                documents = list(yaml.load_all(text))
            except Exception:  # noqa: BLE001 - bad YAML is reported by the build, with file:line:col
                unreadable = True
                continue
            changed = False
            for document in documents:
                tool = _tool_name(document)
                if tool is None:
                    continue
                declared.add(tool)
                if tool not in self.fakes:
                    continue
                fake = self.fakes[tool]
                attribute = f"fake_{len(self._module.__dict__)}"
                setattr(self._module, attribute, fake)
                fake.name = fake.name or tool
                spec = document["spec"]
                spec["handler"] = f"python:{self._module.__name__}:{attribute}"
                # The fake runs in this process, where the test can see its calls.
                spec.pop("process_isolation", None)
                changed = True
            if changed:
                out = io.StringIO()
                yaml.dump_all(documents, out)
                texts[index] = out.getvalue()
        missing = sorted(set(self.fakes) - declared)
        if missing and not unreadable:
            known = ", ".join(sorted(declared)) or "none"
            raise ValueError(
                f"fakes name tools the YAML texts do not declare: {', '.join(missing)} (declared: {known}). "
                "Only tools declared in the texts given here can be faked."
            )


def _forget_modules_under(folder: Path) -> None:
    """Drop the handler modules imported from ``folder``: a module beside the config is
    imported once and kept by name, so the next test's ``greeter.py`` would otherwise
    be served by this test's."""
    root = str(folder.resolve())
    for name, module in list(sys.modules.items()):
        origin = getattr(module, "__file__", None)
        if isinstance(origin, str) and (origin == root or origin.startswith(root + "/")):
            del sys.modules[name]


def _tool_name(document: Any) -> str | None:
    if not isinstance(document, Mapping) or document.get("kind") != "Tool":
        return None
    metadata, spec = document.get("metadata"), document.get("spec")
    if not isinstance(metadata, Mapping) or not isinstance(spec, Mapping):
        return None
    name = metadata.get("name")
    return name if isinstance(name, str) else None


def snapshot_from_yaml(
    *yaml_texts: str,
    fakes: Mapping[str, FakeTool] | None = None,
    files: Mapping[str, str] | None = None,
    settings: Settings | None = None,
) -> Snapshot:
    """The snapshot compiled from ``yaml_texts`` (and ``files`` beside them), built in a
    temporary folder that is gone when this returns; :class:`ConfigError` if it does not
    compile. A fake's module stays importable for as long as the fake is referenced."""
    folder = ConfigFolder(*yaml_texts, fakes=fakes, files=files)
    try:
        return folder.snapshot(settings)
    finally:
        # The compiled handlers hold their functions (and the fakes) themselves.
        _forget_modules_under(folder.path)
        shutil.rmtree(folder.root, ignore_errors=True)


class _RuntimeScope:
    """What :func:`runtime_from_yaml` returns: ``with`` / ``async with`` it for the Runtime."""

    def __init__(self, folder: ConfigFolder, options: dict[str, Any]) -> None:
        self.folder = folder
        self._options = options

    def __enter__(self) -> Runtime:
        return self._open()

    def __exit__(self, *exc: object) -> None:
        self.folder.close()

    async def __aenter__(self) -> Runtime:
        return self._open()

    async def __aexit__(self, *exc: object) -> None:
        await self.folder.aclose()

    def _open(self) -> Runtime:
        try:
            return self.folder.runtime(**self._options)
        except BaseException:
            self.folder.close()
            raise


def runtime_from_yaml(
    *yaml_texts: str,
    fakes: Mapping[str, FakeTool] | None = None,
    files: Mapping[str, str] | None = None,
    workspace_files: Mapping[str, str] | None = None,
    directory: Path | str | None = None,
    **options: Any,
) -> _RuntimeScope:
    """``with runtime_from_yaml(text, fakes=...) as runtime:`` (or ``async with``): a
    Runtime over a :class:`ConfigFolder`, closed (and the folder removed) at the end.
    ``options`` go to :class:`~runtime.Runtime` (``approver``, ``settings``, ...)."""
    folder = ConfigFolder(*yaml_texts, fakes=fakes, files=files, workspace_files=workspace_files, directory=directory)
    return _RuntimeScope(folder, options)
