"""Property tests: whatever text or JSON a model or provider sends, stage 01 never raises."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime.adapters import anthropic, openai
from runtime.adapters.arguments import check_object, decode_arguments
from runtime.records import Call

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Text with lone surrogates, NULs and JSON punctuation well represented.
_text = st.text(
    alphabet=st.one_of(st.characters(), st.sampled_from('{}[]":,\\\ud800\udfff\x00 0123456789.eE-+ntrufalsNIiy')),
    max_size=80,
)
_json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True), _text
)
_json = st.recursive(
    _json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_text, inner, max_size=4)),
    max_leaves=20,
)


def _well_formed(calls, check_indices=True):
    assert isinstance(calls, list)
    for position, call in enumerate(calls):
        assert isinstance(call, Call)
        assert isinstance(call.id, str) and call.id
        assert isinstance(call.name, str)
        if check_indices:
            assert call.index == position
        assert call.args is None or isinstance(call.args, dict)
        if call.args is None:
            assert call.parse_error
        if call.parse_error is not None:
            call.parse_error.encode("utf-8")
        call.id.encode("utf-8")
        call.name.encode("utf-8")


@FUZZ
@given(_text)
def test_decode_arguments_never_raises_on_any_text(raw):
    args, error = decode_arguments(raw)
    assert (args is None) != (error is None)
    if error is not None:
        error.encode("utf-8")
    else:
        assert isinstance(args, dict)


@FUZZ
@given(_json)
def test_decode_arguments_of_any_json_is_the_value_or_a_message(value):
    try:
        raw = json.dumps(value, ensure_ascii=False)
    except (ValueError, UnicodeEncodeError):
        return
    args, error = decode_arguments(raw)
    if isinstance(value, dict) and error is None:
        assert args == value or json.dumps(args) == json.dumps(value)  # NaN != NaN never gets here
    if not isinstance(value, dict):
        assert error is not None


@FUZZ
@given(st.dictionaries(st.text(max_size=10), _json, max_size=5))
def test_decode_agrees_with_json_for_valid_objects(value):
    raw = json.dumps(value)  # ASCII escapes: lone surrogates become \\udXXX
    args, error = decode_arguments(raw)
    if error is None:
        assert json.dumps(args, sort_keys=True) == json.dumps(value, sort_keys=True)
    else:
        assert any(word in error for word in ("NaN", "Infinity", "surrogate", "nested"))


@FUZZ
@given(_json)
def test_check_object_never_raises(value):
    result = check_object(value)
    assert result is None or isinstance(result, str)


@FUZZ
@given(_json)
def test_anthropic_parse_never_raises(payload):
    _well_formed(anthropic.parse_calls(payload))
    _well_formed(anthropic.parse_calls({"role": "assistant", "content": payload}))
    _well_formed(anthropic.parse_calls([{"type": "tool_use", "id": payload, "name": payload, "input": payload}]))


@FUZZ
@given(_json, _json, _json)
def test_openai_chat_parse_never_raises(id_value, name, arguments):
    _well_formed(openai.parse_chat_calls(id_value))
    _well_formed(
        openai.parse_chat_calls(
            {"tool_calls": [{"id": id_value, "type": "function", "function": {"name": name, "arguments": arguments}}]}
        )
    )
    _well_formed(openai.parse_chat_calls([{"id": "c", "function": {"name": "grep", "arguments": arguments}}, id_value]))


@FUZZ
@given(_json, _text)
def test_openai_responses_parse_never_raises(payload, arguments):
    _well_formed(openai.parse_responses_calls(payload))
    _well_formed(
        openai.parse_responses_calls(
            {"output": [{"type": "function_call", "call_id": "c", "name": "grep", "arguments": arguments}, payload]}
        )
    )


@FUZZ
@given(_json)
def test_strict_null_stripping_never_breaks_parsing(coding_snapshot, value):
    try:
        arguments = json.dumps({"path": "a", "offset": value, "limit": None, "extra": value})
    except ValueError:
        return
    _well_formed(
        openai.parse_chat_calls(
            [{"id": "c", "type": "function", "function": {"name": "file_read", "arguments": arguments}}],
            snapshot=coding_snapshot,
        )
    )
