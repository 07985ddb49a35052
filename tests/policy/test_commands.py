"""Compiled command patterns mean exactly what `command_matches` says."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.policy.commands import CommandPatterns, split_cached
from runtime.policy.shell import command_matches

WORDS = st.sampled_from(["git", "push", "*", "rm", "-rf", "/", "a*", "?b", "[ab]c", "x", "origin", "te*st", "[!a]"])
ITEMS = st.sampled_from(
    ["git", "push", "rm", "-rf", "/", "ab", "bb", "ac", "bc", "x", "origin", "test", "teXst", "", "a"]
)


@settings(max_examples=1500)
@given(st.lists(WORDS, max_size=4), st.lists(ITEMS, max_size=5))
def test_compiled_patterns_match_exactly_like_command_matches(p: list[str], argv: list[str]) -> None:
    pattern = " ".join(p)
    assert CommandPatterns([pattern]).matches(tuple(argv)) == command_matches(tuple(argv), pattern), (pattern, argv)


def test_a_blank_pattern_matches_nothing_and_the_index_falls_back_to_glob_first_words() -> None:
    patterns = CommandPatterns(["   ", "g?t status", "*sh -c *"])
    assert not CommandPatterns(["  "]).matches(("ls",))
    assert patterns.matches(("git", "status")) and patterns.matches(("bash", "-c", "x"))
    assert not patterns.matches(("git", "push"))


def test_split_lines_are_remembered_and_shared() -> None:
    assert split_cached("ls && rm x") is split_cached("ls && rm x")
