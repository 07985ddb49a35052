"""Session-grant argument patterns use the one path-glob dialect (runtime.workspace.globs)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from command_support import build_snapshot

from runtime.pipeline.lookup import lookup
from runtime.pipeline.validate import validate
from runtime.policy.grants import SessionGrants
from runtime.records import BoundCall, Call, Session, ValidatedCall
from runtime.snapshot import Snapshot


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Snapshot:
    return build_snapshot(tmp_path_factory.mktemp("grant-patterns"), ())


@pytest.fixture(scope="module")
def read(snapshot: Snapshot) -> Callable[[str], ValidatedCall]:
    """A validated file_read call of ``path``."""

    def make(path: str) -> ValidatedCall:
        bound = lookup(Call("1", "file_read", {"path": path}), snapshot)
        assert isinstance(bound, BoundCall), bound
        call = validate(bound, Session(id="s1"), snapshot)
        assert isinstance(call, ValidatedCall), call
        return call

    return make


@pytest.mark.parametrize(
    ("pattern", "path", "covered"),
    [
        ("src/*", "src/a.py", True),
        ("src/*", "src/a/b.py", False),
        ("src/**", "src/a/b.py", True),
        ("src/**", "src", True),
        ("src/**/*.py", "src/a.py", True),
        ("src/**/*.py", "src/a/b/c.py", True),
        ("src/**/*.py", "srcx/a.py", False),
        ("src/", "src/deep/file.txt", True),
        ("src/**.py", "src/a/b.py", False),  # "**" inside a name is a plain "*"
        ("*.txt", "notes.txt", True),
        ("*.txt", "docs/notes.txt", False),
        ("**/*.txt", "docs/notes.txt", True),
        ("src/*", "src/../Makefile", False),  # normalised first
        ("**", "../outside.txt", False),  # climbing out is never covered
        ("/etc/*", "/etc/passwd", True),
        ("/etc/*", "etc/passwd", False),
        ("etc/*", "/etc/passwd", False),
        ("a(b)+.txt", "a(b)+.txt", True),
        ("a(b)+.txt", "abb.txt", False),
        ("[abc].txt", "b.txt", True),
        ("{a,b}.txt", "b.txt", True),
        ("[z-a].txt", "b.txt", False),  # not a valid glob: covers nothing
        ("[z-a].txt", "[z-a].txt", False),
    ],
)
def test_a_grant_pattern_covers_what_the_glob_dialect_matches(
    read: Callable[[str], ValidatedCall], pattern: str, path: str, covered: bool
) -> None:
    grants = SessionGrants()
    assert grants.add("s1", read("src/first.py"), pattern={"path": pattern}) is not None
    assert (grants.covering("s1", read(path)) is not None) is covered


@pytest.mark.parametrize("pattern", [["src/*"], 3, None, {"a": 1}])
def test_a_grant_pattern_that_is_not_text_covers_nothing(read: Callable[[str], ValidatedCall], pattern: object) -> None:
    grants = SessionGrants()
    grants.add("s1", read("src/first.py"), pattern={"path": pattern})  # type: ignore[dict-item]
    assert grants.covering("s1", read("src/first.py")) is None
