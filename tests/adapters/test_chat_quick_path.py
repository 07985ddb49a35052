"""The quick reading of a Chat Completions tool call (runtime.adapters.openai._quick_chat_call
and runtime.adapters.arguments.quick_decode) gives exactly the Call the full reading gives,
wherever it answers; and it answers for the usual call."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_decode_plain_path import CASES

from runtime.adapters import anthropic, arguments, openai
from runtime.adapters._common import text_of
from runtime.adapters.arguments import decode_noting_nulls, quick_decode
from runtime.records import Call, Status, ToolResult

USUAL = '{"path": "src/app.py", "limit": 10, "mode": "fast", "tags": ["a"], "dry_run": false}'

RAWS: list[Any] = [
    *CASES,
    USUAL,
    '{"a": 1}\n',
    '{"a": 1} ',
    '{"a": 1}\x0b',
    '{"a": 1}x',
    "{",
    "}",
    "{}{}",
    '{"a": true, "b": false, "c": null}',
    '{"a": 9223372036854775808}',
    '{"a": -9223372036854775809}',
    '{"a": ' + "9" * 4300 + "}",
    '{"a": ' + "9" * 4301 + "}",
    '{"a": 1e308, "b": 1e309}',
    '{"a": 0.1, "b": 1E-400}',
    '{"a": -0}',
    '{"a": 01}',
    '{"a": [' + ",".join(["[]"] * 62) + "]}",
    '{"a": ' + "[" * 62 + "]" * 62 + "}",
    '{"a": ' + "[" * 63 + "]" * 63 + "}",
    '{"a": ' + "[" * 64 + "]" * 64 + "}",
    '{"a": "' + "x" * 1_000_000 + '"}',
    '{"a": "' + "x" * 999_990 + '"}',
    '{"a": "caf\\u00e9"}',
    '{"a": "café"}',
    '{"a": "\\ud83d\\ude00"}',
    '{"a": "\\\\u0041"}',
    '{"a": "tab\there"}',
    '{"a": {"b": null}}',
    '{"a": [1, [null]]}',
    '{"a": [1, null]}',
    '{"a": "x", "b": "y:z"}',
    '{"a:b": 1}',
    '{"a": NaN, "b": 1}',
    '{"a": true, "a": false}',
    '{"a": tru}',
    '{"a": 1 /* c */}',
    "",
    "   ",
    None,
    b'{"a": 1}',
    *[
        # Around the length below which the depth is not counted (2 * MAX_DEPTH + 1): nesting
        # and brackets inside strings, balanced or not, at, under and over the limit.
        '{"a": ' + "[" * depth + "]" * depth + "}" + " " * pad
        for depth in (62, 63, 64, 65)
        for pad in (0, 1, 2)
    ],
    *['{"":' + "[" * depth + "]" * depth + "}" for depth in (61, 62, 63, 64)],  # 127-133 characters
    *['{"":' + "[" * depth + "]" * depth + "} " for depth in (61, 62)],
    *['{"":' + "[" * depth + "}" for depth in (62, 63, 64, 124, 125)],  # unbalanced, as long
    '{"a":' + "[" * 63 + "]" * 63 + "}",
    '{"a":' + "[" * 64 + "]" * 64 + "}",
    '{"' + "[" * 120 + '": 1}',
    '{"a": "' + "[" * 120 + '"}',
    '{"a": "' + "[" * 62 + '", "b": ' + "[" * 30 + "]" * 30 + "}",
    '{"a": ' + "[" * 120 + "}",
    '{"a": ' + "[" * 63 + "}",
    '{"a": ' + "]" * 63 + "}",
    '{"a": ' + "[1," * 40 + "1" + "]" * 40 + "}",
    '{"a": ' + "[" * 1000 + "]" * 1000 + "}",
    '{"a": ' + "[" * 5000 + "}",
    '{"a": "{"}',
    '{"a": 1, "b": "{}"}',
    '{"a": {}}',
    '{"a": [{}]}',
    '{"a": [{"b": 1}]}',
    '{"a": 1}}',
    '{{"a": 1}',
    "{{}}",
    '{"a": 1, "b": 2, "a": 3}',
    '{"a": "x:", "a": 1}',
    '{"a\u0000": 1, "b": 2}',
    '{"a": "\\ud800"}',
    '{"a": "\\\\u0041"}',
    '{"a": [1, 2.5, "x", null, true]}',
    '{"a": 12345678901234567890123}',
    '{"a": -12345678901234567890123, "b": [99999999999999999999]}',
    '{"a": "\t", "b": "\u000b"}',
    {"a": 1},
    ["a"],
    3,
]


# Edges of the JSON grammar and of the number range, at the scanner's door.
EDGES = [
    '{"a": 9223372036854775807, "b": -9223372036854775808}',
    '{"a": 18446744073709551615}',
    '{"a": 18446744073709551616}',
    '{"a": -9223372036854775809}',
    '{"a": [18446744073709551616]}',
    '{"a": [1, 2], "b": [3.0]}',
    '{"a": [[1.5]]}',
    '{"a": [[]], "b": 1}',
    '{"a": 1E2}',
    '{"a": 1e-2}',
    '{"a": -0, "b": [-0]}',
    '{"a": -0.0}',
    '{"a": "raw\ttab"}',
    '{"a": "raw\x01"}',
    '{"a": "\x7f"}',
    '{"a": "\\b\\f\\n\\r\\t\\/\\"\\\\"}',
    '{"a": "\\x"}',
    '{"a": 1}\t\r\n ',
    '{"a": 1}\x0c',
    '{"a": 1}\x00',
    '{"a": [1,]}',
    '{"a": 01}',
    '{"a": +1}',
    '{"a": .5}',
    '{"a": 1.}',
    '{"a": Infinity}',
    '{"a": -Infinity}',
    '{"a": nul}',
    '{"a": True}',
    '{"": [true, false, null]}',
    '{"a" : 1 , "b" :2}',
    '{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10}',
]
RAWS += EDGES


def _full_decode(raw: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any, Any]:
    with monkeypatch.context() as patch:
        patch.setattr(arguments, "_plain_object", lambda _raw: None)
        return decode_noting_nulls(raw)


@pytest.mark.parametrize("raw", RAWS, ids=[f"raw{i}" for i in range(len(RAWS))])
def test_quick_decode_agrees_with_the_full_decoder_wherever_it_answers(
    raw: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    quick = quick_decode(raw)
    if quick is None:
        return
    args, maybe_null = quick
    full_args, full_problem, full_null = _full_decode(raw, monkeypatch)
    assert full_problem is None
    assert args == full_args and json.dumps(args) == json.dumps(full_args)  # the same values, of the same types
    assert [type(v) for v in args.values()] == [type(v) for v in full_args.values()]
    assert maybe_null == full_null or (maybe_null and "[[" in str(raw))  # nested lists of lists: assumed to


def test_quick_decode_answers_for_the_usual_arguments_and_not_for_odd_ones() -> None:
    assert quick_decode(USUAL) == (json.loads(USUAL), False)
    assert quick_decode('{"a": null}') == ({"a": None}, True)
    for odd in ('{"a": 1, "a": 2}', '{"a": NaN}', '{"a": {"b": 1}}', ' {"a": 1}', '{"a": 1}x', '{"a": "é"}', None):
        assert quick_decode(odd) is None


def _entry(id_value: Any = "call_1", name: Any = "noop", arguments_value: Any = USUAL, kind: Any = "function") -> Any:
    entry: dict[str, Any] = {"id": id_value, "function": {"name": name, "arguments": arguments_value}}
    if kind is not _MISSING:
        entry["type"] = kind
    return entry


_MISSING = object()


class _Str(str):
    pass


ENTRIES: list[Any] = [
    _entry(),
    _entry(kind=_MISSING),
    _entry(kind=None),
    _entry(kind=""),
    _entry(kind="custom"),
    _entry(kind="tool"),
    _entry(kind=_Str("function")),
    _entry(kind=1),
    _entry(id_value=""),
    _entry(id_value=None),
    _entry(id_value=7),
    _entry(id_value="call\ud800"),
    _entry(id_value="cäll"),
    _entry(id_value=_Str("call_1")),
    _entry(name=""),
    _entry(name=None),
    _entry(name=["noop"]),
    _entry(name="n" * 256),
    _entry(name="n" * 257),
    _entry(name="nöop"),
    _entry(name="no\ud800op"),
    _entry(name=_Str("noop")),
    _entry(name="unknown_tool"),
    {"id": "c", "type": "function"},
    {"id": "c", "type": "function", "function": None},
    {"id": "c", "type": "function", "function": "noop"},
    {"id": "c", "type": "function", "function": {"arguments": "{}"}},
    {"id": "c", "type": "function", "function": {"name": "noop"}},
    {"id": "c", "type": "custom", "custom": {"name": "noop", "input": "x"}},
    "not an entry",
    None,
    [],
]
ENTRIES += [_entry(arguments_value=raw) for raw in RAWS]


def _same(quick: Call, full: Call) -> None:
    assert quick == full
    assert [type(getattr(quick, f)) for f in Call.__slots__] == [type(getattr(full, f)) for f in Call.__slots__]
    if quick.args is not None:
        assert json.dumps(quick.args) == json.dumps(full.args)


@pytest.mark.parametrize("entry", ENTRIES, ids=[f"entry{i}" for i in range(len(ENTRIES))])
@pytest.mark.parametrize("with_snapshot", [False, True])
def test_the_quick_call_is_the_full_call_wherever_it_answers(
    entry: Any, with_snapshot: bool, coding_snapshot: Any
) -> None:
    snapshot = coding_snapshot if with_snapshot else None
    quick = openai._quick_chat_call(entry, 3, snapshot)
    if quick is not None:
        _same(quick, openai._full_chat_call(entry, 3, snapshot))
    # And the whole parser gives what the full reading gives, whichever answered.
    (parsed,) = openai.parse_chat_calls([entry], snapshot=snapshot)
    (in_message,) = openai.parse_chat_calls({"role": "assistant", "tool_calls": [entry]}, snapshot=snapshot)
    full = openai._full_chat_call(entry, 0, snapshot)
    _same(parsed, full)
    _same(in_message, full)


def test_strict_mode_nulls_are_undone_on_the_quick_path_as_on_the_full_one(coding_snapshot: Any) -> None:
    tool = next(t for t in coding_snapshot.tools.values() if t.spec.input_schema.get("required"))
    schema = tool.spec.input_schema
    optional = [k for k in schema.get("properties", {}) if k not in schema.get("required", [])]
    values: dict[str, Any] = {key: "x" for key in schema["required"]}
    values.update({key: None for key in optional})
    entry = _entry(name=tool.name, arguments_value=json.dumps(values))
    quick = openai._quick_chat_call(entry, 0, coding_snapshot)
    assert quick is not None
    _same(quick, openai._full_chat_call(entry, 0, coding_snapshot))


def test_the_usual_entry_takes_the_quick_path() -> None:
    call = openai._quick_chat_call(_entry(), 0, None)
    assert call == Call("call_1", "noop", json.loads(USUAL), 0, USUAL, None)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(st.text(max_size=6), _JSON, max_size=5),
    st.sampled_from([", ", ","]),
    st.sampled_from([": ", ":"]),
    st.booleans(),
)
def test_generated_arguments_read_alike_on_both_paths(
    value: dict[str, Any], comma: str, colon: str, ascii_only: bool
) -> None:
    raw = json.dumps(value, separators=(comma, colon), ensure_ascii=ascii_only, allow_nan=True)
    entry = _entry(arguments_value=raw)
    quick = openai._quick_chat_call(entry, 0, None)
    if quick is not None:
        _same(quick, openai._full_chat_call(entry, 0, None))


CONTENTS: list[Any] = [
    "ok",
    " ",
    "error: lower case",
    "Errors were found",
    "e",
    "\x00",
    "line\nbreak",
    "",
    "Error: x",
    "error already",
    "ERROR",
    "é",
    "\ud800 lone",
    "x" * 5000,
    None,
    42,
    _Str("s"),
]


@pytest.mark.parametrize("content", CONTENTS, ids=[f"content{i}" for i in range(len(CONTENTS))])
@pytest.mark.parametrize(
    "status", [Status.ok, Status.error, Status.background, Status.denied, Status.not_executed, "ok", "error"]
)
@pytest.mark.parametrize("mark_errors", [True, False])
def test_rendered_text_is_text_of_the_result_with_the_error_mark(
    content: Any, status: Status, mark_errors: bool
) -> None:
    result = ToolResult("c1", "noop", content, status)
    expected = text_of(result)
    if mark_errors and result.is_error and not expected[:6].lower().startswith("error"):
        expected = openai.ERROR_PREFIX + expected
    (chat,) = openai.render_chat_results([result], mark_errors=mark_errors)
    (item,) = openai.render_responses_results([result], mark_errors=mark_errors)
    assert chat["content"] == item["output"] == expected
    assert type(chat["content"]) is type(expected)
    block = anthropic.render_result(result)  # no mark: Anthropic has an error flag
    assert block["content"] == text_of(result) and type(block["content"]) is type(text_of(result))
    assert block.get("is_error", False) is result.is_error
    assert list(block) == ["type", "tool_use_id", "content"] + (["is_error"] if result.is_error else [])


def test_a_turns_results_render_in_order_each_as_alone() -> None:
    results = [
        ToolResult(f"c{i}", "noop", content, status)
        for i, (content, status) in enumerate((c, s) for c in CONTENTS for s in (Status.ok, Status.error, "ok"))
    ]
    for mark_errors in (True, False):
        chat = openai.render_chat_results(results, mark_errors=mark_errors)
        items = openai.render_responses_results(results, mark_errors=mark_errors)
        assert chat == [openai.render_chat_results([r], mark_errors=mark_errors)[0] for r in results]
        assert [m["tool_call_id"] for m in chat] == [i["call_id"] for i in items] == [r.call_id for r in results]
        assert [m["content"] for m in chat] == [i["output"] for i in items]
        assert all(list(m) == ["role", "tool_call_id", "content"] and m["role"] == "tool" for m in chat)
        assert all(list(i) == ["type", "call_id", "output"] and i["type"] == "function_call_output" for i in items)
