"""The module a ``python:`` handler names: from ``sys.path`` (the one already imported
included), else the one beside the config files. The path first: a config folder may lie
inside the workspace, where an agent could add a module of an installed handler's name (the
module files a snapshot takes from beside its config are kept from the agent instead:
tests/config/test_handler_files.py)."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.config.handler_import import import_handler_module


@pytest.fixture
def name() -> Iterator[str]:
    module = f"handler_import_{uuid.uuid4().hex[:12]}"
    yield module
    sys.modules.pop(module, None)


def _module(folder: Path, name: str, value: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.py").write_text(f"WHO = {value!r}\n")


def test_an_installed_module_wins_over_one_of_its_name_beside_the_config(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _module(tmp_path / "installed", name, "installed")
    _module(tmp_path / "workspace" / "toolrt.d", name, "agent")  # a config folder inside the workspace
    monkeypatch.syspath_prepend(str(tmp_path / "installed"))
    assert import_handler_module(name, [tmp_path / "workspace" / "toolrt.d"]).WHO == "installed"


def test_a_module_on_the_import_path_is_used_when_none_is_beside_the_config(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _module(tmp_path / "installed", name, "installed")
    monkeypatch.syspath_prepend(str(tmp_path / "installed"))
    assert import_handler_module(name, [tmp_path / "config"]).WHO == "installed"


def test_a_module_already_imported_is_the_one_used(tmp_path: Path, name: str) -> None:
    _module(tmp_path / "first", name, "first")
    _module(tmp_path / "second", name, "second")
    assert import_handler_module(name, [tmp_path / "first"]).WHO == "first"
    assert import_handler_module(name, [tmp_path / "second"]).WHO == "first"


def test_the_first_search_folder_holding_the_module_wins(tmp_path: Path, name: str) -> None:
    _module(tmp_path / "b", name, "b")
    _module(tmp_path / "c", name, "c")
    assert import_handler_module(name, [tmp_path / "a", tmp_path / "b", tmp_path / "c"]).WHO == "b"


def test_a_dotted_name_comes_from_the_import_path(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "installed" / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "tools.py").write_text("WHO = 'package'\n")
    monkeypatch.syspath_prepend(str(tmp_path / "installed"))
    try:
        assert import_handler_module(f"{name}.tools", [tmp_path / "config"]).WHO == "package"
    finally:
        sys.modules.pop(f"{name}.tools", None)


def test_a_module_found_nowhere_raises_module_not_found(tmp_path: Path, name: str) -> None:
    with pytest.raises(ModuleNotFoundError):
        import_handler_module(name, [tmp_path / "config"])


def test_a_module_that_fails_to_import_is_not_left_half_made(tmp_path: Path, name: str) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / f"{name}.py").write_text("raise RuntimeError('broken handler module')\n")
    with pytest.raises(RuntimeError, match="broken handler module"):
        import_handler_module(name, [tmp_path / "config"])
    assert name not in sys.modules
