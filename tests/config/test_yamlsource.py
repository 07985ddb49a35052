"""parse_yaml: plain data, a position for every node, and refusals of unsafe YAML."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable

import pytest

from runtime.config.compile import BuildResult
from runtime.config.problems import Location
from runtime.config.yamlsource import ParsedFile, SourceDocument, parse_yaml

F = "f.yaml"


def parse(text: str) -> ParsedFile:
    return parse_yaml(textwrap.dedent(text), F)


def only_document(text: str) -> SourceDocument:
    parsed = parse(text)
    assert parsed.problems == []
    assert len(parsed.documents) == 1
    return parsed.documents[0]


def refusal(text: str) -> tuple[int, int, str]:
    """The single problem of ``text`` as (line, col, code); no document survives."""
    parsed = parse_yaml(text, F)
    assert parsed.documents == []
    assert len(parsed.problems) == 1, [str(p) for p in parsed.problems]
    problem = parsed.problems[0]
    assert problem.location.file == F
    assert problem.message
    return (problem.location.line, problem.location.col, problem.code)


# ---------------------------------------------------------------------------
# refusals


def _bomb() -> str:
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]']
    for prev, name in zip("abcde", "bcdef", strict=True):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 10) + "]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("a: !!python/object:os.system x\n", (1, 4, "yaml-tag"), id="python-object-tag"),
        pytest.param("a: !!python/tuple [1, 2]\n", (1, 4, "yaml-tag"), id="python-tag-on-sequence"),
        pytest.param("ok: 1\nb:\n  c: !secret x\n", (3, 6, "yaml-tag"), id="custom-local-tag"),
        pytest.param("a: !custom {x: 1}\n", (1, 4, "yaml-tag"), id="custom-tag-on-mapping"),
        pytest.param("a: 1\nb: 2\na: 3\n", (3, 1, "yaml-duplicate-key"), id="duplicate-key"),
        pytest.param("outer:\n  x: 1\n  y: 2\n  x: 3\n", (4, 3, "yaml-duplicate-key"), id="nested-duplicate-key"),
        pytest.param("a: " + "[" * 70 + "]" * 70 + "\n", (1, 68, "yaml-too-deep"), id="too-deep"),
        pytest.param("a: 1\nb: .nan\n", (2, 4, "yaml-value"), id="nan"),
        pytest.param("a:\n  - -.inf\n", (2, 5, "yaml-value"), id="negative-infinity"),
        pytest.param("a: .inf\n", (1, 4, "yaml-value"), id="infinity"),
        pytest.param("a: 1\n b: 2\n", (2, 3, "yaml-syntax"), id="bad-indentation"),
        pytest.param(
            "a: [1, 2\n", (1, 4, "yaml-syntax"), id="unclosed-flow-sequence"
        ),  # where it opened, not where the file ends
        pytest.param("a: {b: 1\nc: 2\n", (1, 4, "yaml-syntax"), id="unclosed-flow-mapping"),
        pytest.param('a: 1\nb: "never closed\nc: 2\nd: 3\n', (2, 4, "yaml-syntax"), id="unterminated-double-quote"),
        pytest.param(
            "a: 1\nb: 'never closed\nc: 2\n---\nd: 3\n",
            (2, 4, "yaml-syntax"),
            id="unterminated-single-quote-before-a-document",
        ),
        pytest.param("? [1, 2]\n: x\n", (1, 3, "yaml-key"), id="sequence-key"),
        pytest.param("{a: 1}: x\n", (1, 1, "yaml-key"), id="mapping-key"),
        pytest.param("a: &x 1\nb:\n  <<: *x\n", (3, 3, "yaml-merge"), id="merge-of-scalar"),
    ],
)
def test_unsafe_or_invalid_yaml_is_refused_at_its_position(text: str, expected: tuple[int, int, str]) -> None:
    assert refusal(text) == expected


def test_duplicate_key_message_names_the_first_occurrence() -> None:
    parsed = parse_yaml("a: 1\nb: 2\na: 3\n", F)
    assert "`a` (first at line 1)" in parsed.problems[0].message


def test_tag_message_says_to_remove_the_tag() -> None:
    parsed = parse_yaml("a: !!python/object:os.system x\n", F)
    assert "tag:yaml.org,2002:python/object:os.system" in parsed.problems[0].message
    assert parsed.problems[0].message.endswith("Remove the tag.")


def test_alias_expansion_bomb_is_refused_not_expanded() -> None:
    # 10**6 leaves once expanded; the budget is 200,000 nodes per document.
    code = refusal(_bomb())[2]
    assert code == "yaml-alias-bomb"


def test_a_refused_document_does_not_hide_the_others() -> None:
    parsed = parse_yaml("a: 1\n---\nb: !!python/name:os.system x\n---\nc: 3\n", F)
    assert [d.data for d in parsed.documents] == [{"a": 1}, {"c": 3}]
    assert [(p.location.line, p.location.col, p.code) for p in parsed.problems] == [(3, 4, "yaml-tag")]


def test_1000_deep_flow_nesting_is_too_deep_not_a_recursion_error() -> None:
    parsed = parse_yaml("a: " + "[" * 1000 + "]" * 1000 + "\n", F)
    assert parsed.documents == []
    assert [p.code for p in parsed.problems] == ["yaml-too-deep"]


def test_1000_deep_flow_mapping_nesting_is_too_deep() -> None:
    parsed = parse_yaml("a: " + "{b: " * 1000 + "1" + "}" * 1000 + "\n", F)
    assert [p.code for p in parsed.problems] == ["yaml-too-deep"]


def test_very_deep_flow_nesting_does_not_crash_the_process() -> None:
    script = (
        "from runtime.config.yamlsource import parse_yaml\nr = parse_yaml('a: ' + '[' * 30000 + ']' * 30000, "
        "'f')\nprint(*[p.code for p in r.problems])\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.split() == ["yaml-too-deep"]


# ---------------------------------------------------------------------------
# data


def test_scalars_become_json_compatible_values() -> None:
    doc = only_document(
        """\
        s: text
        i: 0x1F
        o: 0o17
        neg: -1_000
        f: 1.5e3
        t: true
        n: null
        tilde: ~
        date: 2001-12-14
        """
    )
    assert doc.data == {
        "s": "text",
        "i": 31,
        "o": 15,
        "neg": -1000,
        "f": 1500.0,
        "t": True,
        "n": None,
        "tilde": None,
        "date": "2001-12-14",
    }


def test_non_string_scalar_keys_become_strings() -> None:
    doc = only_document("1: a\ntrue: b\n")
    assert doc.data == {"1": "a", "true": "b"}


def test_merge_key_copies_keys_and_explicit_keys_win() -> None:
    doc = only_document(
        """\
        base: &b {x: 1, y: 2}
        c:
          <<: *b
          y: 3
        """
    )
    assert doc.data["c"] == {"x": 1, "y": 3}


def test_merge_key_list_earlier_mappings_win() -> None:
    doc = only_document(
        """\
        b1: &b1 {x: 1}
        b2: &b2 {x: 2, z: 5}
        c:
          <<: [*b1, *b2]
        """
    )
    assert doc.data["c"] == {"x": 1, "z": 5}


def test_trailing_empty_document_yields_no_data_and_no_problem() -> None:
    parsed = parse_yaml("a: 1\n---\n", F)
    assert parsed.problems == []
    assert [d.data for d in parsed.documents if d.data is not None] == [{"a": 1}]


def test_document_index_counts_empty_documents() -> None:
    parsed = parse_yaml("---\n---\na: 1\n---\n", F)
    assert [(d.index, d.data) for d in parsed.documents if d.data is not None] == [(1, {"a": 1})]


def test_empty_documents_are_skipped_by_the_loader(lint: Callable[..., BuildResult]) -> None:
    text = "---\napiVersion: toolrt/v1\nkind: OutputProfile\nmetadata: {name: p}\nspec: {max_chars: 10}\n---\n---\n"
    result = lint({"c.yaml": text})
    assert result.problems == ()
    assert result.documents == 1


def test_content_hash_ignores_formatting_and_key_order() -> None:
    one = only_document("a: 1\nb: [x, y]\n")
    two = only_document("# comment\nb: ['x', \"y\"]\na: 1\n")
    three = only_document("a: 2\nb: [x, y]\n")
    assert one.content_hash == two.content_hash
    assert one.content_hash != three.content_hash


# ---------------------------------------------------------------------------
# positions

NESTED = """\
apiVersion: toolrt/v1
kind: Tool
spec:
  input_schema:
    properties:
      path: {type: string, maxLength: 10}
  list:
    - a
    - b: 1
      c: [x, "y"]
"""


@pytest.mark.parametrize(
    ("path", "value_at", "key_at"),
    [
        pytest.param((), (1, 1), (1, 1), id="root"),
        pytest.param(("kind",), (2, 7), (2, 1), id="top-level"),
        pytest.param(("spec",), (4, 3), (3, 1), id="block-mapping-value"),
        pytest.param(("spec", "input_schema", "properties", "path"), (6, 13), (6, 7), id="flow-mapping"),
        pytest.param(
            ("spec", "input_schema", "properties", "path", "maxLength"), (6, 39), (6, 28), id="inside-flow-mapping"
        ),
        pytest.param(("spec", "list", 1), (9, 7), (9, 7), id="sequence-item"),
        pytest.param(("spec", "list", 1, "c", 1), (10, 14), (10, 14), id="flow-sequence-item"),
    ],
)
def test_locate_gives_value_and_key_positions(
    path: tuple[str | int, ...], value_at: tuple[int, int], key_at: tuple[int, int]
) -> None:
    doc = only_document(NESTED)
    assert doc.locate(path) == Location(F, *value_at)
    assert doc.locate(path, key=True) == Location(F, *key_at)


def test_locate_of_a_missing_path_falls_back_to_the_nearest_ancestor() -> None:
    doc = only_document(NESTED)
    assert doc.locate(("spec", "nope", "deeper")) == Location(F, 4, 3)
    assert doc.locate(("spec", "list", 7)) == Location(F, 8, 5)


def test_positions_are_counted_per_file_across_documents() -> None:
    parsed = parse_yaml("a: 1\n---\nb:\n  c: x\n", F)
    second = parsed.documents[1]
    assert second.index == 1
    assert second.locate(("b", "c")) == Location(F, 4, 6)
    assert second.locate(("b", "c"), key=True) == Location(F, 4, 3)


SCALARS = """\
spec:
  plain: args.path == 1
  quoted: "args.path == 1"
  single: 'args.x'
  block: |
    has(args.path) &&
    args.path.size() > 3
  folded: >-
    one
    two
  nested: |
    has(args.path) &&
      args.path.size() > 3
"""


@pytest.mark.parametrize(
    ("key", "inner", "expected"),
    [
        pytest.param("plain", (1, 1), (2, 10), id="plain-start"),
        pytest.param("plain", (1, 6), (2, 15), id="plain-inside"),
        pytest.param("quoted", (1, 6), (3, 17), id="double-quoted-skips-the-quote"),
        pytest.param("single", (1, 6), (4, 17), id="single-quoted-skips-the-quote"),
        pytest.param("block", (1, 1), (6, 5), id="literal-block-first-line"),
        pytest.param("block", (2, 6), (7, 10), id="literal-block-second-line"),
        pytest.param("block", (9, 1), (7, 25), id="literal-block-past-the-end-points-after-the-text"),
        pytest.param("folded", (1, 2), (9, 6), id="folded-block"),
        pytest.param("nested", (1, 5), (12, 9), id="literal-block-first-line-of-indented-text"),
    ],
)
def test_locate_in_scalar_maps_a_position_in_the_text_to_the_file(
    key: str, inner: tuple[int, int], expected: tuple[int, int]
) -> None:
    doc = only_document(SCALARS)
    assert doc.locate_in_scalar(("spec", key), *inner) == Location(F, *expected)


def test_locate_in_scalar_on_a_more_indented_block_line_uses_the_block_indentation() -> None:
    doc = only_document(SCALARS)
    # text line 2 is "  args.path.size() > 3": col 3 is the `a` of args, at file col 7.
    assert doc.locate_in_scalar(("spec", "nested"), 2, 3) == Location(F, 13, 7)


def test_locate_in_scalar_of_a_non_string_value_points_at_the_value() -> None:
    doc = only_document("spec:\n  n: 12\n")
    assert doc.locate_in_scalar(("spec", "n"), 1, 2) == Location(F, 2, 6)


MERGED = """\
base: &b
  x: 1
  when: 'a.b'
c:
  <<: *b
  when: 'zz.y'
"""


def test_merged_keys_are_located_at_the_anchor() -> None:
    doc = only_document(MERGED)
    assert doc.data["c"] == {"x": 1, "when": "zz.y"}
    assert doc.locate(("c", "x")) == Location(F, 2, 6)
    assert doc.locate(("c", "when")) == Location(F, 6, 9)


def test_explicit_key_overriding_a_merge_keeps_its_own_key_position() -> None:
    doc = only_document(MERGED)
    assert doc.locate(("c", "when"), key=True) == Location(F, 6, 3)


def test_explicit_value_overriding_a_merge_is_located_in_its_own_text() -> None:
    doc = only_document(MERGED)
    assert doc.locate_in_scalar(("c", "when"), 1, 1) == Location(F, 6, 10)
