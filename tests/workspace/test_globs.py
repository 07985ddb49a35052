"""The one path-glob dialect (runtime.workspace.globs), pinned case by case.

Each row is (glob, path, matches). The same compiled glob serves the deny globs of
the workspace, the search tools' globs and session-grant patterns, so a row here is a
promise about all three.
"""

from __future__ import annotations

import time

import pytest

from runtime.workspace.errors import GlobError
from runtime.workspace.globs import GlobSet, compile_glob, components, expand_braces

CASES: list[tuple[str, str, bool]] = [
    # "*" and "?" stay inside one component
    ("*.py", "a.py", True),
    ("*.py", "src/a.py", False),
    ("*", "a/b", False),
    ("?.txt", "a.txt", True),
    ("?.txt", "ab.txt", False),
    ("a?b", "a/b", False),
    ("src/*", "src/a", True),
    ("src/*", "src/a/b", False),
    ("src/*", "src", False),
    # "*" matches dot files: a leading "." is not special
    ("*", ".env", True),
    ("*.env", ".env", True),
    ("src/*", "src/.hidden", True),
    # "**" is zero or more whole components
    ("**/.env", ".env", True),
    ("**/.env", "a/.env", True),
    ("**/.env", "a/b/c/.env", True),
    ("**/.env", "a/.env/x", False),
    ("**/.env", "x.env", False),
    ("**/.env", "a/x.env", False),
    (".env/**", ".env", True),
    (".env/**", ".env/x", True),
    (".env/**", ".env/x/y/z", True),
    (".env/**", ".envx", False),
    (".env/**", "a/.env/x", False),
    ("a/**/b", "a/b", True),
    ("a/**/b", "a/x/b", True),
    ("a/**/b", "a/x/y/z/b", True),
    ("a/**/b", "ab", False),
    ("a/**/b", "a/xb", False),
    ("a/**/b", "xa/b", False),
    ("a/**/b", "a/b/c", False),
    ("**", "anything/at/all", True),
    ("**", ".git/config", True),
    ("**/*.py", "a.py", True),
    ("**/*.py", "x/y/a.py", True),
    ("**/*.py", "x/y/a.pyc", False),
    ("a/**/**/b", "a/b", True),
    ("**/**", "a", True),
    ("**/.git/**", ".git", True),
    ("**/.git/**", "x/.git/hooks/pre-commit", True),
    ("**/.git/**", "x/.gitignore", False),
    # "**" inside a component is a plain "*" (as in git)
    ("a**b", "axyb", True),
    ("a**b", "ax/yb", False),
    ("src/**.py", "src/a.py", True),
    ("src/**.py", "src/a/b.py", False),
    # character classes
    ("[abc].txt", "b.txt", True),
    ("[abc].txt", "d.txt", False),
    ("[a-c]x", "bx", True),
    ("[!a-c]x", "dx", True),
    ("[!a-c]x", "ax", False),
    ("[^a-c]x", "dx", True),
    ("[]]x", "]x", True),
    ("[!]]x", "ax", True),
    ("[!]]x", "]x", False),
    ("[!x]", "/", False),
    ("a[!x]b", "a/b", False),
    ("[x", "[x", True),
    ("[x", "x", False),
    ("data/[!p]*.csv", "data/raw.csv", True),
    ("data/[!p]*.csv", "data/public.csv", False),
    # escapes
    ("a\\*b", "a*b", True),
    ("a\\*b", "axb", False),
    ("\\[x]", "[x]", True),
    ("a\\?", "a?", True),
    ("a\\?", "ab", False),
    # braces
    ("*.{py,md}", "a.md", True),
    ("*.{py,md}", "a.txt", False),
    ("{src,docs}/**", "docs/x/y", True),
    ("{src,docs}/**", "tests/x", False),
    ("src/{a/b,c}", "src/a/b", True),
    ("{a,{b,c}}.x", "c.x", True),
    ("{a}.x", "{a}.x", True),
    ("{}", "{}", True),
    ("a{b", "a{b", True),
    # regex metacharacters are literal
    ("a(b).txt", "a(b).txt", True),
    ("a(b).txt", "ab.txt", False),
    ("a+b", "a+b", True),
    ("a+b", "aab", False),
    ("x$", "x$", True),
    ("^x", "^x", True),
    ("a|b", "a|b", True),
    ("a|b", "a", False),
    ("a.b", "a.b", True),
    ("a.b", "axb", False),
    ("(?i)x", "(?i)x", True),
    ("(?i)x", "X", False),
    ("a{2}", "a{2}", True),
    ("a{2}", "aa", False),
    ("\\d", "d", True),
    ("\\d", "1", False),
    # trailing and leading "/", empty and "." components
    ("build/", "build", True),
    ("build/", "build/out/x.o", True),
    ("build/", "builder", False),
    ("/build", "build", True),
    ("/build", "x/build", False),
    ("a//b", "a/b", True),
    ("./a/./b", "a/b", True),
    # unicode and odd names
    ("ünïcode/*.py", "ünïcode/naïve.py", True),
    ("文件?.txt", "文件1.txt", True),
    ("*", "é", True),
    ("?", "é", True),
    ("*.txt", "line\nbreak.txt", True),
    ("my notes/*", "my notes/todo list.txt", True),
    ("*", "n" * 255, True),
    ("**/" + "n" * 255, "a/" * 100 + "n" * 255, True),
    ("*" * 300, "x" * 255, True),
]


@pytest.mark.parametrize(("pattern", "path", "expected"), CASES, ids=[f"{g!r}~{p[:40]!r}" for g, p, _ in CASES])
def test_a_glob_matches_exactly_the_paths_the_dialect_says(pattern: str, path: str, expected: bool) -> None:
    assert compile_glob(pattern).matches(path) is expected


ABSOLUTE: list[tuple[str, str, bool]] = [
    ("/etc/*", "/etc/passwd", True),
    ("/etc/*", "etc/passwd", False),
    ("etc/*", "/etc/passwd", False),
    ("**/passwd", "/etc/passwd", True),
    ("/", "/anything/below", True),
    ("**", "/etc/passwd", True),
    ("*", "/etc", False),
]


@pytest.mark.parametrize(("pattern", "path", "expected"), ABSOLUTE)
def test_a_leading_slash_is_kept_for_text_that_may_be_absolute(pattern: str, path: str, expected: bool) -> None:
    assert compile_glob(pattern, relative=False).matches(path) is expected


def test_case_is_significant_unless_asked_otherwise() -> None:
    assert not compile_glob("**/.env").matches("a/.ENV")
    assert compile_glob("**/.env", case_sensitive=False).matches("a/.ENV")
    assert compile_glob("**/*.PEM", case_sensitive=False).matches("keys/Server.pem")


def test_a_glob_set_with_below_protects_what_is_under_a_match_and_names_the_first_glob() -> None:
    deny = GlobSet(["**/*.pem", "**/.git/**", "*.lock"], case_sensitive=False, below=True)
    assert deny.first(".git") == "**/.git/**"
    assert deny.first(".git/x.pem") == "**/.git/**"  # the shortest matching prefix decides
    assert deny.first("keys/a.PEM") == "**/*.pem"
    assert deny.first("keys/a.pem/inner") == "**/*.pem"
    assert deny.first("poetry.lock") == "*.lock"
    assert deny.first("sub/poetry.lock") is None
    assert deny.first("src/main.py") is None
    plain = GlobSet(["*.lock"])
    assert plain.matches("a.lock") and not plain.matches("a.lock/x")
    assert not GlobSet([]) and GlobSet([]).first("x") is None


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("[z-a]", "not a valid glob"),
        ("x" * 5000, "too long"),
        ("a\x00b", "NUL"),
        ("{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}{o,p}{q,r}", "more than 256 alternatives"),
    ],
)
def test_bad_globs_are_refused_with_a_reason(pattern: str, message: str) -> None:
    with pytest.raises(GlobError, match=message):
        compile_glob(pattern)


def test_a_non_string_glob_is_refused() -> None:
    with pytest.raises(GlobError, match="must be a string"):
        compile_glob(3)  # type: ignore[arg-type]


def test_components_collapse_runs_and_spell_a_trailing_slash_as_globstar() -> None:
    assert components("a//./b/") == ("a", "b", "**")
    assert components("**/**/x") == ("**", "x")
    assert components("/etc/x", relative=False) == ("", "etc", "x")
    assert components("/etc/x") == ("etc", "x")
    assert expand_braces("{a,b}/{c,d}") == ["a/c", "a/d", "b/c", "b/d"]
    assert expand_braces("\\{a,b}") == ["\\{a,b}"]


def test_gitignore_style_braces_off_keeps_braces_literal() -> None:
    glob = compile_glob("{a,b}.txt", braces=False)
    assert glob.matches("{a,b}.txt") and not glob.matches("a.txt")


@pytest.mark.parametrize(
    ("pattern", "path"),
    [
        ("*a*a*a*a*a*a*a*a*a*b", "a" * 255),
        ("**/a/**/a/**/a/**/a/**/b", "a/" * 2000 + "c"),
        ("*" * 200 + "b", "a" * 4000),
    ],
)
def test_hostile_globs_and_paths_match_in_linear_time(pattern: str, path: str) -> None:
    glob = compile_glob(pattern)
    started = time.process_time()
    for _ in range(20):
        assert not glob.matches(path)
    # A backtracking engine needs hours for these; linear time needs well under a second.
    assert time.process_time() - started < 5.0
