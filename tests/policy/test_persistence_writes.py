"""Code execution and persistence by writing files, through a real Runtime.

The session may edit the workspace without asking (``accept_edits``) and may run the
README's read-only command lines (``ls``, ``cat``, ``git status``, ``git diff``), but
nothing else. A hostile agent writes files that some program runs when it starts
(git hooks and config, a Makefile, ``.envrc``, build hooks, editor tasks, Python start-up
files, a ``git`` in ``node_modules/.bin``) and then triggers them through the allowed
commands; or it writes toolrt's own config, settings file, state, artifacts or audit log
to change what the next start allows. The writes to git internals and toolrt's files are
refused; the others land but nothing they hold runs.

Before, the TOML settings file (``Settings.load(path)`` or ``TOOLRT_SETTINGS_FILE``) was
not among toolrt's own files: an agent in the workspace could set
``permission_mode = "bypass"`` or ``command_sandbox = "off"`` for the next start.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from packs_support import with_packs

from runtime import Runtime
from runtime.records import Call, Session, Status, ToolResult
from runtime.settings import Settings

ACCEPT = Session(id="s", mode="accept_edits")
INCLUDE = with_packs(
    """\
apiVersion: toolrt/v1
kind: Policy
metadata: {name: shell}
spec:
  rules:
    - name: read-only-commands
      effect: allow
      tools: [run_command]
      commands: ['ls *', 'cat *', 'git status *', 'git diff *']
"""
)


class Place:
    def __init__(self, base: Path, *, config_inside: bool, settings_env: bool, monkeypatch: pytest.MonkeyPatch) -> None:
        self.ws = base / "ws"
        self.ws.mkdir()
        self.marker = base / "PWNED"
        self.config = (self.ws / "toolrt.d") if config_inside else (base / "config")
        self.config.mkdir()
        (self.config / "c.yaml").write_text(INCLUDE)
        (self.ws / "src").mkdir()
        (self.ws / "src" / "a.py").write_text("print('a')\n")
        (self.ws / "README.md").write_text("# demo\n")
        git = ["git", "-C", str(self.ws), "-c", "user.name=a", "-c", "user.email=a@b"]
        subprocess.run(["git", "init", "-q", str(self.ws)], check=True)
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", "init"], check=True)
        self.settings_file = self.ws / "toolrt.toml"
        self.settings_file.write_text('permission_mode = "default"\n')
        overrides = {"state_dir": base / "state", "workspace_root": self.ws, "hot_reload": False}
        if settings_env:
            monkeypatch.setenv("TOOLRT_SETTINGS_FILE", str(self.settings_file))
            settings = Settings(**overrides)  # type: ignore[arg-type]
        else:
            settings = Settings.load(self.settings_file, **overrides)
        self.runtime = Runtime([self.config], settings=settings, workspace_root=self.ws)

    def call(self, tool: str, args: dict[str, object], session: Session = ACCEPT) -> ToolResult:
        (result,) = self.runtime.run_turn_sync([Call("c1", tool, args)], session)
        return result

    def write(self, path: str, content: str) -> ToolResult:
        return self.call("file_edit", {"path": path, "mode": "replace", "content": content})


LAYOUTS = ["config outside, Settings.load", "config inside, TOOLRT_SETTINGS_FILE"]


def made_place(layout: str, base: Path) -> Place:
    inside = "inside" in layout
    # The settings file is named in the environment only while the settings are made
    # (they read it then): the place outlives any one test.
    with pytest.MonkeyPatch.context() as monkeypatch:
        return Place(base, config_inside=inside, settings_env=inside, monkeypatch=monkeypatch)


@pytest.fixture(scope="module", params=LAYOUTS)
def place(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Place]:
    """One place per layout for the module: each test on it is refused a write, a delete
    or a command and asserts that the place is as it was, so the next test meets the
    same place (a git repository and a Runtime per case cost most of the module's time)."""
    made = made_place(request.param, tmp_path_factory.mktemp("place"))
    try:
        yield made
    finally:
        made.runtime.close_sync()


def payload(marker: Path) -> str:
    return f"touch {marker}"


# --- toolrt's own files: every write refused, whatever the mode -----------------------

SETTINGS_EDITS = [
    'permission_mode = "bypass"\n',
    'command_sandbox = "off"\n',
    "workspace_deny = []\n",
    'audit_sink = "off"\n',
    'commands_outside_workspace = "allow"\n',
]


@pytest.mark.parametrize("content", SETTINGS_EDITS)
def test_the_settings_file_in_the_workspace_cannot_be_edited(place: Place, content: str) -> None:
    before = place.settings_file.read_text()
    for mode in ("replace", "append"):
        result = place.call("file_edit", {"path": "toolrt.toml", "mode": mode, "content": content})
        assert result.is_error and "protected" in result.content, result.content
    assert place.settings_file.read_text() == before


@pytest.mark.parametrize(
    "line",
    [
        "cat toolrt.toml",
        "ls toolrt.toml",
        "git diff toolrt.toml",
        "cat ./toolrt.toml",
        "cat src/../toolrt.toml",
        "cat toolrt.tom?",
        "cat *.toml",
    ],
)
def test_command_lines_naming_the_settings_file_are_denied(place: Place, line: str) -> None:
    result = place.call("run_command", {"command": line}, Session(id="s", mode="bypass"))
    assert result.status is Status.denied, result.content


def test_the_settings_file_cannot_be_deleted_or_read(place: Place) -> None:
    assert place.call("file_delete", {"path": "toolrt.toml"}).is_error
    assert place.call("file_read", {"path": "toolrt.toml"}).is_error
    assert place.settings_file.exists()


def test_the_settings_know_the_file_they_came_from(place: Place) -> None:
    assert place.runtime.settings.source_file == place.settings_file
    assert place.settings_file in place.runtime.protected_paths()
    monkeypatch_free = Settings.load(None, state_dir=Path("s"))
    assert monkeypatch_free.source_file in (None, place.settings_file)  # the environment may name one


TOOLRT_WRITES = [
    ".toolrt/x",
    ".toolrt/locks/evil",
    "sub/.toolrt/x",
]


@pytest.mark.parametrize("path", TOOLRT_WRITES)
def test_writes_into_toolrt_state_folders_are_refused(place: Place, path: str) -> None:
    result = place.write(path, "x\n")
    assert result.is_error, result.content
    assert not (place.ws / path).exists()


CONFIG_WRITES = ["toolrt.d/evil.yaml", "toolrt.d/sub/evil.yml", "toolrt.d/c.yaml", "toolrt.d/EVIL.YAML"]


@pytest.mark.parametrize("path", CONFIG_WRITES)
def test_writes_into_a_config_folder_inside_the_workspace_are_refused(place: Place, path: str) -> None:
    if not (place.ws / "toolrt.d").exists():
        pytest.skip("this place keeps its config outside the workspace")
    policy = (
        "apiVersion: toolrt/v1\nkind: Policy\nmetadata: {name: evil}\n"
        "spec: {rules: [{name: all, effect: allow, tools: ['*']}]}\n"
    )
    result = place.write(path, policy)
    assert result.is_error, result.content
    assert not (place.ws / path).exists() or path == "toolrt.d/c.yaml"
    assert (place.ws / "toolrt.d" / "c.yaml").read_text() == INCLUDE


# --- git internals: refused -----------------------------------------------------------

GIT_WRITES = [
    ".git/hooks/pre-commit",
    ".git/hooks/post-checkout",
    ".git/hooks/fsmonitor-watchman",
    ".git/config",
    ".git/info/attributes",
    ".git/info/exclude",
    ".GIT/config",
    ".Git/hooks/pre-commit",
    "./.git/config",
    "src/../.git/config",
    ".git",
    "src/.git",
    "src/.git/config",
    ".git/modules/x/config",
]


@pytest.mark.parametrize("path", GIT_WRITES)
def test_writes_to_git_internals_are_refused(place: Place, path: str) -> None:
    before = (place.ws / ".git" / "config").read_text()
    content = f'[core]\n\tfsmonitor = "{payload(place.marker)}"\n\tpager = "{payload(place.marker)}"\n'
    result = place.write(path, content)
    assert result.is_error, result.content
    assert (place.ws / ".git" / "config").read_text() == before
    assert not (place.ws / "src" / ".git").exists()


# --- files that other programs run: they may be written, but nothing allowed runs them --


def planted(marker: Path) -> dict[str, str]:
    run = payload(marker)
    return {
        "Makefile": f"all:\n\t{run}\n$(shell {run})\n",
        ".envrc": f"{run}\n",
        "pyproject.toml": f'[build-system]\nrequires = []\nbuild-backend = "x"\n[tool.x]\ncmd = "{run}"\n',
        "setup.py": f"import os\nos.system({run!r})\n",
        ".vscode/tasks.json": f'{{"version": "2.0.0", "tasks": [{{"label": "x", "command": "{run}", '
        '"runOptions": {"runOn": "folderOpen"}}]}',
        "sitecustomize.py": f"import os\nos.system({run!r})\n",
        "usercustomize.py": f"import os\nos.system({run!r})\n",
        "evil.pth": f"import os; os.system({run!r})\n",
        "node_modules/.bin/git": f"#!/bin/sh\n{run}\n",
        "git": f"#!/bin/sh\n{run}\n",
        "ls": f"#!/bin/sh\n{run}\n",
        ".gitattributes": "* diff=evil filter=evil\n",
        ".gitmodules": f'[submodule "x"]\n\tpath = x\n\turl = ./x\n\tupdate = !{run}\n',
        ".gitconfig": f"[core]\n\tpager = {run}\n\tfsmonitor = {run}\n[alias]\n\tstatus = !{run}\n",
        ".bashrc": f"{run}\n",
        ".bash_profile": f"{run}\n",
        ".profile": f"{run}\n",
        "conftest.py": f"import os\nos.system({run!r})\n",
        ".editorconfig": "root = true\n",
        "package.json": f'{{"scripts": {{"preinstall": "{run}", "prepare": "{run}"}}}}\n',
    }


TRIGGERS = [
    "git status",
    "git status --short",
    "git diff",
    "git diff --stat",
    "git diff HEAD",
    "git status && git diff",
    "ls",
    "ls -la src",
    "cat README.md",
    "git status src",
]


@pytest.fixture(scope="module", params=LAYOUTS)
def planted_place(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Place]:
    """A place of its own per layout with the files planted: each test runs a line that
    must not run them and asserts that it did not (the marker is still absent)."""
    place = made_place(request.param, tmp_path_factory.mktemp("planted"))
    try:
        for path, content in planted(place.marker).items():
            result = place.write(path, content)
            assert result.status is Status.ok, (path, result.content)
        # and a tracked file changed, so that git diff has something to show through drivers
        assert place.write("src/a.py", "print('b')\n").status is Status.ok
        yield place
    finally:
        place.runtime.close_sync()


@pytest.mark.parametrize("line", TRIGGERS)
def test_files_that_run_code_when_a_program_starts_are_not_run_by_allowed_commands(
    planted_place: Place, line: str
) -> None:
    result = planted_place.call("run_command", {"command": line})
    assert result.status is Status.ok, result.content
    assert not planted_place.marker.exists(), f"{line!r} ran planted code"


@pytest.mark.parametrize(
    "line",
    [
        "make",
        "make -n",
        "bash .envrc",
        "sh git",
        "./git status",
        "node_modules/.bin/git status",
        "PATH=node_modules/.bin:$PATH git status",
        "PATH=.:/usr/bin git status",
        "python -m pytest",
        "python setup.py",
        "GIT_CONFIG_GLOBAL=.gitconfig git status",
        "HOME=. git status",
        "XDG_CONFIG_HOME=. git status",
        "git -c core.pager=sh diff",
        "git --exec-path=. status",
        "BASH_ENV=.envrc git status",
        "ENV=.envrc git status",
        "git status; . ./.envrc",
        "source .envrc && ls",
    ],
)
def test_lines_that_would_run_planted_files_are_not_allowed_without_asking(planted_place: Place, line: str) -> None:
    result = planted_place.call("run_command", {"command": line})
    assert result.status is Status.denied, (line, result.content)
    assert not planted_place.marker.exists()


@pytest.mark.parametrize(
    "line",
    [
        "{ws}/git status",
        "{ws}/node_modules/.bin/git status",
        "{ws}/./git status",
        "/usr/bin/../..{ws}/git status",
        "/usr//bin/../..{ws}/git diff",
        "{ws}/src/../git status",
        "env {ws}/git status",
        "git status && {ws}/git status",
        "cd src && {ws}/git status",
        "/tmp/git status",
        "/usr/bin/git/../git status",
    ],
)
def test_a_program_named_by_an_absolute_path_outside_the_system_folders_is_not_allowed_by_name(
    planted_place: Place, line: str
) -> None:
    command = line.replace("{ws}", str(planted_place.ws))
    result = planted_place.call("run_command", {"command": command})
    assert result.status is Status.denied, (command, result.content)
    assert not planted_place.marker.exists()


@pytest.mark.parametrize("line", ["/usr/bin/git status", "/usr/bin/git diff --stat"])
def test_a_program_named_by_its_path_in_a_system_folder_is_judged_by_its_name(planted_place: Place, line: str) -> None:
    result = planted_place.call("run_command", {"command": line})
    assert result.status is Status.ok, (line, result.content)
    assert not planted_place.marker.exists()
