"""decode_arguments / check_object: every odd argument gives a dict or a message, never an exception."""

from __future__ import annotations

import json

import pytest

from runtime.adapters.arguments import check_object, decode_arguments


def _error(raw, **limits) -> str:
    args, error = decode_arguments(raw, **limits)
    assert args is None
    assert isinstance(error, str) and error
    error.encode("utf-8")  # every message can be sent to a provider as is
    return error


# --- what decodes ------------------------------------------------------------


@pytest.mark.parametrize("raw", [None, "", "   ", "\n\t"])
def test_missing_or_blank_arguments_mean_an_empty_object(raw):
    assert decode_arguments(raw) == ({}, None)


def test_an_object_decodes_to_a_dict():
    assert decode_arguments('{"path": "src/app.py", "limit": 10, "flags": [true, null, 1.5]}') == (
        {"path": "src/app.py", "limit": 10, "flags": [True, None, 1.5]},
        None,
    )


def test_nul_characters_in_strings_are_allowed_escaped_or_raw():
    assert decode_arguments('{"path": "a\\u0000b"}') == ({"path": "a\x00b"}, None)
    assert decode_arguments('{"path": "a\x00b"}') == ({"path": "a\x00b"}, None)


def test_a_raw_newline_inside_a_string_is_accepted():
    assert decode_arguments('{"text": "line 1\nline 2"}') == ({"text": "line 1\nline 2"}, None)


def test_a_surrogate_pair_is_one_valid_character():
    assert decode_arguments('{"emoji": "\\ud83d\\ude00"}') == ({"emoji": "\U0001f600"}, None)


def test_bytes_and_already_decoded_objects_are_accepted():
    assert decode_arguments(b'{"a": 1}') == ({"a": 1}, None)  # type: ignore[arg-type]
    assert decode_arguments({"a": 1}) == ({"a": 1}, None)  # type: ignore[arg-type]


# --- what does not -------------------------------------------------------------


def test_bad_json_names_the_error_its_position_and_an_excerpt():
    error = _error('{"path": "a" "b"}')
    assert error.startswith("arguments are not valid JSON: Expecting ',' delimiter at line 1 column 14: ")
    assert '`{"path": "a" "b"}`' in error


def test_the_excerpt_is_short_and_centred_on_the_error():
    raw = '{"text": "' + "x" * 500 + '" "oops": 1, "tail": "' + "y" * 500 + '"}'
    error = _error(raw)
    excerpt = error.split("`")[1]
    assert len(excerpt) <= 60
    assert '" "oops"' in excerpt


def test_the_excerpt_escapes_control_characters_and_surrogates():
    error = _error('{"a": 1,\n\ud800 "b"}')
    assert "\n" not in error
    assert "\\n" in error and "\\ud800" in error


def test_a_truncated_stream_says_where_it_stopped():
    assert "line 1 column 10" in _error('{"path": ')


@pytest.mark.parametrize(
    ("raw", "got"),
    [
        ("[1, 2]", "got a list"),
        ("3", "got a number"),
        ("2.5", "got a number"),
        ('"a"', "got a string"),
        ("null", "got null"),
        ("true", "got a boolean"),
    ],
)
def test_arguments_that_are_not_an_object_are_rejected_with_their_type(raw, got):
    error = _error(raw)
    assert "arguments must be a JSON object" in error
    assert error.endswith(got)


@pytest.mark.parametrize(
    ("raw", "literal", "where"),
    [
        ('{"a": NaN}', "NaN", "/a"),
        ('{"a": [1, Infinity]}', "Infinity", "/a/1"),
        ('{"b": {"c": -Infinity}}', "-Infinity", "/b/c"),
    ],
)
def test_nan_and_infinity_literals_are_rejected_with_their_pointer(raw, literal, where):
    error = _error(raw)
    assert f"contain {literal} at {where}" in error


def test_a_number_that_overflows_a_double_is_rejected():
    assert "too large" in _error('{"n": 1e999}')


def test_an_integer_with_too_many_digits_is_rejected_not_raised():
    error = _error('{"n": ' + "9" * 5000 + "}")
    assert "5,000 digits" in error and "/n" in error


def test_a_repeated_key_is_rejected():
    assert 'repeats the key "a"' in _error('{"a": 1, "a": 2}')
    assert "at /x" in _error('{"x": {"a": 1, "a": 2}}')


def test_depth_ten_thousand_is_a_clean_error_not_a_recursion_error():
    error = _error("[" * 10_000 + "]" * 10_000)
    assert "nested too deeply" in error and "10,000 levels" in error
    error = _error('{"a": ' + '{"b": ' * 10_000 + "1" + "}" * 10_001)
    assert "nested too deeply" in error


def test_depth_is_counted_exactly_at_the_limit():
    def nested(depth: int) -> str:
        return '{"a": ' * (depth - 1) + "{}" + "}" * (depth - 1)

    assert decode_arguments(nested(64))[1] is None
    assert "nested too deeply" in _error(nested(65))
    assert decode_arguments(nested(5), max_depth=5)[1] is None
    assert "nested too deeply" in _error(nested(6), max_depth=5)


def test_brackets_inside_strings_do_not_count_as_nesting():
    raw = json.dumps({"pattern": "[" * 500 + "{" * 500, "escaped": '\\"[[[['})
    assert decode_arguments(raw) == (json.loads(raw), None)


def test_unbalanced_deep_brackets_never_raise():
    assert decode_arguments("[" * 100_000)[1]
    assert decode_arguments('{"a": "' + "[" * 100_000)[1]


def test_arguments_over_the_size_limit_are_rejected_before_parsing():
    error = _error('{"content": "' + "x" * 10_000_000 + '"}')
    assert "too large" in error and "1,000,000 bytes" in error


def test_size_is_counted_in_utf8_bytes():
    raw = json.dumps({"t": "é" * 40}, ensure_ascii=False)  # 40 characters, 80 bytes of text
    assert decode_arguments(raw, max_bytes=100)[1] is None
    assert "too large" in _error(raw, max_bytes=60)


def test_a_lone_surrogate_is_rejected_with_its_pointer():
    error = _error('{"path": "a\\ud800b"}')
    assert "lone UTF-16 surrogate (\\ud800) at /path" in error
    error = _error('{"list": ["ok", "\\udfff"]}')
    assert "(\\udfff) at /list/1" in error


def test_a_lone_surrogate_in_a_key_is_rejected():
    error = _error('{"ke\\ud800y": 1}')
    assert "in a key at /ke\\ud800y" in error


def test_pointers_escape_slash_and_tilde():
    assert "at /a~1b~0c" in _error('{"a/b~c": NaN}')


@pytest.mark.parametrize("raw", [5, 2.5, ["a"], object()])
def test_arguments_of_another_type_are_rejected(raw):
    assert "must be a JSON string" in _error(raw)


def test_invalid_utf8_bytes_are_rejected():
    assert "not valid UTF-8" in _error(b'{"a": "\xff"}')


# --- check_object (Anthropic input) ---------------------------------------------


def test_check_object_accepts_a_plain_json_object():
    assert check_object({"a": [1, 2.5, None, True, {"b": "c"}], "t": ("x", "y")}) is None


@pytest.mark.parametrize(
    ("value", "needle"), [([1], "got a list"), ("x", "got a string"), (None, "got null"), (3, "got a number")]
)
def test_check_object_rejects_non_objects(value, needle):
    error = check_object(value)
    assert error and "must be a JSON object" in error and needle in error


@pytest.mark.parametrize(
    ("value", "where"), [(float("nan"), "NaN"), (float("inf"), "Infinity"), (float("-inf"), "-Infinity")]
)
def test_check_object_rejects_non_finite_numbers(value, where):
    assert f"contain {where} at /x/0" in check_object({"x": [value]})


def test_check_object_rejects_lone_surrogates_in_values_and_keys():
    assert "at /a/b" in check_object({"a": {"b": "\ud800"}})
    assert "in a key" in check_object({"\udc00": 1})


def test_check_object_measures_depth_without_recursion():
    value: dict = {}
    node = value
    for _ in range(10_000):
        node["a"] = {}
        node = node["a"]
    error = check_object(value)
    assert error and "nested too deeply" in error


def test_check_object_survives_a_cycle():
    value: dict = {}
    value["self"] = value
    assert "nested too deeply" in check_object(value)


def test_check_object_rejects_values_that_are_not_json():
    assert "a set at /a" in check_object({"a": {1}})
    assert "a bytes at /a" in check_object({"a": b"x"})
    assert "not a string" in check_object({1: "a"})


def test_check_object_limits_size():
    assert "too large" in check_object({"a": "x" * 2_000_000})
    assert check_object({"a": "x" * 50}, max_bytes=40) is not None


@pytest.mark.parametrize(
    ("raw", "may_hold_null"),
    [
        ('{"a": null}', True),
        ('{"a": [1, {"b": [null]}]}', True),
        ('{"a": {"b": {"c": null}}}', True),
        ('{"a": 1, "b": "null", "c": [true, 1.5, "x"]}', False),
        ('{"null": "None"}', False),
        ("", False),
        ("{}", False),
        (None, False),
        ({"a": 1}, True),  # already decoded by the client: not walked by the fast path, so assumed
        ('{"a": 1e999}', True),  # refused: nothing to undo either way
        ("[null]", True),
        ("not json", True),
    ],
)
def test_decoding_notes_whether_the_arguments_may_hold_a_null(raw: object, may_hold_null: bool) -> None:
    from runtime.adapters.arguments import decode_noting_nulls

    args, problem, maybe_null = decode_noting_nulls(raw)  # type: ignore[arg-type]
    assert (args, problem) == decode_arguments(raw)  # type: ignore[arg-type]
    if args is not None:
        assert maybe_null is may_hold_null
    else:
        assert problem
