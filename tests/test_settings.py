from pathlib import Path

import pytest
from pydantic import ValidationError

from runtime.config.models import PermissionMode
from runtime.settings import Settings


def test_defaults_are_safe(monkeypatch):
    monkeypatch.delenv("TOOLRT_HOT_RELOAD", raising=False)  # tests/conftest.py turns it off for the suite
    settings = Settings()
    assert settings.permission_mode is PermissionMode.default
    assert settings.hot_reload is True
    assert settings.default_output.max_chars == 30_000


def test_environment_variables_with_toolrt_prefix_are_read(monkeypatch):
    monkeypatch.setenv("TOOLRT_MAX_CONCURRENCY", "3")
    monkeypatch.setenv("TOOLRT_DEFAULT_OUTPUT__MAX_CHARS", "1234")
    settings = Settings()
    assert settings.max_concurrency == 3
    assert settings.default_output.max_chars == 1234


def test_settings_file_is_read_and_environment_outranks_it(tmp_path: Path, monkeypatch):
    file = tmp_path / "toolrt.toml"
    file.write_text('max_concurrency = 5\nlog_format = "json"\nworkspace_root = "/srv/ws"\n')
    monkeypatch.setenv("TOOLRT_LOG_FORMAT", "text")
    settings = Settings.load(file)
    assert settings.max_concurrency == 5
    assert settings.log_format == "text"
    assert settings.workspace_root == Path("/srv/ws")


def test_settings_file_named_by_environment_variable(tmp_path: Path, monkeypatch):
    file = tmp_path / "toolrt.toml"
    file.write_text("max_concurrency = 7\n")
    monkeypatch.setenv("TOOLRT_SETTINGS_FILE", str(file))
    assert Settings().max_concurrency == 7


def test_explicit_arguments_outrank_environment(monkeypatch):
    monkeypatch.setenv("TOOLRT_MAX_CONCURRENCY", "3")
    assert Settings(max_concurrency=9).max_concurrency == 9


@pytest.mark.parametrize(
    "field, value", [("max_concurrency", 0), ("cel_engine", "turbo"), ("log_format", "xml"), ("unknown_field", 1)]
)
def test_invalid_settings_are_rejected(field, value):
    with pytest.raises(ValidationError):
        Settings(**{field: value})


def test_settings_are_frozen():
    with pytest.raises(ValidationError):
        Settings().max_concurrency = 2  # type: ignore[misc]
