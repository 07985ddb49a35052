"""Static facts read from CEL tokens: roots, args paths, macro and bracket depth, regex literals."""

from __future__ import annotations

import pytest

from runtime.policy.celrefs import LexError, analyse, offset_to_line_col, string_value, tokenize


def roots(source: str) -> list[str]:
    return [ref.name for ref in analyse(source).roots]


def paths(source: str) -> list[tuple[str, ...]]:
    return [path.fields for path in analyse(source).args_paths]


# ---------------------------------------------------------------------------
# roots


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("args.a == 1", ["args"]),
        ('tool.name == "x" && session.id == call.id', ["tool", "session", "call"]),
        ("args.l.all(x, x > 0)", ["args"]),
        ("args.m.all(k, v, v > k)", ["args"]),
        ("args.l.exists(x, args.k.exists(y, y == x))", ["args", "args"]),
        ("args.l.map(item, item * 2).filter(doubled, doubled > 2).size() > 0", ["args"]),
        ("size(args.l) > 0 && int(args.n) > 0", ["args", "args"]),
        ("has(args.q)", ["args"]),
        ('args.a.startsWith("x") && args.b.size() > 1', ["args", "args"]),
        ("tool.name.args == 1", ["tool"]),
        ("true && false || null == null", []),
        ('"a" in args', ["args"]),
        ("foo == 1", ["foo"]),
        ('commands.exists(c, c[0] == "rm")', ["commands"]),
    ],
)
def test_roots_are_the_free_names_read(source: str, expected: list[str]) -> None:
    assert roots(source) == expected


def test_root_offsets_point_at_the_name() -> None:
    source = 'args.a == 1 &&\n  sesion.id == "x"'
    found = analyse(source).roots
    assert [(r.name, r.offset) for r in found] == [("args", 0), ("sesion", 17)]
    assert offset_to_line_col(source, found[1].offset) == (2, 3)


def test_a_comprehension_variable_used_outside_its_comprehension_is_a_root() -> None:
    # `foo` is unbound after the comprehension: the fast engine rejects it at compile time,
    # so lint must report it with the portable engine too.
    assert roots("args.l.all(foo, foo > 0) && foo == 1") == ["args", "foo"]


def test_a_comprehension_variable_named_args_does_not_hide_the_receiver() -> None:
    assert roots("args.l.all(args, args > 0)") == ["args"]


# ---------------------------------------------------------------------------
# args paths


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("args.a", [("a",)]),
        ("args.a.b.c == 1", [("a", "b", "c")]),
        ('args["a"]', [("a",)]),
        ('args["a"]["b"] == 1', [("a", "b")]),
        ("args['a'].b", [("a", "b")]),
        ('args.m["k"].z', [("m", "k", "z")]),
        ('"a" in args', [("a",)]),
        ("'a' in args", [("a",)]),
        ('"a" in args.x', [("x",)]),
        ('"a" in args["b"]', [("b",)]),
        ("args.a.size() > 1", [("a",)]),
        ('args.a.b.startsWith("x")', [("a", "b")]),
        ("args.l.all(x, x > 0)", [("l",)]),
        ("size(args.l) > 0", [("l",)]),
        ("has(args.q)", [("q",)]),
        ("args.a[0].b", [("a",)]),
        ("args[0]", []),
        ("args", []),
        ("args[args.k]", [("k",)]),
        ('"k" in args && args.k', [("k",), ("k",)]),
        ("args.l.exists(x, args.k.exists(y, y == x))", [("l",), ("k",)]),
    ],
)
def test_args_paths(source: str, expected: list[tuple[str, ...]]) -> None:
    assert paths(source) == expected


@pytest.mark.parametrize(
    ("source", "offset"),
    [("args.limit > 1", 5), ('args["limit"] > 1', 5), ('"limit" in args', 0), ("  size(args.limit)", 12)],
)
def test_args_path_offset_is_where_the_first_field_starts(source: str, offset: int) -> None:
    (path,) = analyse(source).args_paths
    assert path.fields == ("limit",)
    assert path.offset == offset


def test_a_non_literal_key_ends_the_path() -> None:
    assert paths('args["a" + "b"]') == []
    assert paths('args.m[b"k"]') == [("m",)]


# ---------------------------------------------------------------------------
# strings and comments are not references


@pytest.mark.parametrize(
    "source",
    [
        'tool.name == "args.x"',
        "tool.name == 'args.x'",
        'tool.name == r"args.x"',
        "tool.name == R'args.x'",
        "tool.name == '''args.x'''",
        'tool.name == """args.x\nsession.id"""',
        'tool.name == "escaped \\" args.x"',
        'tool.name == b"args.x"',
        "tool.name == 'x' // args.x session.id",
    ],
)
def test_strings_and_comments_are_not_references(source: str) -> None:
    facts = analyse(source)
    assert [r.name for r in facts.roots] == ["tool"]
    assert facts.args_paths == ()


def test_a_comment_ends_at_the_end_of_its_line() -> None:
    source = "args.a == 1 // reads args.b\n  && args.c == 2"
    assert paths(source) == [("a",), ("c",)]


def test_raw_string_keeps_backslashes() -> None:
    (token,) = tokenize(r'r"\d+"')
    assert token.kind == "string"
    assert string_value(token) == r"\d+"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('"a"', "a"),
        ("'a'", "a"),
        ('"a\\"b"', 'a"b'),
        ("'''a\nb'''", "a\nb"),
        ('b"x"', None),
        ('rb"x"', None),
        ('R"\\w"', "\\w"),
    ],
)
def test_string_value(text: str, value: str | None) -> None:
    (token,) = tokenize(text)
    assert string_value(token) == value


# ---------------------------------------------------------------------------
# depths


@pytest.mark.parametrize(
    ("source", "depth"),
    [
        ("args.a == 1", 0),
        ("args.l.all(x, x > 0)", 1),
        ("args.l.map(x, x + 1).filter(y, y > 0)", 1),
        ("args.l.exists(x, x.all(y, y > 0))", 2),
        ("args.l.exists(x, x.all(y, y.exists_one(z, z == 1)))", 3),
        ("args.l.all(x, (x > 0)) && args.m.exists(k, k == 'a')", 1),
        ("size(args.l) > 0 && all(1)", 0),
    ],
)
def test_macro_depth_counts_nested_comprehensions(source: str, depth: int) -> None:
    assert analyse(source).macro_depth == depth


@pytest.mark.parametrize(
    ("source", "depth"),
    [
        ("args.a", 0),
        ("((args.a))", 2),
        ('[[{"a": [1]}]]', 4),
        ("f(a)[0] + g((b))", 2),
        ('"((((" == args.a', 0),
    ],
)
def test_nesting_depth_counts_open_brackets(source: str, depth: int) -> None:
    assert analyse(source).nesting_depth == depth


# ---------------------------------------------------------------------------
# regex literals


@pytest.mark.parametrize(
    ("source", "literals"),
    [
        ("args.p.matches('^a+$')", ["'^a+$'"]),
        ('args.p.matches(r"\\d+")', ['r"\\d+"']),
        ('args.p.matches("a") || args.q.matches("b")', ['"a"', '"b"']),
        ('matches(args.p, "x")', []),
        ("args.p.matches(args.q)", []),
        ('args.p.contains("x")', []),
    ],
)
def test_regex_literals_are_the_patterns_passed_to_matches(source: str, literals: list[str]) -> None:
    assert [r.name for r in analyse(source).regex_literals] == literals


def test_regex_literal_offset_points_at_the_string() -> None:
    source = 'args.p.matches("(a+)+")'
    (literal,) = analyse(source).regex_literals
    assert source[literal.offset :].startswith('"(a+)+"')


# ---------------------------------------------------------------------------
# lexing


def test_tokenize_kinds_and_offsets() -> None:
    tokens = tokenize('args.n >= 1.5e-3 && "x"')
    assert [(t.kind, t.text, t.offset) for t in tokens] == [
        ("ident", "args", 0),
        ("punct", ".", 4),
        ("ident", "n", 5),
        ("punct", ">=", 7),
        ("number", "1.5e-3", 10),
        ("punct", "&&", 17),
        ("string", '"x"', 20),
    ]


@pytest.mark.parametrize(
    ("source", "offset"), [('"abc', 0), ("'abc", 0), ('"""abc', 0), ('args.a == "a\nb"', 10), ("r'abc", 1)]
)
def test_unterminated_string_raises_lex_error(source: str, offset: int) -> None:
    with pytest.raises(LexError, match="unterminated string literal") as caught:
        analyse(source)
    assert caught.value.offset == offset


@pytest.mark.parametrize(("source", "offset"), [("args.a # 1", 7), ("args.a == `x`", 10), ("args.a ; 1", 7)])
def test_unexpected_character_raises_lex_error(source: str, offset: int) -> None:
    with pytest.raises(LexError, match="unexpected character") as caught:
        tokenize(source)
    assert caught.value.offset == offset


@pytest.mark.parametrize(("offset", "line_col"), [(0, (1, 1)), (3, (1, 4)), (4, (2, 1)), (6, (2, 3))])
def test_offset_to_line_col_is_one_based(offset: int, line_col: tuple[int, int]) -> None:
    assert offset_to_line_col("abc\ndef", offset) == line_col


def test_matches_calls_are_renamed_for_the_cached_regex_function_but_strings_are_not() -> None:
    from runtime.policy.celfast import _with_cached_matches

    source = "args.p.matches('x') || matches(args.q, 'matches(y)') || args.matches == 1"
    rewritten = _with_cached_matches(source)
    assert rewritten == "args.p.rxmatch('x') || rxmatch(args.q, 'matches(y)') || args.matches == 1"
    assert len(rewritten) == len(source)  # error columns stay those of the source


def test_the_cached_regex_function_cannot_be_called_by_name() -> None:
    import pytest as _pytest

    from runtime.errors import CelCompileError
    from runtime.policy.cel import get_engine

    with _pytest.raises(CelCompileError):
        get_engine("fast").compile('rxmatch("x", "x")', ("args",))


def test_root_scoped_names_are_variables_too() -> None:
    from runtime.policy.celrefs import analyse

    assert {r.name for r in analyse('"path" in .args && .args.path == "x"').roots} == {"args"}
    assert {r.name for r in analyse("true || .session.mode == 'plan'").roots} == {"session"}
    assert {r.name for r in analyse("args.path.size() > 1").roots} == {"args"}  # a field after an operand stays a field
