"""Ordinary command lines an agent runs in a repository are allowed by a rule for their
programs: the checks for run-time words, globs, write and code options and paths
outside the workspace must not cost the everyday lines.

Each line is judged for `run_command` with the shipped `workspace-tools` and
`permissions-default` packs and one allow rule listing the programs, in a real
workspace (``command_support.make_place``) and with no workspace at all. A line with a
glob word is allowed only where the workspace is known (its files are listed then);
without one it asks, naming the glob.
"""

from __future__ import annotations

import pytest
from command_support import Place, build_snapshot, judge, make_place

from runtime.snapshot import Snapshot

RULES = (
    "ls *",
    "cat *",
    "git status *",
    "git diff *",
    "git log *",
    "grep *",
    "head *",
    "tail *",
    "wc *",
    "sort *",
    "uniq *",
    "find *",
    "sed *",
    "awk *",
    "tar *",
    "echo *",
    "pwd",
    "which *",
    "tree *",
    "du *",
    "file *",
    "stat *",
    "diff *",
)


def line(text: str) -> pytest.ParameterSet:
    """An ordinary literal line: allowed with or without a known workspace."""
    return pytest.param(text, False, id=text)


def glob(text: str) -> pytest.ParameterSet:
    """An ordinary line with a glob word: allowed once the workspace is known."""
    return pytest.param(text, True, id=text)


ORDINARY = [
    line("ls"),
    line("ls src"),
    line("ls -la"),
    line("ls -l"),
    line("ls -a"),
    line("ls -lh src"),
    line("ls -1 src"),
    line("ls -R docs"),
    line("ls -la src docs"),
    line("ls src 2>/dev/null"),
    line("ls -t"),
    line("ls -S src"),
    glob("ls *.md"),
    glob("ls src/*.py"),
    line("pwd"),
    line("cat README.md"),
    line("cat src/app.py"),
    line("cat -n src/app.py"),
    line("cat README.md notes.md"),
    line("cat a.txt | sort | uniq -c"),
    line("cat a.txt | sort | uniq -c | sort -rn"),
    line("cat data.txt | awk '{print $1}'"),
    glob("cat src/*.py"),
    line("git status"),
    line("git status --short"),
    line("git status -s"),
    line("git status --porcelain"),
    line("git status -sb"),
    line("git status src"),
    line("git diff"),
    line("git diff HEAD"),
    line("git diff HEAD~1"),
    line("git diff --stat"),
    line("git diff --cached"),
    line("git diff --staged"),
    line("git diff --name-only"),
    line("git diff --name-status HEAD~3"),
    line("git diff main...HEAD"),
    line("git diff HEAD -- src/app.py"),
    line("git diff --word-diff"),
    line("git diff -U0"),
    line("git diff --color=never"),
    line("git diff --no-color"),
    line("git diff --check"),
    line("git diff --stat HEAD~1 HEAD"),
    line("git log"),
    line("git log --oneline"),
    line("git log --oneline -5"),
    line("git log -n 10 --oneline"),
    line("git log --oneline --graph --all"),
    line("git log -p -1"),
    line("git log --stat -3"),
    line("git log --format='%h %s' -10"),
    line("git log --author=alice --oneline"),
    line("git log --since=2.weeks --oneline"),
    line("git log -- src/app.py"),
    line("git log --oneline | head -5"),
    line("git log --oneline | wc -l"),
    line("grep -rn TODO src"),
    line("grep -n foo src/app.py"),
    line('grep -r "def main" src'),
    line("grep -rn TODO . --exclude-dir .toolrt --exclude-dir toolrt.d --exclude='.*'"),  # .env is at the root
    line("grep -i readme README.md"),
    line("grep -c print src/a.py"),
    glob("grep -l print src/*.py"),
    line("grep -rl TODO src docs"),
    line("grep -E 'foo|bar' src/app.py"),
    line("grep -v '^#' src/app.py"),
    line("grep -rn --include='*.py' --exclude-dir=.toolrt --exclude-dir toolrt.d TODO ."),
    line("grep -rn TODO src | head -20"),
    line("grep -w main src/app.py"),
    line("grep -A2 -B2 main src/app.py"),
    line("grep -o 'print' src/a.py"),
    line("grep -q main src/app.py && echo found"),
    line("head src/app.py"),
    line("head -20 src/app.py"),
    line("head -n 5 README.md"),
    line("head -c 100 README.md"),
    line("tail src/app.py"),
    line("tail -n 20 src/app.py"),
    line("tail -5 notes.md"),
    line("wc -l src/app.py"),
    glob("wc -l src/*.py"),
    line("wc -c README.md"),
    line("wc -w notes.md"),
    line("find src -name '*.py' | wc -l"),
    line("sort names.txt"),
    line("sort -u names.txt"),
    line("sort -n data.txt"),
    line("sort -k2 -n data.txt"),
    line("sort -r names.txt"),
    line("sort -t' ' -k3 -n data.txt"),
    line("uniq a.txt"),
    line("sort a.txt | uniq"),
    line("sort a.txt | uniq -d"),
    line("find src -name '*.py'"),
    line("find . -type f -name '*.md'"),
    line("find . -maxdepth 2 -type d"),
    line("find src -type f"),
    line("find . -name Makefile"),
    line("find src -newer README.md"),
    line("find . -name '*.py' -not -path './.venv/*'"),
    line("find docs -type f | sort"),
    line("find src -size +1k"),
    line("sed -n 1,20p src/app.py"),
    line("sed -n '5,10p' src/app.py"),
    line("sed 's/foo/bar/' src/app.py"),
    line("sed -n '/def/p' src/app.py"),
    line("sed 's/a/b/g' a.txt | head"),
    line("sed -e 's/a/b/' a.txt"),
    line("sed '1d' data.txt"),
    line("sed -n '$p' names.txt"),
    line("awk '{print $1}' data.txt"),
    line("awk '$3 > 100' data.txt"),
    line("awk -F' ' '{print $2}' data.txt"),
    line("awk 'NR==1' data.txt"),
    line("awk '{s+=$2} END {print s}' data.txt"),
    line("awk 'length > 3' names.txt"),
    line("awk '{print NF}' data.txt"),
    line("awk -v n=2 '{print $n}' data.txt"),
    line("tar -tf a.tar"),
    line("tar -tvf a.tar"),
    line("tar tf a.tar"),
    line("tar --list -f a.tar"),
    line("echo hello"),
    line('echo "done"'),
    line("which python"),
    line("which git"),
    line("tree src"),
    line("tree -L 2"),
    line("du -sh src"),
    line("du -sh ."),
    line("du -h --max-depth=1"),
    line("file src/app.py"),
    line("file README.md"),
    line("stat src/app.py"),
    line("stat -c %s README.md"),
    line("diff src/a.py src/b.py"),
    line("diff -u src/a.py src/b.py"),
    line("diff -r src docs"),
    line("git status && git diff --stat"),
    line("git diff | head -50"),
    line("git log --oneline -3 && git status --short"),
    line("ls src && cat README.md"),
    line("ls src; echo ---; ls docs"),
    line("ls -la | grep md"),
    line("ls src | wc -l"),
    line("cat README.md | head -5"),
    line("cat notes.md | grep TODO"),
    line("grep -rn TODO src | sort | uniq"),
    glob("wc -l src/*.py | sort -n"),
    line("ls src 2>&1 | head"),
    line("git diff 2>/dev/null | head"),
    line("head -3 src/a.py src/b.py"),
    line("tail -n +2 data.txt | sort"),
    line('echo "x" | grep x'),
]

WITHOUT_GLOBS = [case for case in ORDINARY if not case.values[1]]
WITH_GLOBS = [case for case in ORDINARY if case.values[1]]


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Place:
    return make_place(tmp_path_factory.mktemp("ordinary"))


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Snapshot:
    return build_snapshot(tmp_path_factory.mktemp("ordinary-config"), RULES)


def test_the_table_is_large_enough() -> None:
    assert len(ORDINARY) >= 120
    assert len({case.values[0] for case in ORDINARY}) == len(ORDINARY)


@pytest.mark.parametrize(("text", "has_glob"), ORDINARY)
def test_an_ordinary_line_is_allowed_in_a_known_workspace(
    snapshot: Snapshot,
    place: Place,
    text: str,
    has_glob: bool,
) -> None:
    decision = judge(snapshot, text, where=place.where())
    assert decision.effect == "allow", decision.reason
    assert decision.rule == "shell/read-only-commands"


@pytest.mark.parametrize(("text", "has_glob"), ORDINARY)
def test_an_ordinary_line_is_allowed_when_commands_outside_the_workspace_are_denied(
    snapshot: Snapshot,
    place: Place,
    text: str,
    has_glob: bool,
) -> None:
    assert judge(snapshot, text, where=place.where("deny")).effect == "allow"


@pytest.mark.parametrize(("text", "has_glob"), WITHOUT_GLOBS)
def test_an_ordinary_line_without_globs_is_allowed_without_a_workspace(
    snapshot: Snapshot,
    text: str,
    has_glob: bool,
) -> None:
    decision = judge(snapshot, text)
    assert decision.effect == "allow", decision.reason


@pytest.mark.parametrize(("text", "has_glob"), WITH_GLOBS)
def test_an_ordinary_line_with_a_glob_asks_without_a_workspace(snapshot: Snapshot, text: str, has_glob: bool) -> None:
    decision = judge(snapshot, text)
    assert decision.effect == "ask"
    assert "could not be expanded against the workspace" in (decision.reason or ""), decision.reason


@pytest.mark.parametrize(
    ("cwd", "text"),
    [
        pytest.param("src", "ls", id="ls in a sub-folder"),
        pytest.param("src", "cat app.py", id="cat in a sub-folder"),
        pytest.param("src", "grep -n main app.py", id="grep in a sub-folder"),
        pytest.param("src", "ls ..", id="the workspace root seen from a sub-folder"),
        pytest.param("src", "cat ../README.md", id="a file at the root seen from a sub-folder"),
        pytest.param("src", "wc -l *.py", id="a glob in a sub-folder"),
        pytest.param("docs", "find . -name '*.md'", id="find in a sub-folder"),
        pytest.param("docs", "diff guide.md ../README.md", id="diff across folders inside the workspace"),
    ],
)
def test_an_ordinary_line_in_a_sub_folder_is_allowed(snapshot: Snapshot, place: Place, cwd: str, text: str) -> None:
    decision = judge(snapshot, text, where=place.where(), cwd=cwd)
    assert decision.effect == "allow", decision.reason
