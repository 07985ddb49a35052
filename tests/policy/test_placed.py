"""Placing a command line in its workspace: run-time words, globs, paths, toolrt's own files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runtime.policy.bashglob import MAX_GLOB_MATCHES
from runtime.policy.placed import LITERAL, UNKNOWN, Where, place
from runtime.policy.shell import split_command_line


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    for name in (".env", "README.md", "src/a.py", "src/b.py"):
        (root / name).write_text("x")
    (root / "toolrt.d").mkdir()
    (root / "toolrt.d" / "policy.yaml").write_text("x")
    (tmp_path / "outside").mkdir()
    (root / "escape").symlink_to(tmp_path / "outside")
    return root


def placed(line: str, where: Where, cwd: str = ".") -> object:
    return place(split_command_line(line), where, cwd, line)


def own(line: str, where: Where, cwd: str = ".") -> list[tuple[tuple[str, ...], dict[int, int]]]:
    result = place(split_command_line(line), where, cwd, line)
    return [(c.argv, dict(c.guards)) for c in result.commands if c.own]


def test_a_glob_is_replaced_by_its_matches_for_allow_rules(workspace: Path) -> None:
    assert own("cat src/*.py", Where.of(workspace)) == [(("cat", "src/a.py", "src/b.py"), {})]


def test_a_glob_skips_hidden_names_unless_the_line_can_turn_dotglob_on(workspace: Path) -> None:
    where = Where.of(workspace)
    assert own("cat *env", where) == [(("cat", "*env"), {})]  # no match: bash passes the word as it is
    for line in ("GLOBIGNORE=x; cat *env", "shopt -s dotglob; cat *env", "set -o posix; cat *env"):
        assert own(line, where)[-1][0] == ("cat", ".env"), line


def test_deny_rules_see_both_the_glob_and_its_matches(workspace: Path) -> None:
    argvs = place(
        split_command_line("GLOBIGNORE=x; cat *env"), Where.of(workspace), ".", "GLOBIGNORE=x; cat *env"
    ).argvs
    assert ("cat", "*env") in argvs and ("cat", ".env") in argvs


def test_a_glob_without_a_workspace_is_a_run_time_word() -> None:
    assert own("cat src/*.py", Where()) == [(("cat", "src/*.py"), {1: UNKNOWN})]


def test_a_glob_with_too_many_matches_is_a_run_time_word(tmp_path: Path) -> None:
    for k in range(MAX_GLOB_MATCHES + 1):
        (tmp_path / f"f{k}").write_text("x")
    assert own("cat f*", Where.of(tmp_path)) == [(("cat", "f*"), {1: UNKNOWN})]


@pytest.mark.parametrize(
    "line",
    [
        "cat $f",
        "cat ${IFS}.env",
        "cat $(echo .env)",
        "cat `echo x`",
        "cat ~/x",
        "cat {a,$b}",
        "cat {a,*}",
        "cat $((1+2))",
        "cat <(ls)",
        'cat "$HOME"/x',
    ],
)
def test_run_time_words_are_unknown(line: str, workspace: Path) -> None:
    commands = own(line, Where.of(workspace))
    assert any(UNKNOWN in guards.values() for _, guards in commands), commands


def test_a_brace_word_of_plain_words_is_spelled_out_for_allow_rules(workspace: Path) -> None:
    assert own("cat {a,b}.txt", Where.of(workspace)) == [(("cat", "a.txt", "b.txt"), {})]


@pytest.mark.parametrize(
    "line",
    [
        "cat /etc/passwd",
        "cat ../x",
        "cat src/../../x",
        "cat /proc/cpuinfo",
        "ls /sys",
        "cat /dev/sda",
        "cat escape/x",
        "ls escape",
        "cd ..",
        "cat x > /tmp/o",
        "git diff --output=/tmp/x",
    ],
)
def test_paths_outside_the_workspace_need_a_literal_word(line: str, workspace: Path) -> None:
    result = place(split_command_line(line), Where.of(workspace), ".", line)
    assert result.outside, line
    assert any(LITERAL in c.guards.values() for c in result.commands if c.own), result


@pytest.mark.parametrize("line", ["ls src 2>/dev/null", "cat src/../README.md", "ls ./src", "cat README.md"])
def test_paths_inside_the_workspace_are_plain(line: str, workspace: Path) -> None:
    result = place(split_command_line(line), Where.of(workspace), ".", line)
    assert not result.outside and result.protected is None
    assert all(not c.guards for c in result.commands)


def test_the_cwd_argument_places_relative_paths(workspace: Path) -> None:
    assert place(split_command_line("cat ../README.md"), Where.of(workspace), "src").outside == ()
    assert place(split_command_line("cat ../../x"), Where.of(workspace), "src").outside


def test_outside_allow_judges_outside_paths_like_any_word(workspace: Path) -> None:
    assert own("cat /etc/hostname", Where.of(workspace, outside="allow")) == [(("cat", "/etc/hostname"), {})]


@pytest.mark.parametrize(
    "line",
    [
        "cat toolrt.d/policy.yaml",
        "cat ./toolrt.d//policy.yaml",
        "cat src/../toolrt.d/policy.yaml",
        "echo x > toolrt.d/new.yaml",
        "sed -i s/deny/allow/ toolrt.d/policy.yaml",
        "cp x toolrt.d/",
        "rm -rf toolrt.d",
        "mv toolrt.d x",
        "cat toolrt.d/*",
        "rm -rf .",
        "git diff --no-index --output=toolrt.d/policy.yaml a a",
        "ls toolrt.d",
        "cat ../ws/toolrt.d/policy.yaml",
        "ln -s . up",
        "chmod -R 000 .",
        "git clean -fdx",
        "find . -delete",
        "cat {toolrt.d,x}/policy.yaml",
        "cat /proc/self/environ",
        "cat /proc/$PPID/environ",
        "ls /proc/1/cwd/",
        "cat /proc/self/root/etc/hostname",
    ],
)
def test_toolrts_own_files_are_protected(line: str, workspace: Path) -> None:
    # (process state under /proc is toolrt's own too: through $PPID it is toolrt's environment)
    where = Where.of(workspace, [workspace / "toolrt.d"])
    assert place(split_command_line(line), where, ".", line).protected is not None, line


def test_an_absolute_protected_path_outside_the_workspace_is_protected(workspace: Path, tmp_path: Path) -> None:
    audit = tmp_path / "state" / "audit.sqlite3"
    audit.parent.mkdir()
    audit.write_text("x")
    where = Where.of(workspace, [audit])
    assert place(split_command_line(f"cat {audit}"), where, ".").protected is not None
    assert place(split_command_line(f"cat {audit.parent}/*"), where, ".").protected is not None


def test_a_config_folder_holding_the_workspace_protects_only_its_yaml(workspace: Path) -> None:
    where = Where.of(workspace, [workspace])
    assert place(split_command_line("cat README.md"), where, ".").protected is None
    assert place(split_command_line("echo x > evil.yaml"), where, ".").protected is not None
    assert where.deny_globs() == ("**/*.yaml", "**/*.yml")


def test_deny_globs_cover_protected_folders_inside_the_workspace(workspace: Path, tmp_path: Path) -> None:
    where = Where.of(workspace, [workspace / "toolrt.d", tmp_path / "elsewhere"])
    assert where.deny_globs() == ("toolrt.d/**",)


def test_a_symlink_into_protected_files_is_protected(workspace: Path) -> None:
    os.symlink(workspace / "toolrt.d", workspace / "innocent")
    where = Where.of(workspace, [workspace / "toolrt.d"])
    assert place(split_command_line("cat innocent/policy.yaml"), where, ".").protected is not None


@pytest.mark.parametrize(
    "line",
    [
        "cd / && cat etc/passwd",
        "(cd /; cat etc/passwd)",
        "bash -c 'cd / && cat etc/passwd'",
        "cd && cat .bashrc",
        "cd - && cat x",
        "CDPATH=/; cd etc && cat passwd",
        "pushd /etc && cat passwd",
    ],
)
def test_paths_after_cd_are_placed_from_where_the_line_went(line: str, workspace: Path) -> None:
    result = place(split_command_line(line), Where.of(workspace), ".", line)
    assert result.outside, line


@pytest.mark.parametrize("line", ["tar xf a.tar", "cp -r src/. .", "unzip -o a.zip"])
def test_writing_into_a_folder_that_holds_toolrts_files_asks(line: str, workspace: Path) -> None:
    where = Where.of(workspace, [workspace / "toolrt.d"])
    result = place(split_command_line(line), where, ".", line)
    assert result.protected is None
    assert result.holding or any(UNKNOWN in c.guards.values() for c in result.commands), result


@pytest.mark.parametrize("line", ["ln -s src x; cat x/*", "cp -r . sub; cat sub/*", "python gen.py && cat out/*"])
def test_a_glob_after_a_command_that_may_make_files_is_a_run_time_word(line: str, workspace: Path) -> None:
    commands = place(split_command_line(line), Where.of(workspace), ".", line).commands
    assert UNKNOWN in commands[-1].guards.values(), commands


@pytest.mark.parametrize(
    "line", ["ls src && cat src/*.py", "git status && wc -l src/*.py", "shopt -s nullglob; cat src/*.py"]
)
def test_a_glob_after_commands_that_make_no_files_is_expanded(line: str, workspace: Path) -> None:
    commands = place(split_command_line(line), Where.of(workspace), ".", line).commands
    assert commands[-1].argv[-2:] == ("src/a.py", "src/b.py"), commands


@pytest.mark.parametrize("line", ["shopt -s dotglob; cat [[:punct:]]env", "cat []a]", "cat [[=e=]]nv"])
def test_a_bracket_expression_this_module_cannot_read_exactly_is_a_run_time_word(line: str, workspace: Path) -> None:
    commands = place(split_command_line(line), Where.of(workspace), ".", line).commands
    assert UNKNOWN in commands[-1].guards.values(), commands


def test_a_file_named_like_an_option_matched_by_a_glob_is_judged_as_that_option(workspace: Path) -> None:
    (workspace / "--output=.git").mkdir()
    line = "git diff *"
    commands = [c for c in place(split_command_line(line), Where.of(workspace), ".", line).commands if c.own]
    assert any(guard > 0 for guard in commands[0].guards.values()), commands


def test_a_remembered_line_is_judged_again_once_a_link_appears_on_its_path(workspace: Path) -> None:
    where = Where.of(workspace, [workspace / "toolrt.d"])
    line = "cat docs/policy.yaml"
    (workspace / "docs").mkdir()
    assert place(split_command_line(line), where, ".", line).protected is None
    assert place(split_command_line(line), where, ".", line).protected is None  # remembered
    (workspace / "docs").rmdir()
    (workspace / "docs").symlink_to(workspace / "toolrt.d")
    assert place(split_command_line(line), where, ".", line).protected is not None


def test_a_remembered_line_is_judged_again_once_a_missing_name_becomes_a_link(workspace: Path, tmp_path: Path) -> None:
    where = Where.of(workspace)
    line = "cat later/x"
    assert place(split_command_line(line), where, ".", line).outside == ()
    (workspace / "later").symlink_to(tmp_path / "outside")
    assert place(split_command_line(line), where, ".", line).outside == ("later/x",)
