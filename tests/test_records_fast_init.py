"""ToolResult's hand-written __init__ builds what the frozen dataclass's own did.

runtime.records replaces the generated initializer (kept as ``_GENERATED_INIT``) with
one that stores through the slots' descriptors; every way of calling it must give an
equal object, the same errors for bad calls, and a result that is still frozen.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from types import MappingProxyType
from typing import Any

import pytest

from runtime import records
from runtime.records import Stage, Status, ToolResult


def _generated(*args: Any, **kwargs: Any) -> ToolResult:
    result = ToolResult.__new__(ToolResult)
    records._GENERATED_INIT(result, *args, **kwargs)
    return result


def _fields(result: ToolResult) -> tuple[Any, ...]:
    return tuple(getattr(result, f.name) for f in dataclasses.fields(ToolResult))


ODD = [
    None,
    0,
    -1,
    2**200,
    1.5,
    float("nan"),
    "",
    "x" * 1_000_000,
    "\ud800 lone surrogate",
    "\U0001f600 \u202e rtl",
    b"bytes",
    [1, [2]],
    {"a": {"b": 1}},
    MappingProxyType({"k": 1}),
    object(),
    Status.error,
    Stage.shape,
    (),
]

CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    (("c1", "noop", "text"), {}),
    (("c1", "noop", "text", Status.error, "handler_error", Stage.execute, {"a": 1}, MappingProxyType({"m": 1})), {}),
    (("c1", "noop", "text"), {"status": Status.denied, "metadata": MappingProxyType({"decision": "deny"})}),
    ((), {"call_id": "c", "name": "n", "content": "t", "structured": [1, 2]}),
    ((), {"metadata": {}, "content": "t", "name": "n", "call_id": "c", "stage": Stage.validate}),
    (("c1",), {"name": "noop", "content": "", "code": None}),
]
CALLS += [((value, value, value, value, value, value, value, value), {}) for value in ODD]
CALLS += [(("c", "n", "t"), {"structured": value}) for value in ODD]


@pytest.mark.parametrize(("args", "kwargs"), CALLS, ids=[f"call{i}" for i in range(len(CALLS))])
def test_the_new_initializer_builds_the_generated_ones_object(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    fast = ToolResult(*args, **kwargs)
    slow = _generated(*args, **kwargs)
    assert type(fast) is ToolResult
    assert all(a is b for a, b in zip(_fields(fast), _fields(slow), strict=True))
    assert repr(fast) == repr(slow)


BAD_CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    ((), {}),
    (("c1",), {}),
    (("c1", "noop"), {}),
    (("c1", "noop", "t", Status.ok, None, None, None, {}, "extra"), {}),
    (("c1", "noop", "t"), {"call_id": "again"}),
    (("c1", "noop", "t"), {"unknown": 1}),
    ((), {"call_id": "c", "name": "n"}),
]


@pytest.mark.parametrize(("args", "kwargs"), BAD_CALLS, ids=[f"bad{i}" for i in range(len(BAD_CALLS))])
def test_a_bad_call_is_refused_as_before(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    with pytest.raises(TypeError):
        _generated(*args, **kwargs)
    with pytest.raises(TypeError):
        ToolResult(*args, **kwargs)


def test_defaults_are_the_dataclass_defaults() -> None:
    result = ToolResult("c", "n", "t")
    assert (result.status, result.code, result.stage, result.structured) == (Status.ok, None, None, None)
    assert result.metadata == {} and isinstance(result.metadata, MappingProxyType)
    assert result.metadata is _generated("c", "n", "t").metadata  # the one shared empty view
    parameters = inspect.signature(ToolResult).parameters
    assert list(parameters) == [f.name for f in dataclasses.fields(ToolResult)]


def test_the_result_is_still_frozen_equal_hashable_and_copyable() -> None:
    result = ToolResult("c", "n", "t", Status.error, "x", Stage.execute, None, MappingProxyType({}))
    for name in ("call_id", "content", "metadata", "status"):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(result, name, "changed")
    with pytest.raises(dataclasses.FrozenInstanceError):
        del result.content
    plain = ToolResult("c", "n", "t")
    assert plain == _generated("c", "n", "t")
    hashable = ("c", "n", "t", Status.ok, None, None, None, ())  # a view is not hashable, a tuple is
    assert hash(ToolResult(*hashable)) == hash(_generated(*hashable))  # type: ignore[arg-type]
    for made in (plain, _generated("c", "n", "t")):
        with pytest.raises(TypeError):
            hash(made)
    replaced = dataclasses.replace(result, content="other")
    assert replaced.content == "other" and replaced.call_id == "c" and replaced.stage is Stage.execute
    assert copy.copy(plain) == plain
    shipped = ToolResult("c", "n", "t", structured={"a": [1]}, metadata={"k": 1})
    assert pickle.loads(pickle.dumps(shipped)) == shipped
    assert result.is_error and not plain.is_error


def test_set_metadata_replaces_only_the_metadata() -> None:
    result = ToolResult("c", "n", "t", Status.ok, None, None, [1], MappingProxyType({"a": 1}))
    records.set_metadata(result, MappingProxyType({"b": 2}))
    assert result.metadata == {"b": 2} and result.structured == [1] and result.content == "t"


# --- Call: the same, for its own hand-written initializer ------------------------------

CALL_CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    (("c1", "noop", {"a": 1}), {}),
    (("c1", "noop", None, 3, '{"a": 1}', "bad"), {}),
    ((), {"id": "c", "name": "n", "args": {}}),
    (("c",), {"args": None, "name": "n", "parse_error": "p", "index": 2}),
    (("c", "n", MappingProxyType({"k": [1]})), {"raw_arguments": ""}),
]
CALL_CALLS += [((value, value, value, value, value, value), {}) for value in ODD]
CALL_CALLS += [(("c", "n", value), {}) for value in ODD]


def _generated_call(*args: Any, **kwargs: Any) -> records.Call:
    call = records.Call.__new__(records.Call)
    records._GENERATED_CALL_INIT(call, *args, **kwargs)
    return call


@pytest.mark.parametrize(("args", "kwargs"), CALL_CALLS, ids=[f"call{i}" for i in range(len(CALL_CALLS))])
def test_the_new_call_initializer_builds_the_generated_ones_object(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    fast = records.Call(*args, **kwargs)
    slow = _generated_call(*args, **kwargs)
    assert type(fast) is records.Call
    assert all(getattr(fast, f.name) is getattr(slow, f.name) for f in dataclasses.fields(records.Call))
    assert repr(fast) == repr(slow)


BAD_CALL_CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    ((), {}),
    (("c",), {}),
    (("c", "n"), {}),
    (("c", "n", {}, 0, None, None, "extra"), {}),
    (("c", "n", {}), {"id": "again"}),
    (("c", "n", {}), {"unknown": 1}),
]


@pytest.mark.parametrize(("args", "kwargs"), BAD_CALL_CALLS, ids=[f"bad{i}" for i in range(len(BAD_CALL_CALLS))])
def test_a_bad_call_of_call_is_refused_as_before(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    with pytest.raises(TypeError):
        _generated_call(*args, **kwargs)
    with pytest.raises(TypeError):
        records.Call(*args, **kwargs)


def test_a_call_is_still_frozen_equal_hashable_and_has_the_dataclass_signature() -> None:
    call = records.Call("c", "n", None, 1, "raw", "bad")
    assert (call.index, call.raw_arguments, call.parse_error) == (1, "raw", "bad")
    assert records.Call("c", "n", None) == _generated_call("c", "n", None)
    assert (records.Call("c", "n", None).index, records.Call("c", "n", None).raw_arguments) == (0, None)
    for name in ("id", "args", "parse_error"):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(call, name, "changed")
    assert hash(call) == hash(_generated_call("c", "n", None, 1, "raw", "bad"))
    assert dataclasses.replace(call, args={"a": 1}).args == {"a": 1}
    assert pickle.loads(pickle.dumps(records.Call("c", "n", {"a": [1]}))) == records.Call("c", "n", {"a": [1]})
    assert list(inspect.signature(records.Call).parameters) == [f.name for f in dataclasses.fields(records.Call)]


# --- new_call: the parsers' way to build a Call --------------------------------------


def _positional(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    bound = inspect.signature(records.Call).bind(*args, **kwargs)
    bound.apply_defaults()
    return tuple(bound.arguments.values())


@pytest.mark.parametrize(("args", "kwargs"), CALL_CALLS, ids=[f"call{i}" for i in range(len(CALL_CALLS))])
def test_new_call_builds_the_object_call_builds(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    fields = _positional(args, kwargs)
    made = records.new_call(*fields)
    built = records.Call(*args, **kwargs)
    assert type(made) is records.Call
    assert all(getattr(made, f.name) is getattr(built, f.name) for f in dataclasses.fields(records.Call))
    assert repr(made) == repr(built) and made == built and built == made


def test_a_call_from_new_call_is_frozen_hashable_copyable_and_picklable() -> None:
    made = records.new_call("c", "n", None, 1, "raw", "bad")
    for name in ("id", "name", "args", "index", "raw_arguments", "parse_error"):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(made, name, "changed")
    for other in ("__class__", "extra"):  # refused as a Call(...) refuses them (not always in the same words)
        for call in (made, records.Call("c", "n", None)):
            with pytest.raises((TypeError, AttributeError)):
                setattr(call, other, records._CallSlots)
    assert type(made) is records.Call
    with pytest.raises(dataclasses.FrozenInstanceError):
        del made.id
    assert hash(made) == hash(records.Call("c", "n", None, 1, "raw", "bad"))
    assert dataclasses.replace(made, args={"a": 1}) == records.Call("c", "n", {"a": 1}, 1, "raw", "bad")
    assert copy.copy(made) == made and copy.deepcopy(made) == made
    assert pickle.loads(pickle.dumps(made)) == made
    assert dataclasses.asdict(made) == dataclasses.asdict(records.Call("c", "n", None, 1, "raw", "bad"))
    assert isinstance(made, records.Call) and not isinstance(made, records._CallSlots)


def test_the_builder_has_exactly_calls_slots() -> None:
    # __class__ assignment needs the same slots in the same order; a field added to Call
    # without the builder would make new_call raise TypeError at its first use.
    assert records._CallSlots.__slots__ == records.Call.__slots__
    assert list(records.Call.__slots__) == [f.name for f in dataclasses.fields(records.Call)]
    assert list(inspect.signature(records.new_call).parameters) == list(records.Call.__slots__)
