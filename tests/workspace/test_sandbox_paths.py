"""Workspace.resolve against a traversal corpus: no path escapes, legitimate paths work, deny globs hold.

``{root}``, ``{outside}`` and ``{base}`` in a case are replaced by the real directories
of the fixture tree (conftest.build_tree), which has links pointing out of the
workspace (relative, absolute, chained, dangling, looping) and a sibling ``ws-evil``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ws_helpers import Tree, build_tree

from runtime.errors import ToolError
from runtime.workspace import DEFAULT_DENY, Workspace, WorkspaceError

ESCAPES: dict[str, str] = {
    "dotdot": "..",
    "dotdot_slash": "../",
    "etc_passwd_relative": "../../etc/passwd",
    "many_dotdots": "../" * 12 + "etc/passwd",
    "missing_dir_then_two_up": "a/../../x",
    "sub_then_two_up": "sub/../../outside/secret.txt",
    "dot_then_up": "./../outside/secret.txt",
    "dots_then_up": "./././../outside",
    "up_with_trailing_slash": "../outside/",
    "absolute_etc_passwd": "/etc/passwd",
    "absolute_filesystem_root": "/",
    "absolute_double_slash": "//etc/passwd",
    "absolute_dotdot_elsewhere": "/etc/../etc/passwd",
    "absolute_outside_file": "{outside}/secret.txt",
    "absolute_sibling_prefix": "{root}-evil/secret.txt",
    "absolute_root_then_up": "{root}/../outside/secret.txt",
    "absolute_root_then_up_to_sibling": "{root}/../ws-evil/secret.txt",
    "absolute_base_dir": "{base}",
    "relative_sibling_prefix": "../ws-evil/secret.txt",
    "link_out_file": "link_out/secret.txt",
    "link_out_itself": "link_out",
    "link_out_new_file": "link_out/new.txt",
    "sub_back_into_link_out": "sub/../link_out/secret.txt",
    "link_out_then_dotdot": "link_out/../ws-evil/secret.txt",
    "link_in_then_two_up": "link_in/../../outside/secret.txt",
    "chain_of_links_out": "chain1/secret.txt",
    "absolute_link_to_etc": "abs_link_out/passwd",
    "file_link_to_etc_passwd": "passwd_link",
    "dangling_link_out": "dangling_out",
    "dangling_absolute_link_out": "dangling_out_abs",
    "dangling_dir_link_out": "dangling_dir_out/new.txt",
    "link_two_up_then_down": "sub/upup/outside/secret.txt",
    "link_to_root_then_sibling": "sub/up/../ws-evil/secret.txt",
    "link_to_sibling_prefix_dir": "evil_sibling_link/secret.txt",
    "symlink_loop": "loop1",
    # realpath gives up at the loop and keeps the rest
    "symlink_loop_then_dotdot_through_link_out": "loop1/../link_out/secret.txt",
    "symlink_loop_in_middle": "loop1/x.txt",
    "nul_in_middle": "sub/\x00/file.txt",
    "nul_at_end": "sub/file.txt\x00",
    "empty": "",
    "blank": "   ",
    "tilde": "~",
    "tilde_ssh_key": "~/.ssh/id_rsa",
    "newline_smuggling": "sub/file.txt\n../../etc/passwd",
    "escape_character": "sub/\x1b[2Jx",
    "name_too_long": "x" * 256,
    "path_too_long": "a/" * 2100 + "x",
    "lone_surrogate": "bad\udfffname",
}

ALLOWED: dict[str, tuple[str, str]] = {
    # case id: (path, expected relative path)
    "plain": ("sub/file.txt", "sub/file.txt"),
    "leading_dot": ("./sub/file.txt", "sub/file.txt"),
    "inner_dot": ("sub/./file.txt", "sub/file.txt"),
    "double_slash": ("sub//file.txt", "sub/file.txt"),
    "dotdot_inside": ("./a/../sub/file.txt", "sub/file.txt"),
    "dotdot_back_into_sub": ("sub/../sub/file.txt", "sub/file.txt"),
    "absolute_inside": ("{root}/sub/file.txt", "sub/file.txt"),
    "absolute_root": ("{root}", "."),
    "dot_is_root": (".", "."),
    "directory_with_slash": ("sub/", "sub"),
    "link_inside": ("link_in/file.txt", "sub/file.txt"),
    "chain_inside": ("chain_in1/file.txt", "sub/file.txt"),
    "link_to_root": ("sub/up/sub/file.txt", "sub/file.txt"),
    "spaces": ("with space/file name.txt", "with space/file name.txt"),
    "unicode": ("ünïcødé/文件.txt", "ünïcødé/文件.txt"),
    "url_encoded_is_literal": ("%2e%2e/literal.txt", "%2e%2e/literal.txt"),
    "dots_in_names": ("..foo", "..foo"),
    "trailing_dots": ("foo..", "foo.."),
    "dotdot_then_file_then_dotdot": ("sub/file.txt/../file.txt", "sub/file.txt"),
}

ALLOWED_NEW: dict[str, tuple[str, str]] = {
    # paths that do not exist yet, resolved for writing
    "url_encoded_traversal_is_a_name": ("%2e%2e%2f%2e%2e%2fetc%2fpasswd", "%2e%2e%2f%2e%2e%2fetc%2fpasswd"),
    "backslashes_are_a_name": ("..\\..\\etc\\passwd", "..\\..\\etc\\passwd"),
    "three_dots_is_a_name": ("...", "..."),
    "tilde_user_is_a_name": ("~user/notes.txt", "~user/notes.txt"),
    "drive_letter_is_a_name": ("C:\\Windows\\win.ini", "C:\\Windows\\win.ini"),
    "file_url_is_a_path": ("file:///etc/passwd", "file:/etc/passwd"),
    "longest_name": ("n" * 255, "n" * 255),
    "dangling_link_inside": ("dangling_in", "sub/missing.txt"),
    "new_dir_and_file": ("new/deeper/file.txt", "new/deeper/file.txt"),
}

DENIED: dict[str, str] = {
    "git_config": ".git/config",
    "git_dir_itself": ".git",
    "git_through_dotdot": "./.git/../.git/HEAD",
    "git_absolute": "{root}/.git/config",
    "git_case_variant": ".GIT/config",
    "dotenv_in_sub": "sub/.env",
    "dotenv_case_variant": "sub/.ENV",
    "dotenv_at_root_new": ".env",
    "dotenv_variant": "deep/a/.env.production",
    "pem_key": "keys/server.pem",
    "ssh_key": "home/.ssh/id_rsa",
    "ed25519_key": "id_ed25519.pub",
    "link_to_dotenv": "env_link",
}


def _fill(path: str, tree: Tree) -> str:
    return (
        path.replace("{root}", str(tree.root)).replace("{outside}", str(tree.outside)).replace("{base}", str(tree.base))
    )


@pytest.mark.parametrize("case", list(ESCAPES), ids=list(ESCAPES))
def test_escaping_paths_are_refused_for_reading_and_writing(tree: Tree, case: str) -> None:
    path = _fill(ESCAPES[case], tree)
    for kwargs in ({}, {"must_exist": False}, {"for_write": True, "must_exist": False}):
        with pytest.raises(WorkspaceError) as caught:
            tree.ws.resolve(path, **kwargs)  # type: ignore[arg-type]
        message = str(caught.value)
        # What the model did not give must not be revealed: no resolved outside location.
        for secret_place in (str(tree.outside), str(tree.evil), "/nonexistent-toolrt-dir"):
            assert secret_place not in message or secret_place in path, message


@pytest.mark.parametrize("case", list(ESCAPES), ids=list(ESCAPES))
def test_escaping_paths_cannot_be_read_or_written_through_the_tools(tree: Tree, case: str) -> None:
    path = _fill(ESCAPES[case], tree)
    before = tree.outside_snapshot()
    with pytest.raises(ToolError):
        tree.reader.read(path)
    for mode, kwargs in (("replace", {"content": "pwned\n"}), ("append", {"content": "pwned\n"})):
        with pytest.raises(ToolError):
            tree.editor.edit(path, mode, **kwargs)  # type: ignore[arg-type]
    assert tree.outside_snapshot() == before
    assert not (tree.base / "outside-missing-dir").exists()


@pytest.mark.parametrize("case", list(ALLOWED), ids=list(ALLOWED))
def test_legitimate_paths_resolve_inside_the_workspace(tree: Tree, case: str) -> None:
    path, expected = ALLOWED[case]
    resolved = tree.ws.resolve(_fill(path, tree))
    assert resolved.relative == expected
    assert resolved.absolute.is_relative_to(tree.root)
    assert resolved.exists


@pytest.mark.parametrize("case", list(ALLOWED_NEW), ids=list(ALLOWED_NEW))
def test_new_files_with_odd_but_harmless_names_can_be_created_inside(tree: Tree, case: str) -> None:
    path, expected = ALLOWED_NEW[case]
    resolved = tree.ws.resolve(path, for_write=True, must_exist=False)
    assert resolved.relative == expected
    assert not resolved.exists
    result = tree.editor.edit(path, "replace", content="ok\n")
    assert result.created
    assert (tree.root / expected).read_text() == "ok\n"


@pytest.mark.parametrize("case", list(DENIED), ids=list(DENIED))
def test_deny_globs_protect_secrets_and_repository_internals(tree: Tree, case: str) -> None:
    path = _fill(DENIED[case], tree)
    with pytest.raises(WorkspaceError, match="protected"):
        tree.ws.resolve(path, for_write=True, must_exist=False)
    with pytest.raises(WorkspaceError, match="protected"):
        tree.ws.resolve(path, must_exist=False)


def test_deny_rules_can_be_replaced_by_the_operator(tree: Tree) -> None:
    open_ws = Workspace(tree.root, deny_globs=())
    assert open_ws.resolve(".git/config").relative == ".git/config"
    custom = Workspace(tree.root, deny_globs=("build/**", "*.lock", "data/[!p]*.csv"))
    assert custom.denied_by("build") == "build/**"
    assert custom.denied_by("build/out/x.o") == "build/**"
    assert custom.denied_by("poetry.lock") == "*.lock"
    assert custom.denied_by("sub/poetry.lock") is None  # no "**/": only at the root
    assert custom.denied_by("data/raw.csv") == "data/[!p]*.csv"
    assert custom.denied_by("data/public.csv") is None
    assert custom.denied_by("sub/.env") is None
    assert "**/.env" in DEFAULT_DENY


def test_refusals_say_how_to_fix_the_path(tree: Tree) -> None:
    cases = {
        "../x": "above the workspace root",
        "/etc/passwd": "relative to the workspace root",
        "link_out/secret.txt": "outside the workspace through a symbolic link",
        "sub/fiel.txt": "did you mean: sub/file.txt",
        "nowhere/x.txt": "directory nowhere does not exist",
        "sub/file.txt/": "drop the trailing slash",
        "loop1": "link loop",
        "": "give a path relative to the workspace root",
    }
    for path, fragment in cases.items():
        with pytest.raises(WorkspaceError, match=fragment.replace(".", r"\.")):
            tree.ws.resolve(path)


def test_writes_refuse_directories_the_root_and_reserved_temp_names(tree: Tree) -> None:
    for path, fragment in (
        ("sub", "is a directory"),
        (".", "workspace root is a directory"),
        ("sub/", "names a directory"),
        ("sub/.toolrt-tmp-1", "reserved"),
    ):
        with pytest.raises(WorkspaceError, match=fragment):
            tree.ws.resolve(path, for_write=True, must_exist=False)


def test_workspace_given_through_a_symlink_accepts_both_spellings_of_absolute_paths(tmp_path: Path) -> None:
    real = tmp_path / "real_ws"
    (real / "sub").mkdir(parents=True)
    (real / "sub" / "f.txt").write_text("x")
    (tmp_path / "real_ws-evil").mkdir()
    os.symlink(real, tmp_path / "ws_link")
    ws = Workspace(tmp_path / "ws_link")
    assert ws.root == real.resolve()
    assert ws.resolve(str(tmp_path / "ws_link" / "sub" / "f.txt")).relative == "sub/f.txt"
    assert ws.resolve(str(real / "sub" / "f.txt")).relative == "sub/f.txt"
    for outside in (
        str(tmp_path / "real_ws-evil"),
        str(tmp_path / "ws_link-evil"),
        str(tmp_path / "ws_link") + "/../real_ws-evil",
    ):
        with pytest.raises(WorkspaceError):
            ws.resolve(outside, must_exist=False)


def test_the_root_is_resolved_once_so_swapping_its_path_later_changes_nothing(tmp_path: Path) -> None:
    real = tmp_path / "real_ws"
    real.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "f.txt").write_text("elsewhere")
    (real / "f.txt").write_text("workspace")
    os.symlink(real, tmp_path / "ws_link")
    ws = Workspace(tmp_path / "ws_link")
    os.unlink(tmp_path / "ws_link")
    os.symlink(tmp_path / "elsewhere", tmp_path / "ws_link")
    assert ws.resolve("f.txt").absolute == real / "f.txt"


# -- property: whatever is built from hostile pieces never resolves outside ----------

_PIECES = [
    "..",
    ".",
    "",
    "sub",
    "link_out",
    "link_in",
    "chain1",
    "chain_in1",
    "up",
    "upup",
    "file.txt",
    "secret.txt",
    "ws-evil",
    "outside",
    "loop1",
    "dangling_out",
    "%2e%2e",
    "ws",
]
_FUZZ_TREE: dict[str, Tree] = {}


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    pieces=st.lists(st.sampled_from(_PIECES), min_size=1, max_size=8), absolute=st.booleans(), for_write=st.booleans()
)
def test_no_combination_of_hostile_pieces_resolves_outside(
    tmp_path_factory: pytest.TempPathFactory, pieces: list[str], absolute: bool, for_write: bool
) -> None:
    if "tree" not in _FUZZ_TREE:
        _FUZZ_TREE["tree"] = build_tree(tmp_path_factory.mktemp("fuzz"))
    tree = _FUZZ_TREE["tree"]
    path = "/".join(pieces)
    if absolute:
        path = f"{tree.root}/{path}"
    try:
        resolved = tree.ws.resolve(path, for_write=for_write, must_exist=False)
    except WorkspaceError:
        return
    # An independent check: the kernel's view of the resolved path is inside the root.
    real = os.path.realpath(resolved.absolute)
    assert os.path.commonpath([real, str(tree.root)]) == str(tree.root), (path, real)
    assert Path(real).is_relative_to(tree.root)
