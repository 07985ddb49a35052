"""A command that reads every file below a folder reads the secret files in it too.

``grep -r KEY .`` prints ``.env`` though the line never names it; so do ``tar -cf - .``,
``cp -r``, ``diff -r``, ``rg --hidden``, ``git diff --no-index . empty``, and, in a
repository that tracks ``.env``, ``git diff``, ``git status -v`` and ``git grep``. The
deny rule that refuses ``cat .env`` refuses these lines too, from any folder they run
in; a recursive read that leaves the secrets out (a folder without them, grep's
``--exclude``/``--include``, a ``.env`` git ignores, rg without ``--hidden``) keeps its
decision. Workspaces here keep toolrt's own files outside them (the default layout), so
only the secrets decide.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from command_support import READ_ONLY, WIDE, Place, build_snapshot, judge, make_place

from runtime.policy.placed import Where
from runtime.snapshot import Snapshot

RULES = (*WIDE, "rg *", "diff *", "rsync *", "zip *", "ag *", "git grep *", "git status *")

SECRET_FILES = {
    ".env": "API_KEY=secret\n",
    "deploy/server.pem": "-----BEGIN PRIVATE KEY-----\n",
    "home/.ssh/config": "Host x\n",
    "infra/prod.tfstate": "{}\n",
    "cfg/.npmrc": "//registry/:_authToken=secret\n",
    "keys/id_ed25519": "key\n",
}


def _place(base: Path, secrets: dict[str, str], *, repo: str = "") -> tuple[Place, Where]:
    made = make_place(base)
    for name, text in secrets.items():
        path = made.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for folder in (".toolrt", "toolrt.d"):
        subprocess.run(["rm", "-rf", str(made.root / folder)], check=True)
    if repo:
        git = ["git", "-c", "user.email=a@b", "-c", "user.name=a"]
        subprocess.run(["git", "init", "-q", "."], cwd=made.root, check=True)
        subprocess.run(["sh", "-c", repo], cwd=made.root, check=True)
        subprocess.run([*git, "commit", "-qm", "x", "--allow-empty"], cwd=made.root, check=True)
        (made.root / "src" / "a.py").write_text("print('changed')\n")
    return made, Where.of(made.root, protected=(made.audit,), outside="ask")


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Snapshot:
    return build_snapshot(tmp_path_factory.mktemp("secret-reads") / "c", RULES)


@pytest.fixture(scope="module")
def secrets(tmp_path_factory: pytest.TempPathFactory) -> tuple[Place, Where]:
    return _place(tmp_path_factory.mktemp("secrets") / "p", SECRET_FILES)


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> tuple[Place, Where]:
    made, where = _place(tmp_path_factory.mktemp("clean") / "p", {})
    (made.root / ".env").unlink()
    return made, where


@pytest.fixture(scope="module")
def tracked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Place, Where]:
    """A repository that tracks .env (then changed) and a key."""
    made, where = _place(
        tmp_path_factory.mktemp("tracked") / "p", {"deploy/server.pem": "k\n"}, repo="git add -A .env src deploy"
    )
    (made.root / ".env").write_text("API_KEY=changed\n")
    return made, where


@pytest.fixture(scope="module")
def ignored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Place, Where]:
    """A repository whose .env and key are ignored, never tracked."""
    return _place(
        tmp_path_factory.mktemp("ignored") / "p",
        {"deploy/server.pem": "k\n"},
        repo="printf '.env\\n*.pem\\n' > .gitignore && git add .gitignore src",
    )


RECURSIVE_READS = [
    "grep -r KEY .",
    "grep -r KEY",
    "grep -R KEY .",
    "grep -rn KEY .",
    "grep -rh . .",
    "grep -rl . .",
    "grep --recursive KEY .",
    "grep --recur KEY .",
    "grep -d recurse KEY .",
    "grep --directories=recurse KEY .",
    "egrep -r KEY .",
    "grep -r KEY ./",
    "grep -r KEY src/..",
    "grep -r KEY sub/back_to_ws",
    "grep -r KEY deploy",
    "grep -r KEY home",
    "grep -r KEY cfg infra",
    "grep -r KEY src keys",
    "grep -r --include='*' KEY .",
    "grep -r --include=*.pem KEY .",
    "grep -r --exclude-dir=src KEY .",
    "grep -r --exclude='*.py' KEY .",
    "grep -ri key . | head",
    "ls && grep -r KEY .",
    "echo $(grep -r KEY .)",
    "rg --hidden KEY",
    "rg -. KEY",
    "rg -uu KEY",
    "rg KEY deploy",
    "rg KEY keys",
    "tar -cf - .",
    "tar -cf - deploy",
    "tar cf - home",
    "tar -czf - infra",
    "cp -r . /tmp/copy",
    "cp -r deploy /tmp/copy",
    "cp -a keys sub/copy",
    "diff -r . sub",
    "diff -r deploy src",
    "rsync -a . /tmp/copy",
    "zip -r - .",
    "git diff --no-index . sub",
    "git diff --no-index deploy src",
    "git diff --no-index -- keys src",
    "cd src && grep -r KEY ..",
    "cd deploy && grep -r KEY",
    "timeout 5 grep -r KEY .",
    "env grep -r KEY .",
]


@pytest.mark.parametrize("line", RECURSIVE_READS)
def test_a_recursive_read_of_a_folder_holding_secret_files_is_denied(
    snapshot: Snapshot, secrets: tuple[Place, Where], line: str
) -> None:
    decision = judge(snapshot, line, where=secrets[1])
    assert decision.effect == "deny", (line, decision.reason)
    assert "secret file" in decision.reason


@pytest.mark.parametrize("line", [line for line in RECURSIVE_READS[:12] if not line.startswith(("grep -R", "egrep"))])
def test_the_same_recursive_read_of_a_folder_without_secret_files_is_judged_as_usual(
    snapshot: Snapshot, clean: tuple[Place, Where], line: str
) -> None:
    assert judge(snapshot, line, where=clean[1]).effect == "allow", line


@pytest.mark.parametrize(
    "line",
    [
        "grep -r KEY src",
        "grep -rn TODO src docs",
        "grep -r --exclude='.*' --exclude-dir=deploy --exclude-dir=home --exclude-dir=cfg"
        " --exclude-dir=infra --exclude-dir=keys KEY .",
        "grep -r --include='*.py' KEY .",
        "rg KEY src",
        "tar -cf - src",
        "cp -r src sub/copy",
        "diff -r src docs",
        "grep KEY a.txt",
    ],
)
def test_a_recursive_read_that_leaves_the_secrets_out_stays_allowed(
    snapshot: Snapshot, secrets: tuple[Place, Where], line: str
) -> None:
    decision = judge(snapshot, line, where=secrets[1])
    assert decision.effect == "allow", (line, decision.reason)


TRACKED_READS = [
    "git diff",
    "git diff HEAD",
    "git diff --cached",
    "git diff --staged",
    "git diff -R HEAD",
    "git diff HEAD~0 --",
    "git diff 4b825dc642cb6eb9a060e54bf8d69288fbee4904 HEAD",
    "git diff -- ':/'",
    "git diff -- '*env'",
    "git diff -- ':(icase).ENV'",
    "git diff -- ':(top)'",
    "git diff -p --stat",
    "git diff --patch-with-stat",
    "git diff --color=always",
    "git diff -U100",
    "git -C src diff",
    "cd src && git diff",
    "git --no-pager diff",
    "git status -v",
    "git status -vv",
    "git status --verbose",
    "git status -sv",
    "git grep KEY",
    "git grep -n KEY",
    "git grep KEY -- .",
    "git grep -e KEY",
]


@pytest.mark.parametrize("line", TRACKED_READS)
def test_a_git_command_printing_a_tracked_secret_file_is_denied(
    snapshot: Snapshot, tracked: tuple[Place, Where], line: str
) -> None:
    decision = judge(snapshot, line, where=tracked[1])
    assert decision.effect == "deny", (line, decision.reason)


@pytest.mark.parametrize("line", TRACKED_READS)
def test_the_same_git_command_is_allowed_where_git_ignores_the_secret_files(
    snapshot: Snapshot, ignored: tuple[Place, Where], line: str
) -> None:
    decision = judge(snapshot, line, where=ignored[1])
    assert decision.effect == "allow", (line, decision.reason)


@pytest.mark.parametrize(
    "line",
    [
        "git diff -- src",
        "git diff HEAD -- src a.txt",
        "git diff --stat",
        "git diff --name-only",
        "git diff --name-status HEAD",
        "git status",
        "git status -s",
        "git grep KEY -- src",
    ],
)
def test_a_git_command_that_prints_no_tracked_secret_stays_allowed(
    snapshot: Snapshot, tracked: tuple[Place, Where], line: str
) -> None:
    decision = judge(snapshot, line, where=tracked[1])
    assert decision.effect == "allow", (line, decision.reason)


@pytest.mark.parametrize("line", ["git diff", "git status -vv", "git grep KEY", "grep -r KEY ."])
def test_each_denied_git_line_does_print_the_secret_when_run(tracked: tuple[Place, Where], line: str) -> None:
    done = subprocess.run(
        line, shell=True, cwd=tracked[0].root, capture_output=True, text=True, timeout=30, check=False
    )
    assert "API_KEY" in done.stdout


def test_the_readme_read_only_rule_does_not_let_git_diff_print_a_tracked_env(
    tmp_path: Path, tracked: tuple[Place, Where]
) -> None:
    snapshot = build_snapshot(tmp_path / "ro", READ_ONLY)
    assert judge(snapshot, "git diff", where=tracked[1]).effect == "deny"
    assert judge(snapshot, "git diff -- src", where=tracked[1]).effect == "allow"
