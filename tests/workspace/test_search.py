"""list_dir, glob and grep over a real tree with hidden, protected, binary, large and linked entries.

The tree has a symbolic link to a directory OUTSIDE the workspace holding a secret; no
tool may ever show that secret or traverse the link. grep runs on the Python engine
always, and on ripgrep too when ``rg`` is on PATH (the ripgrep-only tests skip otherwise).
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime.workspace import search
from runtime.workspace.errors import WorkspaceError
from runtime.workspace.sandbox import Workspace
from runtime.workspace.search import GrepEngine, glob, grep, list_dir

RG = search.ripgrep()
NO_RG = (
    "ripgrep (rg) is not installed here (the ripgrep extra, in dev, installs it); the Python engine is tested instead"
)
ENGINES = ["python", pytest.param("rg", marks=pytest.mark.skipif(RG is None, reason=NO_RG))]

OUTSIDE_SECRET = "OUTSIDE-SECRET-7f3a"
PROTECTED_SECRET = "PROTECTED-SECRET-91c2"


@dataclass
class SearchTree:
    base: Path
    root: Path
    ws: Workspace


def _write(root: Path, rel: str, content: str | bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")


def build_search_tree(base: Path) -> SearchTree:
    root = base / "ws"
    outside = base / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{OUTSIDE_SECRET} needle TODO\n")
    (outside / "deep").mkdir()
    (outside / "deep" / "more.py").write_text(f"# {OUTSIDE_SECRET} needle\n")
    files: dict[str, str | bytes] = {
        "README.md": "# Project\nneedle in the readme\n",
        "src/app/main.py": "import os\n\n\ndef main():\n    return needle()\n\n\nclass Runner:\n    pass\n",
        "src/app/util.py": "def needle():\n    return 42\n# TODO: tidy\n",
        "src/lib/helpers.py": "NEEDLE = 'upper'\nvalue = needle\n",
        "src/lib/data.json": '{"needle": true}\n',
        "docs/guide.md": "Guide\n=====\nsee needle\n",
        "my notes/todo list.txt": "buy needle and thread\n",
        "ünïcode/naïve.py": "naïve = 'needle'\n",
        ".hidden/notes.txt": "hidden needle\n",
        ".config.yml": "needle: hidden\n",
        ".git/config": f"[core] {PROTECTED_SECRET} needle\n",
        ".git/HEAD": "ref: refs/heads/main\n",
        ".env": f"TOKEN={PROTECTED_SECRET} needle\n",
        "sub/.env.local": f"TOKEN={PROTECTED_SECRET} needle\n",
        "keys/server.pem": f"{PROTECTED_SECRET} needle\n",
        "data.bin": b"\x89BIN\x00\x01needle\x00" + b"needle\n" * 10,
        "node_modules/pkg/index.js": "module.exports = 'needle'\n",
        "src/__pycache__/main.cpython-311.pyc": "needle\n",
        ".gitignore": "*.log\nbuild/\n!keep.log\n",
        "app.log": "needle in an ignored log\n",
        "keep.log": "needle in a kept log\n",
        "build/out.js": "needle built\n",
        "crlf.txt": "needle end\r\nsecond line\r\n",
    }
    for rel, content in files.items():
        _write(root, rel, content)
    (root / "empty").mkdir()
    os.symlink(outside, root / "outlink")  # a directory outside the workspace
    os.symlink(outside / "secret.txt", root / "outfile.txt")  # a file outside
    os.symlink("src", root / "inlink")  # a directory inside
    os.symlink("src/app/util.py", root / "inlink.py")  # a file inside
    os.symlink(".env", root / "envlink")  # a protected file inside
    os.symlink("missing.txt", root / "dangling.txt")
    return SearchTree(base, root, Workspace(root))


@pytest.fixture
def t(tmp_path: Path) -> SearchTree:
    return build_search_tree(tmp_path)


# Patterns that find the secrets without spelling them: a refusal or "no matches" message
# quotes the pattern, which must not count as a leak.
FIND_OUTSIDE = OUTSIDE_SECRET[:-1] + f"[{OUTSIDE_SECRET[-1]}]"
FIND_PROTECTED = PROTECTED_SECRET[:-1] + f"[{PROTECTED_SECRET[-1]}]"


def result_lines(out: str) -> list[str]:
    """The lines naming files: not notices, not the no-match sentence."""
    return [line for line in out.splitlines() if not line.startswith(("[", "No files match", "No matches"))]


def assert_nothing_leaks(out: str, tree: SearchTree, *, link_names_shown: bool = False) -> None:
    """No secret, no absolute path, no protected file and nothing reached through an outside link.

    ``link_names_shown``: list_dir shows the links themselves (never their outside targets).
    """
    assert OUTSIDE_SECRET not in out
    assert PROTECTED_SECRET not in out
    assert str(tree.base) not in out
    forbidden = r"(^|/|\s)\.git(/|\s|$)|\.env|\.pem|envlink|secret\.txt|more\.py|deep"
    if not link_names_shown:
        forbidden += "|outlink|outfile"
    for line in result_lines(out):
        assert not re.search(forbidden, line), line


# -- list_dir ----------------------------------------------------------------------------


def test_list_dir_root_shows_directories_first_then_files_sorted_with_sizes(t: SearchTree) -> None:
    out = list_dir(t.ws)
    lines = out.splitlines()
    assert lines[0] == "./"
    entries = [line for line in lines[1:] if line.startswith("  ")]
    names = [line.strip().split("  ")[0] for line in entries]
    dirs = [n for n in names if n.endswith("/") and " -> " not in n]
    assert names[: len(dirs)] == dirs, "directories come first"
    assert dirs == sorted(dirs)
    assert dirs == ["build/", "docs/", "empty/", "keys/", "my notes/", "node_modules/", "src/", "sub/", "ünïcode/"]
    assert f"  README.md  {(t.root / 'README.md').stat().st_size} B" in lines
    files = [n.split(" -> ")[0] for n in names[len(dirs) :]]
    assert files == sorted(files)


def test_list_dir_depth_shows_an_indented_tree(t: SearchTree) -> None:
    out = list_dir(t.ws, "src", depth=2)
    size = (t.root / "src/app/main.py").stat().st_size
    assert out.splitlines()[:4] == ["src/", "  __pycache__/  (not expanded)", "  app/", f"    main.py  {size} B"]
    assert "  lib/" in out and "    helpers.py  " in out
    assert list_dir(t.ws, "src", depth=1).count("main.py") == 0


def test_list_dir_hides_hidden_names_unless_asked_and_counts_them(t: SearchTree) -> None:
    out = list_dir(t.ws)
    assert ".hidden" not in out and ".config.yml" not in out and ".gitignore" not in out
    assert "[3 hidden entries not shown (names starting with '.'); pass show_hidden=true to list them]" in out
    shown = list_dir(t.ws, show_hidden=True)
    assert "  .hidden/" in shown and "  .config.yml  15 B" in shown and "hidden entr" not in shown


def test_list_dir_never_shows_protected_entries_and_says_how_many(t: SearchTree) -> None:
    out = list_dir(t.ws, show_hidden=True, depth=5)
    assert "  .gitignore  " in out
    assert ".git/" not in out and ".env" not in out and "server.pem" not in out and "envlink" not in out
    assert "keys/" in out  # the directory is fine, its key is not
    # .git, .env, envlink (a link to .env), keys/server.pem, sub/.env.local
    assert "[5 protected entries not shown (deny rules)]" in out
    assert_nothing_leaks(out, t, link_names_shown=True)


def test_list_dir_shows_links_without_outside_targets_and_never_enters_them(t: SearchTree) -> None:
    out = list_dir(t.ws, depth=5)
    assert "  outlink -> (outside the workspace)" in out
    assert "  outfile.txt -> (outside the workspace)" in out
    assert "  inlink -> src/" in out
    assert "  inlink.py -> src/app/util.py" in out
    assert "  dangling.txt -> (broken link)" in out
    assert "secret.txt" not in out and "more.py" not in out and "deep" not in out
    assert out.count("util.py  ") == 1  # the inside link is not traversed either
    assert_nothing_leaks(out, t, link_names_shown=True)


def test_list_dir_does_not_expand_dependency_and_cache_directories(t: SearchTree) -> None:
    out = list_dir(t.ws, depth=3)
    assert "  node_modules/  (not expanded)" in out
    assert "index.js" not in out and ".pyc" not in out
    assert (
        "[not expanded: node_modules/, src/__pycache__/ (dependency or cache directories); list one directly to see "
        "inside]" in out
    )
    assert "index.js" in list_dir(t.ws, "node_modules", depth=2)


def test_list_dir_caps_entries_keeping_the_shallow_levels_with_a_notice(tmp_path: Path) -> None:
    root = tmp_path / "many"
    for i in range(30):
        _write(root, f"d{i:02}/f.txt", "x")
    ws = Workspace(root)
    out = list_dir(ws, depth=2, limit=25)
    assert "[showing 25 of 60 entries; narrow the path or lower depth]" in out
    assert "f.txt" not in out, "all 30 first-level directories come before any file below them"
    assert out.count("\n  d") == 25
    assert "[showing" not in list_dir(ws, depth=2, limit=60)


def test_list_dir_of_an_empty_directory_says_so(t: SearchTree) -> None:
    assert list_dir(t.ws, "empty") == "empty/\n  (empty)"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("README.md", "is a file, not a directory"),
        ("nope", "not found"),
        ("outlink", "outside the workspace"),
        ("../outside", "goes above the workspace root"),
        (".git", "protected"),
        (str(Path("/etc")), "outside the workspace"),
    ],
)
def test_list_dir_refuses_bad_paths_with_a_clear_message(t: SearchTree, path: str, message: str) -> None:
    with pytest.raises(WorkspaceError, match=message):
        list_dir(t.ws, path)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"depth": 0}, "depth must be from 1 to 5"),
        ({"depth": 6}, "depth must be from 1 to 5"),
        ({"limit": 0}, "limit"),
        ({"depth": True}, "whole number"),
    ],
)
def test_list_dir_refuses_out_of_range_arguments(t: SearchTree, kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(WorkspaceError, match=message):
        list_dir(t.ws, **kwargs)  # type: ignore[arg-type]


# -- glob --------------------------------------------------------------------------------


def test_glob_double_star_finds_python_files_at_any_depth_sorted_by_path(t: SearchTree) -> None:
    out = glob(t.ws, "**/*.py")
    assert out.splitlines() == [
        "inlink.py",
        "src/app/main.py",
        "src/app/util.py",
        "src/lib/helpers.py",
        "ünïcode/naïve.py",
    ]


def test_glob_is_relative_to_path_and_prints_workspace_relative_paths(t: SearchTree) -> None:
    assert glob(t.ws, "*.py", "src/app").splitlines() == ["src/app/main.py", "src/app/util.py"]
    assert glob(t.ws, "app/*.py", "src").splitlines() == ["src/app/main.py", "src/app/util.py"]
    assert glob(t.ws, "*.py").splitlines() == ["inlink.py"]  # "*" stays in one directory


def test_glob_supports_braces_classes_and_escapes(t: SearchTree) -> None:
    assert glob(t.ws, "src/**/*.{json,md,py}").splitlines() == [
        "src/app/main.py",
        "src/app/util.py",
        "src/lib/data.json",
        "src/lib/helpers.py",
    ]
    assert glob(t.ws, "src/app/[m]ain.py") == "src/app/main.py"
    assert glob(t.ws, "src/app/[!m]*.py") == "src/app/util.py"
    _write(t.root, "odd/a*b.txt", "x")
    _write(t.root, "odd/axb.txt", "x")
    assert glob(t.ws, "odd/a\\*b.txt") == "odd/a*b.txt"


def test_glob_handles_unicode_names_and_spaces(t: SearchTree) -> None:
    assert glob(t.ws, "ünïcode/*.py") == "ünïcode/naïve.py"
    assert glob(t.ws, "my notes/*") == "my notes/todo list.txt"


def test_glob_skips_hidden_entries_unless_the_pattern_names_a_dot(t: SearchTree) -> None:
    assert "notes.txt" not in glob(t.ws, "**/*.txt")
    assert glob(t.ws, ".hidden/*") == ".hidden/notes.txt"
    assert glob(t.ws, "**/.config.yml") == ".config.yml"


def test_glob_never_lists_protected_files(t: SearchTree) -> None:
    for pattern in ("**/.env*", ".git/**", "**/*.pem", "**/*", "**/config", "envlink"):
        out = glob(t.ws, pattern, include_ignored=True)
        assert_nothing_leaks(out, t)
    assert "No files match" in glob(t.ws, "**/.env*", include_ignored=True)


def test_glob_never_follows_links_out_of_the_workspace(t: SearchTree) -> None:
    everything = glob(t.ws, "**", include_ignored=True)
    assert "outlink" not in everything and "outfile.txt" not in everything and "secret" not in everything
    assert "No files match" in glob(t.ws, "outlink/**")
    assert "No files match" in glob(t.ws, "**/secret.txt", include_ignored=True)
    assert "No files match" in glob(t.ws, "**/more.py", include_ignored=True)
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        glob(t.ws, "*", "outlink")


def test_glob_lists_links_to_files_inside_but_does_not_enter_linked_directories(t: SearchTree) -> None:
    out = glob(t.ws, "**/*.py").splitlines()
    assert "inlink.py" in out
    assert not any(line.startswith("inlink/") for line in out)
    assert "dangling.txt" not in glob(t.ws, "*.txt")


def test_glob_honours_gitignore_unless_include_ignored(t: SearchTree) -> None:
    assert glob(t.ws, "*.log") == "keep.log"  # "!keep.log" re-includes it
    assert "build/out.js" not in glob(t.ws, "**/*.js")
    assert glob(t.ws, "*.log", include_ignored=True).splitlines() == ["app.log", "keep.log"]
    assert glob(t.ws, "*.js", "build") == "build/out.js"  # an explicit path is always walked


def test_glob_enters_dependency_directories_only_when_the_pattern_names_them(t: SearchTree) -> None:
    assert "index.js" not in glob(t.ws, "**/*.js")
    assert glob(t.ws, "node_modules/**/*.js") == "node_modules/pkg/index.js"


@pytest.mark.parametrize("pattern", ["../*", "src/../../outside/*", "{src,..}/*", "/etc/*", "~/x"])
def test_glob_refuses_patterns_that_leave_the_directory(t: SearchTree, pattern: str) -> None:
    with pytest.raises(WorkspaceError, match=r"'\.\.'|absolute|home directories"):
        glob(t.ws, pattern)


@pytest.mark.parametrize(
    ("pattern", "message"),
    [("", "empty"), ("a\x00b", "control characters"), ("[z-a]", "not a valid glob"), ("x" * 2000, "too long")],
)
def test_glob_refuses_malformed_patterns(t: SearchTree, pattern: str, message: str) -> None:
    with pytest.raises(WorkspaceError, match=message):
        glob(t.ws, pattern)


def test_glob_caps_results_with_a_notice(t: SearchTree) -> None:
    out = glob(t.ws, "**/*", limit=3).splitlines()
    assert len(out) == 4
    assert out[-1].startswith("[showing 3 of ") and out[-1].endswith(" files; narrow the pattern or path]")


def test_glob_without_matches_explains_what_was_skipped(t: SearchTree) -> None:
    out = glob(t.ws, "build/**")
    assert "No files match 'build/**' under the workspace." in out
    assert "ignored by .gitignore" in out and "include_ignored=true" in out
    assert "glob lists files" in glob(t.ws, "src/*")


def test_glob_refuses_a_file_as_path(t: SearchTree) -> None:
    with pytest.raises(WorkspaceError, match="is a file, not a directory"):
        glob(t.ws, "*", "README.md")


# -- grep: output formats ----------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_grep_content_lines_are_path_line_text_sorted_by_path_then_line(t: SearchTree, engine: GrepEngine) -> None:
    out = grep(t.ws, "needle", "src", engine=engine)
    assert out.splitlines() == [
        "src/app/main.py:5:    return needle()",
        "src/app/util.py:1:def needle():",
        'src/lib/data.json:1:{"needle": true}',
        "src/lib/helpers.py:2:value = needle",
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_grep_files_and_count_outputs(t: SearchTree, engine: GrepEngine) -> None:
    files = grep(t.ws, "needle|NEEDLE", "src", output="files", engine=engine)
    assert files.splitlines() == ["src/app/main.py", "src/app/util.py", "src/lib/data.json", "src/lib/helpers.py"]
    counts = grep(t.ws, "needle|NEEDLE", "src", output="count", engine=engine)
    assert counts.splitlines() == [
        "src/app/main.py:1",
        "src/app/util.py:1",
        "src/lib/data.json:1",
        "src/lib/helpers.py:2",
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_grep_context_lines_use_dashes_and_groups_are_separated(t: SearchTree, engine: GrepEngine) -> None:
    out = grep(t.ws, "import os|class Runner", "src/app/main.py", context=1, engine=engine)
    assert out.splitlines() == [
        "src/app/main.py:1:import os",
        "src/app/main.py-2-",
        "--",
        "src/app/main.py-7-",
        "src/app/main.py:8:class Runner:",
        "src/app/main.py-9-    pass",
    ]
    merged = grep(t.ws, "def needle|TODO", "src/app", context=2, engine=engine)
    assert merged.splitlines() == [
        "src/app/util.py:1:def needle():",
        "src/app/util.py-2-    return 42",
        "src/app/util.py:3:# TODO: tidy",
    ]
    between_files = grep(t.ws, "needle", "src/lib", context=1, engine=engine)
    assert "--" in between_files.splitlines()


@pytest.mark.parametrize("engine", ENGINES)
def test_grep_ignore_case(t: SearchTree, engine: GrepEngine) -> None:
    assert grep(t.ws, "NEEDLE", "src/lib", engine=engine) == "src/lib/helpers.py:1:NEEDLE = 'upper'"
    out = grep(t.ws, "NEEDLE", "src/lib", ignore_case=True, output="count", engine=engine)
    assert out.splitlines() == ["src/lib/data.json:1", "src/lib/helpers.py:2"]


@pytest.mark.parametrize("engine", ENGINES)
def test_grep_glob_filter_matches_names_without_slash_and_paths_with_one(t: SearchTree, engine: GrepEngine) -> None:
    assert grep(t.ws, "needle", glob="*.json", output="files", engine=engine) == "src/lib/data.json"
    assert grep(t.ws, "needle", glob="*.{md,json}", output="files", engine=engine).splitlines() == [
        "README.md",
        "docs/guide.md",
        "src/lib/data.json",
    ]
    assert grep(t.ws, "needle", glob="src/app/*.py", output="files", engine=engine).splitlines() == [
        "src/app/main.py",
        "src/app/util.py",
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_grep_searches_unicode_names_and_names_with_spaces(t: SearchTree, engine: GrepEngine) -> None:
    out = grep(t.ws, "needle", glob="*.{py,txt}", output="files", engine=engine).splitlines()
    assert "my notes/todo list.txt" in out and "ünïcode/naïve.py" in out
    assert grep(t.ws, "naïve", engine=engine) == "ünïcode/naïve.py:1:naïve = 'needle'"


@pytest.mark.parametrize("engine", ENGINES)
def test_grep_strips_crlf_from_shown_lines_and_dollar_does_not_match_before_cr(
    t: SearchTree, engine: GrepEngine
) -> None:
    assert grep(t.ws, "needle end", "crlf.txt", engine=engine) == "crlf.txt:1:needle end"
    assert grep(t.ws, "line$", "crlf.txt", engine=engine).startswith("No matches")


# -- grep: what is searched ----------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_grep_never_shows_protected_or_outside_content(t: SearchTree, engine: GrepEngine) -> None:
    for include_ignored in (False, True):
        for pattern in ("needle", "SECRET", FIND_OUTSIDE, FIND_PROTECTED, "."):
            out = grep(t.ws, pattern, include_ignored=include_ignored, limit=2000, engine=engine)
            assert_nothing_leaks(out, t)
            assert "outlink" not in out and "outfile" not in out and "envlink" not in out
    for path in ("outlink", "outfile.txt", "outlink/secret.txt", ".env", "envlink", ".git/config", "keys/server.pem"):
        with pytest.raises(WorkspaceError) as caught:
            grep(t.ws, "needle", path, engine=engine)
        assert OUTSIDE_SECRET not in str(caught.value) and str(t.base) not in str(caught.value)


@pytest.mark.parametrize("engine", ENGINES)
def test_grep_skips_binary_files(t: SearchTree, engine: GrepEngine) -> None:
    assert "data.bin" not in grep(t.ws, "needle", output="files", engine=engine)
    out = grep(t.ws, "needle", "data.bin", engine=engine)
    assert out.startswith("No matches for 'needle' in data.bin (0 files searched).")
    assert "1 binary file" in out


@pytest.mark.parametrize("engine", ENGINES)
def test_grep_honours_gitignore_hidden_and_dependency_directories_unless_asked(
    t: SearchTree, engine: GrepEngine
) -> None:
    default = grep(t.ws, "needle", output="files", engine=engine).splitlines()
    assert "keep.log" in default
    for skipped in (
        "app.log",
        "build/out.js",
        ".hidden/notes.txt",
        ".config.yml",
        "node_modules/pkg/index.js",
        "src/__pycache__/main.cpython-311.pyc",
    ):
        assert skipped not in default
    everything = grep(t.ws, "needle", output="files", include_ignored=True, engine=engine).splitlines()
    for included in ("app.log", "build/out.js", ".hidden/notes.txt", ".config.yml", "node_modules/pkg/index.js"):
        assert included in everything
    assert grep(t.ws, "needle", "build", output="files", engine=engine) == "build/out.js"


@pytest.mark.parametrize("engine", ENGINES)
def test_grep_does_not_follow_symbolic_links(t: SearchTree, engine: GrepEngine) -> None:
    files = grep(t.ws, "def needle", output="files", engine=engine)
    assert files == "src/app/util.py"  # found once, under its own path, not via inlink or inlink.py


@pytest.mark.parametrize("engine", ENGINES)
def test_grep_skips_files_over_the_size_limit_and_names_them(t: SearchTree, engine: GrepEngine) -> None:
    with open(t.root / "huge.txt", "wb") as handle:
        handle.write(b"needle\n")
        handle.truncate(search.DEFAULT_LIMITS.max_file_bytes + 1)
    out = grep(t.ws, "needle", output="files", engine=engine)
    assert "huge.txt\n" not in out
    assert out.endswith("[not searched: 1 file over 10 MB (huge.txt); read them in windows instead]")
    tight = dataclasses.replace(search.DEFAULT_LIMITS, max_file_bytes=20)
    small_limit = grep(t.ws, "needle", "src/app", output="files", engine=engine, limits=tight)
    assert "not searched: 2 files over" in small_limit and "src/app/main.py" in small_limit


@pytest.mark.parametrize("engine", ENGINES)
def test_grep_deeper_gitignore_files_decide_over_shallower_ones(t: SearchTree, engine: GrepEngine) -> None:
    _write(t.root, "logs/.gitignore", "!important.log\n/local/\n")
    _write(t.root, "logs/important.log", "needle kept\n")
    _write(t.root, "logs/noise.log", "needle dropped\n")
    _write(t.root, "logs/local/x.txt", "needle anchored\n")
    _write(t.root, "logs/deeper/local/y.txt", "needle not anchored here\n")
    out = grep(t.ws, "needle", "logs", output="files", engine=engine).splitlines()
    assert out == ["logs/deeper/local/y.txt", "logs/important.log"]
    assert glob(t.ws, "logs/**/*.log") == "logs/important.log"


@pytest.mark.parametrize("engine", ENGINES)
def test_odd_file_names_cannot_break_the_line_oriented_output(t: SearchTree, engine: GrepEngine) -> None:
    odd = os.fsencode(t.root) + b"/odd/caf\xe9 new\nline.txt"
    os.makedirs(os.path.dirname(odd), exist_ok=True)
    with open(odd, "wb") as handle:
        handle.write(b"needle here\n")
    shown = "odd/caf\ufffd new\ufffdline.txt"
    assert grep(t.ws, "needle", "odd", engine=engine) == f"{shown}:1:needle here"
    assert grep(t.ws, "needle", "odd", output="count", engine=engine) == f"{shown}:1"
    assert glob(t.ws, "odd/*") == shown
    assert list_dir(t.ws, "odd").splitlines()[1] == "  caf\ufffd new\ufffdline.txt  12 B"


# -- grep: caps, long lines, errors --------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_grep_caps_matches_with_a_notice_counting_the_rest(t: SearchTree, engine: GrepEngine) -> None:
    _write(t.root, "many/a.txt", "hit\n" * 5)
    _write(t.root, "many/b.txt", "hit\n" * 3)
    _write(t.root, "many/c.txt", "hit\n" * 2)
    out = grep(t.ws, "hit", "many", limit=6, engine=engine).splitlines()
    assert out[:6] == [f"many/a.txt:{n}:hit" for n in range(1, 6)] + ["many/b.txt:1:hit"]
    assert out[6] == "[first 6 matches shown; 4 more in 2 files — narrow the pattern or path]"
    files = grep(t.ws, "hit", "many", limit=1, output="files", engine=engine).splitlines()
    assert files == ["many/a.txt", "[first 1 file shown; 2 more files match — narrow the pattern or path]"]
    counts = grep(t.ws, "hit", "many", limit=2, output="count", engine=engine).splitlines()
    assert counts == [
        "many/a.txt:5",
        "many/b.txt:3",
        "[first 2 files shown; 1 more file with 2 matching lines — narrow the pattern or path]",
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_grep_cuts_long_lines_with_a_marker(t: SearchTree, engine: GrepEngine) -> None:
    _write(t.root, "long.txt", "needle" + "x" * 994 + "\n")
    out = grep(t.ws, "needle", "long.txt", max_line_chars=50, engine=engine)
    assert out == "long.txt:1:needle" + "x" * 44 + "… [line cut: 1,000 characters in all]"


@pytest.mark.parametrize("engine", ENGINES)
def test_grep_output_is_deterministic(t: SearchTree, engine: GrepEngine) -> None:
    runs = {grep(t.ws, "needle|TODO", include_ignored=True, context=1, engine=engine) for _ in range(3)}
    assert len(runs) == 1


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("foo(", "missing \\)"),
        ("(?=x)", "look-ahead is not supported"),
        ("(?<=x)y", "look-behind is not supported"),
        ("(a)\\1", "back-references"),
        ("a++", "possessive"),
        ("", "pattern is empty"),
        ("a\nb", "line break"),
        ("a\\nb", "line break"),
        ("x" * 1001, "too long"),
    ],
)
def test_grep_refuses_invalid_patterns_with_a_hint(t: SearchTree, pattern: str, message: str) -> None:
    with pytest.raises(WorkspaceError, match=message):
        grep(t.ws, pattern, engine="python")


def test_grep_invalid_pattern_message_says_how_to_match_literally(t: SearchTree) -> None:
    with pytest.raises(WorkspaceError) as caught:
        grep(t.ws, "print(", engine="python")
    assert "invalid regular expression 'print('" in str(caught.value)
    assert "escape them with a backslash" in str(caught.value)
    assert "print(" in grep(t.ws, "print\\(", engine="python") or "No matches" in grep(
        t.ws, "print\\(", engine="python"
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"output": "lines"}, "output must be"),
        ({"context": 11}, "context must be from 0 to 10"),
        ({"limit": 0}, "limit must be"),
        ({"max_line_chars": 5}, "max_line_chars"),
        ({"engine": "grep"}, "engine must be"),
        ({"glob": "../*.py"}, "'..'"),
        ({"glob": "/abs/*.py"}, "absolute"),
    ],
)
def test_grep_refuses_bad_arguments(t: SearchTree, kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(WorkspaceError, match=message):
        grep(t.ws, "needle", **kwargs)  # type: ignore[arg-type]


def test_grep_rg_engine_without_rg_on_path_is_refused(t: SearchTree, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(t.root / "no-programs-here"))
    monkeypatch.setattr(sys, "executable", str(t.root / "no-programs-here" / "python"))  # rg beside it counts too
    assert search.ripgrep() is None
    with pytest.raises(WorkspaceError, match="not on PATH"):
        grep(t.ws, "needle", engine="rg")
    assert "src/app/util.py:1:def needle():" in grep(t.ws, "needle", engine="auto")


@pytest.mark.parametrize("engine", ENGINES)
def test_grep_stops_at_the_time_limit_with_a_notice(t: SearchTree, engine: GrepEngine) -> None:
    out = grep(t.ws, "needle", engine=engine, limits=dataclasses.replace(search.DEFAULT_LIMITS, time_limit_s=0.0))
    assert "[search stopped after 0 s: results are incomplete; narrow the path or pattern]" in out


def test_grep_a_pattern_matching_nothing_says_what_was_searched(t: SearchTree) -> None:
    out = grep(t.ws, "no-such-text", "src", engine="python")
    assert out.splitlines()[0] == "No matches for 'no-such-text' in src/ (4 files searched)."


# -- ripgrep -----------------------------------------------------------------------------


@pytest.mark.skipif(RG is None, reason=NO_RG)
def test_rg_refusal_of_a_pattern_re2_accepts_is_a_clear_error(t: SearchTree) -> None:
    with pytest.raises(WorkspaceError, match="for ripgrep"):
        grep(t.ws, "\\Qa.b\\E", engine="rg")  # RE2 quoting; ripgrep's regex has no \Q...\E


@pytest.mark.skipif(RG is None, reason=NO_RG)
@pytest.mark.parametrize(
    "kwargs",
    [
        {"pattern": "needle"},
        {"pattern": "needle", "include_ignored": True, "context": 2},
        {"pattern": "^def|^class|return", "output": "count"},
        {"pattern": "NEEDLE|todo", "ignore_case": True, "output": "files", "include_ignored": True},
        {"pattern": "e", "limit": 7, "context": 1},
        {"pattern": "[a-z]+\\(\\)", "glob": "*.py"},
        {"pattern": "x*"},
        {"pattern": "$"},
    ],
)
def test_rg_and_python_engines_give_identical_output(t: SearchTree, kwargs: dict[str, object]) -> None:
    _write(t.root, "long.txt", "e" * 900 + "\n" + "no hit\n" * 3 + "tail e")
    _write(t.root, "latin1.txt", b"caf\xe9 needle\n")
    assert grep(t.ws, engine="rg", **kwargs) == grep(t.ws, engine="python", **kwargs)  # type: ignore[arg-type]


# -- arbitrary input -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def fuzz_ws(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    return build_search_tree(tmp_path_factory.mktemp("fuzz")).ws


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pattern=st.text(max_size=40))
def test_grep_with_any_pattern_returns_text_or_refuses_with_workspace_error(fuzz_ws: Workspace, pattern: str) -> None:
    try:
        out = grep(fuzz_ws, pattern, engine="python", include_ignored=True)
    except WorkspaceError:
        return
    assert isinstance(out, str)
    assert OUTSIDE_SECRET not in out and PROTECTED_SECRET not in out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pattern=st.text(alphabet=st.sampled_from("ab./*?[]!^{},\\-~ .é\x00\n"), max_size=30))
def test_glob_and_grep_glob_with_any_pattern_return_text_or_refuse_with_workspace_error(
    fuzz_ws: Workspace, pattern: str
) -> None:
    for call in (
        lambda: glob(fuzz_ws, pattern, include_ignored=True),
        lambda: grep(fuzz_ws, "needle", glob=pattern, engine="python"),
    ):
        try:
            out = call()
        except WorkspaceError:
            continue
        assert OUTSIDE_SECRET not in out and PROTECTED_SECRET not in out


# -- the Python engine against a line-by-line reference --------------------------------------

_TOKENS = [
    "a",
    "b",
    "ab",
    " ",
    "^",
    "$",
    ".",
    "*",
    "+",
    "?",
    "|",
    "(",
    ")",
    "[^a]",
    "[ab]",
    "\\b",
    "\\B",
    "\\s",
    "\\S",
    "\\w",
    "(?i)",
    "(?s)",
    "(?-m)",
    "\\A",
    "\\z",
    "é",
    "{2}",
]
_TEXT = st.text(alphabet=st.sampled_from("ab ab\n\n\r\t-é"), max_size=60)


@pytest.fixture(scope="module")
def one_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Workspace, Path]:
    root = tmp_path_factory.mktemp("onefile")
    return Workspace(root), root / "f.txt"


def _reference_lines(pattern: str, content: str, *, ignore_case: bool = False) -> list[int]:
    """Line numbers matching ``pattern`` when each line is searched on its own, as ripgrep does."""
    import re2

    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = not ignore_case
    regex = re2.compile(pattern, options)
    lines = content.encode().split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return [number for number, line in enumerate(lines, 1) if regex.search(line) is not None]


def _grep_lines(ws: Workspace, engine: GrepEngine, pattern: str, *, ignore_case: bool = False) -> list[int] | None:
    try:
        out = grep(ws, pattern, "f.txt", engine=engine, limit=2000, ignore_case=ignore_case)
    except WorkspaceError:
        return None
    return [int(line.split(":")[1]) for line in out.splitlines() if line.startswith("f.txt:")]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tokens=st.lists(st.sampled_from(_TOKENS), min_size=1, max_size=6), content=_TEXT, ignore_case=st.booleans())
def test_python_engine_finds_exactly_the_lines_a_per_line_search_finds(
    one_file: tuple[Workspace, Path], tokens: list[str], content: str, ignore_case: bool
) -> None:
    ws, path = one_file
    path.write_text(content, encoding="utf-8")
    pattern = "".join(tokens)
    found = _grep_lines(ws, "python", pattern, ignore_case=ignore_case)
    if found is None:  # refused: RE2 must refuse it too (or it is a refused empty or multi-line pattern)
        return
    assert found == _reference_lines(pattern, content, ignore_case=ignore_case)


@pytest.mark.skipif(RG is None, reason=NO_RG)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    tokens=st.lists(
        st.sampled_from([t for t in _TOKENS if t not in ("\\w", "\\b", "\\B", "é")]), min_size=1, max_size=6
    ),
    content=st.text(alphabet=st.sampled_from("ab ab\n\n\r\t-"), max_size=60),
)
def test_rg_engine_finds_the_same_lines_as_the_python_engine(
    one_file: tuple[Workspace, Path], tokens: list[str], content: str
) -> None:
    ws, path = one_file
    path.write_text(content, encoding="utf-8")
    pattern = "".join(tokens)
    with_rg, with_python = _grep_lines(ws, "rg", pattern), _grep_lines(ws, "python", pattern)
    if with_rg is None and with_python is not None:
        return  # ripgrep refuses a few patterns RE2 accepts (e.g. 'a(?i)*'): an error, never other lines
    assert with_rg == with_python
