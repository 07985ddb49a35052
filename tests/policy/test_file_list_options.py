"""Options that make a program open the files named inside another file.

``sort --files0-from=list``, ``tar -cf - -T list``, ``wc --files0-from=list``, ``rsync
--files-from=list``, ``git diff --pathspec-from-file=list``: the line names only ``list``,
and the program then reads whatever ``list`` names, ``.env`` included, which no rule ever
sees. Such an option is a run-time word: no allow rule covers it, so the line asks (and
is denied in ``plan``), whatever wildcard pattern allows the program. Each hostile line
here was also run in bash: with ``list`` holding ``.env``, it prints the secret.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from command_support import READ_ONLY, WIDE, Place, build_snapshot, judge, make_place

from runtime.snapshot import Snapshot

RULES = (*WIDE, "du *", "rsync *", "bsdtar *", "git add *", "nice *", "timeout *", "command *", "stdbuf *")

LIST_LINES = [
    "sort --files0-from=list",
    "sort --files0-from list",
    "sort --files0 list",
    "sort --files0-fr=list",
    "sort -u --files0-from=list",
    "sort --files0-from=-",
    "sort --files0-from=list -o /dev/stdout",
    "wc --files0-from=list",
    "wc -c --files0-from list",
    "du -a --files0-from=list",
    "find -files0-from list",
    "find -files0-from list -print",
    "tar -cf - -T list",
    "tar -c -f - -T list",
    "tar -cTlist",
    "tar cfT - list",
    "tar -cf - --files-from=list",
    "tar -cf - --files-from list",
    "tar -cf - --files-fr=list",
    "tar --create --file=- --files-from=list",
    "tar -cvf /dev/stdout -T list",
    "rsync --files-from=list . /dev/stdout",
    "rsync -a --files-from list . sub",
    "git diff --pathspec-from-file=list",
    "git diff --pathspec-from-file list",
    "git diff --no-index --pathspec-from-file=list",
    "git add --pathspec-from-file=list",
    "git diff HEAD --pathspec-from-fi=list",
    "env sort --files0-from=list",
    "env LC_ALL=C sort --files0-from=list",
    "timeout 5 sort --files0-from=list",
    "nice -n 5 tar -cf - -T list",
    "command sort --files0-from=list",
    "ls; sort --files0-from=list",
    "cat a.txt | sort --files0-from=list",
    "sort --files0-from=list | head",
    "(sort --files0-from=list)",
    "echo $(sort --files0-from=list)",
    "sort --files0-from=list > /dev/null",
    "sort --files0-from=src/a.py",
]

#: The same programs without a list option, which keep their decision.
PLAIN_LINES = [
    "sort a.txt",
    "sort -u names.txt",
    "wc -l a.txt",
    "tar tf a.tar",
    "tar -tvf a.tar",
    "git diff --stat",
    "du -sh src",
    "find src -name '*.py'",
]


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Place:
    made = make_place(tmp_path_factory.mktemp("lists"))
    (made.root / "list").write_text(".env\0")
    return made


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Snapshot:
    return build_snapshot(tmp_path_factory.mktemp("lists-snapshot") / "c", RULES)


@pytest.mark.parametrize("line", LIST_LINES)
def test_a_file_list_option_is_never_allowed_by_a_wildcard_rule(snapshot: Snapshot, place: Place, line: str) -> None:
    decision = judge(snapshot, line, where=place.where())
    assert decision.effect in ("ask", "deny"), (line, decision.reason)


@pytest.mark.parametrize("line", LIST_LINES)
def test_a_file_list_option_is_denied_in_plan_mode(snapshot: Snapshot, place: Place, line: str) -> None:
    decision = judge(snapshot, line, mode="plan", where=place.where())
    assert decision.effect == "deny", (line, decision.reason)


@pytest.mark.parametrize("line", ["sort --files0-from=list", "tar -cf - -T list", "git diff --pathspec-from-file=list"])
def test_the_reason_names_the_file_list_option(snapshot: Snapshot, place: Place, line: str) -> None:
    decision = judge(snapshot, line, where=place.where())
    assert "named inside a file" in decision.reason or "only known when the line runs" in decision.reason, decision


@pytest.mark.parametrize("line", PLAIN_LINES)
def test_the_same_programs_without_a_list_option_stay_allowed(snapshot: Snapshot, place: Place, line: str) -> None:
    assert judge(snapshot, line, where=place.where()).effect == "allow", line


def test_the_read_only_rule_of_the_readme_does_not_allow_sort_reading_env_through_a_list(
    tmp_path: Path, place: Place
) -> None:
    snapshot = build_snapshot(tmp_path / "ro", READ_ONLY)
    assert judge(snapshot, "sort --files0-from=list", where=place.where()).effect == "ask"
    # What the line would do if it ran: the secret is printed.
    done = subprocess.run(
        ["sort", "--files0-from=list"], cwd=place.root, capture_output=True, text=True, check=False, timeout=30
    )
    assert "API_KEY=secret" in done.stdout
