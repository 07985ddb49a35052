"""What a person approving a call reads (runtime.approval_text.describe): every
character of the arguments, visible; each command of a command line on its own line;
only an enormous value shortened, with a count and a warning."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from approval_cases import CASES, CONFIG, Hostile, check, unseen_characters

from runtime.approval_text import describe
from runtime.config.compile import load_snapshot
from runtime.records import Call, Decision, ValidatedCall
from runtime.snapshot import Snapshot


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Snapshot:
    config = tmp_path_factory.mktemp("approval-config")
    (config / "tools.yaml").write_text(CONFIG, encoding="utf-8")
    return load_snapshot([Path(config)])


def question(snapshot: Snapshot, tool: str, args: dict, **options: object) -> str:
    call = ValidatedCall(Call("c1", tool, args), snapshot.tools[tool], args)
    return describe(call, Decision("ask", reason="a person approves every call"), **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_the_hostile_part_of_the_arguments_is_visible(snapshot: Snapshot, case: Hostile) -> None:
    check(case, question(snapshot, case.tool, case.args))


def test_a_shortened_value_shows_its_beginning_and_end_and_counts_every_character_left_out(snapshot: Snapshot) -> None:
    value = "a" * 300_000 + "; rm -rf ~"
    text = question(snapshot, "note", {"content": value})
    assert "WARNING: `content` is 300,010 characters long; only its beginning and end are shown" in text.splitlines()[1]
    shown = re.search(r"content: (a*)⟨… ([\d,]+) characters not shown here …⟩(a*; rm -rf ~)$", text)
    assert shown is not None, text[:300]
    head, left_out, tail = shown.group(1), int(shown.group(2).replace(",", "")), shown.group(3)
    assert len(head) + left_out + len(tail) == len(value)
    assert len(head) <= 50_000 and len(tail) <= 50_000


def test_a_value_made_long_only_by_its_markers_is_shortened_too(snapshot: Snapshot) -> None:
    text = question(snapshot, "note", {"content": "\u200b\u200c" * 40_000})
    assert "WARNING: `content` is 80,000 characters long" in text
    assert len(text) < 120_000


def test_the_commands_of_a_line_are_all_shown_even_when_its_text_is_shortened(snapshot: Snapshot) -> None:
    line = "; ".join(f"echo {n}" for n in range(1999)) + "; rm -rf ~"
    text = question(snapshot, "shell", {"command": line}, limit=1_000)
    assert "WARNING: `command`" in text and "characters not shown here" in text
    assert "runs these 2000 commands, one per line" in text
    assert "   1. echo 0\n" in text and "1999. echo 1998\n" in text and "2000. rm -rf '~'" in text


def test_a_line_feed_in_a_command_word_is_marked_not_broken(snapshot: Snapshot) -> None:
    text = question(snapshot, "shell", {"command": "printf 'a\nb'; rm x"})
    assert "  1. printf 'a⟨LF⟩b'\n  2. rm x" in text


def test_each_kind_of_marked_character_is_named_once_in_the_legend(snapshot: Snapshot) -> None:
    text = question(snapshot, "note", {"a": "\x1b[2K\x1b[2K", "b": "x\u202ey\u202e"})
    legend = text[text.index("Marked characters") :]
    assert legend.count("⟨ESC⟩ escape") == 1 and legend.count("⟨U+202E⟩ RIGHT-TO-LEFT OVERRIDE") == 1


def test_the_legend_stops_naming_after_forty_kinds_and_says_how_many_more(snapshot: Snapshot) -> None:
    tags = "".join(chr(0xE0020 + n) for n in range(100))
    text = question(snapshot, "note", {"tags": tags})
    assert "and 60 more kinds of marked characters" in text
    assert unseen_characters(text) == []


def test_for_markdown_the_arguments_are_fenced_longer_than_any_backtick_run_in_them(snapshot: Snapshot) -> None:
    text = question(snapshot, "note", {"body": "```` **bold** <!-- hidden --> ````"}, markdown=True)
    assert "\n`````text\nArguments:\n" in text and text.endswith("\n`````")
    assert text.count("`````") == 2


def test_a_call_without_arguments_says_so(snapshot: Snapshot) -> None:
    assert "Arguments:\n  (none)" in question(snapshot, "note", {})


def test_nested_values_are_laid_out_one_per_line(snapshot: Snapshot) -> None:
    text = question(snapshot, "note", {"config": {"steps": [{"run": "make"}, "lint"], "empty": {}, "none": []}})
    assert "  config:\n    steps:\n      -\n          run: make\n      - lint\n    empty: {}\n    none: []" in text
