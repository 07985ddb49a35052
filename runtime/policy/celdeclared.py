"""cel-expr-python's own type checker, given the types the JSON Schemas declare.

At snapshot build, with the fast engine, each expression lint types against a tool's
schema (:mod:`runtime.config.exprtypes`) is also compiled by cel-expr-python against
those types declared, and a type error its checker finds is a finding like toolrt's
own. cel-expr-python declares record types only as protocol-buffer messages, so the
types (:class:`runtime.policy.celtypes.CelType`, read from the schema) are turned into
a descriptor pool made at build time: an object is a message, a list a repeated field,
a map a map field, a nullable scalar a wrapper type (``google.protobuf.Int64Value``),
anything of no single CEL type (JSON Schema's ``number``, values of no declared type,
nested lists) ``google.protobuf.Value`` (dyn). The program that evaluates calls is still
compiled against ``map(string, dyn)`` (:mod:`runtime.policy.celfast`): a call's arguments
are a JSON object, not a message, and a message's missing field would read as its default
instead of failing as CEL on the object does.

What its checker cannot decide, and is left to toolrt's checker (:func:`check_declared`
answers ``undecided``), is listed in :data:`UNDECIDED` and in the README: its checker is
stricter than CEL's run time on a few points (int against double or uint comparisons,
``x == null`` on a non-null type, map operations on a record) and knows less than the
schema on others (enum values, ``number``, undeclared keys the schema allows).

Needs cel-expr-python and protobuf (both in the ``fast`` extra); without them nothing is
checked here and toolrt's checker decides alone.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runtime.policy.celtypes import CelType

#: Classes of expression cel-expr-python's checker cannot decide the way CEL evaluates them.
UNDECIDED = {
    "numeric": "it has no overloads comparing int, uint and double with each other, which CEL compares at run time",
    "null": "it refuses `x == null` when x is of a type that is never null (CEL evaluates it to false)",
    "record": "a record is a message to it, without the map operations (`in`, `[...]`, size(), comprehensions) "
    "CEL applies to a JSON object",
    "open": "the schema allows undeclared keys, which a message cannot hold (nor two fields whose JSON spellings "
    "collide, such as foo_bar and fooBar)",
    "guarded": "a policy condition may read a field that some of the tools it names lack, behind has()",
    "other": "names and syntax are checked before types, by toolrt and by the engine that evaluates",
}


@dataclass(frozen=True, slots=True)
class Verdict:
    """cel-expr-python's verdict on one expression: ``ok``, ``error`` (``message`` at
    ``line``:``col``) or ``undecided`` (``message`` names the class, see UNDECIDED)."""

    status: str
    message: str = ""
    line: int = 1
    col: int = 1


def available() -> bool:
    """Whether cel-expr-python and protobuf are both importable."""
    try:
        import cel_expr_python.cel  # noqa: F401
        import google.protobuf.descriptor_pool  # noqa: F401
    except ImportError:
        return False
    return True


def check_declared(
    source: str, variables: Mapping[str, CelType], key: str, result: str | None = "bool", *, own_schema: bool = True
) -> Verdict | None:
    """cel-expr-python's checker's verdict on ``source`` with ``variables`` declared
    (``key``: a content key of them); None when it is not installed. ``result``: the kind
    the expression must give (``bool``, ``string`` or None for any). ``own_schema``: as
    for :func:`runtime.policy.celcheck.check`."""
    memo = (source, key, result, own_schema)
    found = _VERDICTS.get(memo)
    if found is not None:
        return found
    env = _env(variables, key)
    if env is None:
        return None
    verdict = _verdict(env, source, result, own_schema)
    if len(_VERDICTS) >= 16384:
        _VERDICTS.clear()
    _VERDICTS[memo] = verdict
    return verdict


_VERDICTS: dict[tuple[Any, ...], Verdict] = {}


# ---------------------------------------------------------------------------
# the environment: a descriptor pool made from the types


@dataclass(frozen=True, slots=True)
class _Env:
    env: Any
    labels: Mapping[str, str]  # message name -> how messages name the value (args.filter)
    open: frozenset[str]  # messages of objects that allow undeclared keys
    left_out: frozenset[tuple[str, str]]  # (message, field) declared in the schema but not in the message


_ENVS: dict[str, _Env | None] = {}
_LOCK = threading.Lock()
_FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SCALARS = {"bool": "BOOL", "int": "INT64", "uint": "UINT64", "double": "DOUBLE", "string": "STRING", "bytes": "BYTES"}
_WRAPPERS = {
    "bool": "BoolValue",
    "int": "Int64Value",
    "uint": "UInt64Value",
    "double": "DoubleValue",
    "string": "StringValue",
    "bytes": "BytesValue",
}
_MAX_FIELDS = 10_000  # field numbers 19000-19999 are reserved by protobuf


def _env(variables: Mapping[str, CelType], key: str) -> _Env | None:
    made = _ENVS.get(key, _MISSING)
    if made is not _MISSING:
        return made  # type: ignore[return-value]
    with _LOCK:
        made = _ENVS.get(key, _MISSING)
        if made is _MISSING:
            made = _ENVS[key] = _make_env(variables, key)
            if len(_ENVS) > 4096:
                _ENVS.pop(next(iter(_ENVS)))
    return made  # type: ignore[return-value]


_MISSING = object()


def _make_env(variables: Mapping[str, CelType], key: str) -> _Env | None:
    if not available():
        return None
    from cel_expr_python import cel
    from google.protobuf import descriptor_pb2, descriptor_pool, struct_pb2, wrappers_pb2

    pool = descriptor_pool.DescriptorPool()
    for module in (struct_pb2, wrappers_pb2):
        known = descriptor_pb2.FileDescriptorProto()
        module.DESCRIPTOR.CopyToProto(known)
        pool.Add(known)
    package = "toolrt.d" + hashlib.sha256(key.encode()).hexdigest()[:16]
    builder = _Builder(descriptor_pb2, package)
    declared = {name: builder.variable(value, name) for name, value in variables.items()}
    pool.Add(builder.file)

    def cel_type(spec: tuple[str, Any]) -> Any:
        kind, detail = spec
        if kind == "scalar":
            return getattr(cel.Type, detail)
        if kind == "named":
            return cel.Type(detail)
        if kind == "list":
            return cel.Type.List(cel_type(detail))
        if kind == "map":
            return cel.Type.Map(cel.Type.STRING, cel_type(detail))
        return cel.Type.DYN

    env = cel.NewEnv(pool, variables={name: cel_type(spec) for name, spec in declared.items()})
    return _Env(env, builder.labels, frozenset(builder.open), frozenset(builder.left_out))


class _Builder:
    """One proto2 file holding a message per object type (proto2: proto3 refuses field
    names whose JSON spellings collide, which JSON Schema allows)."""

    def __init__(self, descriptor_pb2: Any, package: str) -> None:
        self.pb = descriptor_pb2
        self.package = package
        self.file = descriptor_pb2.FileDescriptorProto(
            name=f"{package}.proto",
            package=package,
            syntax="proto2",
            dependency=["google/protobuf/struct.proto", "google/protobuf/wrappers.proto"],
        )
        self.labels: dict[str, str] = {}
        self.open: set[str] = set()
        self.left_out: set[tuple[str, str]] = set()

    def variable(self, value: CelType, label: str) -> tuple[str, Any]:
        """How ``cel.NewEnv`` declares a variable of type ``value``."""
        if value.kind in _SCALARS and not value.nullable:
            return ("scalar", {"int": "INT", "uint": "UINT"}.get(value.kind, _SCALARS[value.kind]))
        if value.kind == "object" and value.fields:
            return ("named", self.message(value, label))
        if value.kind == "list" and not value.nullable:
            return ("list", self.variable(value.elem or CelType("dyn"), label + "[]"))
        if value.kind == "map" and not value.nullable and (value.key is None or value.key.kind == "string"):
            return ("map", self.variable(value.elem or CelType("dyn"), label + ".*"))
        if value.kind in _WRAPPERS and value.nullable:
            return ("named", f"google.protobuf.{_WRAPPERS[value.kind]}")
        return ("dyn", None)

    def message(self, value: CelType, label: str) -> str:
        name = f"M{len(self.file.message_type)}"
        full = f"{self.package}.{name}"
        message = self.file.message_type.add(name=name)
        self.labels[full] = label or "the value"
        if value.extra is not None:
            self.open.add(full)
        camel: dict[str, list[str]] = {}
        for field_name in value.fields or {}:
            camel.setdefault(_json_name(field_name), []).append(field_name)
        for field_name, info in (value.fields or {}).items():
            if not _FIELD_NAME.match(field_name):
                continue  # not a name CEL selects with `.` (`args["a-b"]` is a map operation)
            if len(camel[_json_name(field_name)]) > 1 or len(message.field) >= _MAX_FIELDS:
                self.left_out.add((full, field_name))  # one protobuf cannot hold beside another
                continue
            self._field(message, field_name, info.type, f"{label}.{field_name}", full)
        return full

    def _field(self, message: Any, name: str, value: CelType, label: str, owner: str) -> None:
        fd = self.pb.FieldDescriptorProto
        field = message.field.add(name=name, number=len(message.field) + 1, label=fd.LABEL_OPTIONAL)
        if value.kind == "list" and not value.nullable:
            field.label = fd.LABEL_REPEATED
            self._element(field, value.elem or CelType("dyn"), label + "[]")
        elif (
            value.kind == "map"
            and not value.nullable
            and (value.key is None or value.key.kind == "string")
            and _entry_name(name) not in {n.name for n in message.nested_type}
        ):
            entry_name = _entry_name(name)  # protobuf requires this name for a map field's entry
            entry = message.nested_type.add(name=entry_name)
            entry.options.map_entry = True
            entry.field.add(name="key", number=1, type=fd.TYPE_STRING, label=fd.LABEL_OPTIONAL)
            value_field = entry.field.add(name="value", number=2, label=fd.LABEL_OPTIONAL)
            self._element(value_field, value.elem or CelType("dyn"), label + ".*")
            field.label = fd.LABEL_REPEATED
            field.type = fd.TYPE_MESSAGE
            field.type_name = f".{owner}.{entry_name}"
        else:
            self._element(field, value, label)

    def _element(self, field: Any, value: CelType, label: str) -> None:
        """The type of a singular field, a list's items or a map's values."""
        fd = self.pb.FieldDescriptorProto
        if value.kind in _SCALARS and not value.nullable:
            field.type = getattr(fd, "TYPE_" + _SCALARS[value.kind])
            return
        field.type = fd.TYPE_MESSAGE
        if value.kind in _WRAPPERS:
            field.type_name = f".google.protobuf.{_WRAPPERS[value.kind]}"
        elif value.kind == "object" and value.fields:
            field.type_name = "." + self.message(value, label)  # a message field may be null
        else:
            field.type_name = ".google.protobuf.Value"  # dyn


def _entry_name(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.split("_")) + "Entry"


def _json_name(name: str) -> str:
    parts = name.split("_")
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])


# ---------------------------------------------------------------------------
# the verdict

_ERROR = re.compile(r"ERROR: <input>:(\d+):(\d+): (.*)")
_OVERLOAD = re.compile(r"found no matching overload for '([^']+)' applied to '\((.*)\)'")
_UNDEFINED = re.compile(r"undefined field '([^']+)' not found in struct '([^']+)'")
_COMPARISONS = {"_<_", "_<=_", "_>_", "_>=_", "_==_", "_!=_", "@in"}
_NUMERIC = re.compile(r"^(?:wrapper\()?(int|uint|double)\)?$")


def _verdict(made: _Env, source: str, result: str | None, own_schema: bool) -> Verdict:
    try:
        expression = made.env.compile(source)  # matches() is its own (RE2), as at run time
    except Exception as err:  # noqa: BLE001 - the binding raises RuntimeError with the checker's report
        return _classify(made, source, str(err), own_schema)
    returned = expression.return_type().name()
    if result in ("bool", "string") and returned not in (result.upper(), "DYN"):
        shown = _word(made, returned)
        if shown == returned:
            shown = returned.lower().replace("<", "(").replace(">", ")")
        return Verdict("error", f"the expression gives {shown}, not a {result}")
    return Verdict("ok")


def _classify(made: _Env, source: str, report: str, own_schema: bool) -> Verdict:
    undecided: Verdict | None = None
    for match in _ERROR.finditer(report):
        line, col, text = int(match.group(1)), int(match.group(2)), match.group(3)
        text = text.removesuffix(" [INVALID_ARGUMENT]").strip()
        if "'*error*'" in text or "yntax error" in text or _undeclared_variable(source, text):
            continue  # follows from an error before it, or names and syntax: checked before types
        reason = _undecided(made, source, text, own_schema)
        if reason is not None:
            undecided = undecided or Verdict("undecided", reason, line, col)
            continue
        return Verdict("error", _word(made, text), line, col)
    return undecided or Verdict("undecided", "other", 1, 1)  # names and syntax: not a type verdict


def _undeclared_variable(source: str, text: str) -> bool:
    """An undeclared name that is not called (an unknown function is a type error)."""
    found = re.search(r"undeclared reference to '([^']+)'", text)
    if found is None:
        return False
    name = found.group(1).split(".")[-1]
    return re.search(r"\b" + re.escape(name) + r"\s*\(", source) is None


def _undecided(made: _Env, source: str, text: str, own_schema: bool) -> str | None:
    """The class (a key of UNDECIDED) of an error CEL's run time would not raise, or None."""
    overload = _OVERLOAD.search(text)
    if overload is not None:
        function, argument_text = overload.groups()
        arguments = [a.strip() for a in argument_text.split(",")]
        if any(a.startswith("toolrt.d") for a in arguments):
            return "record"
        if function in _COMPARISONS and len(arguments) == 2:
            kinds = [_NUMERIC.match(a) for a in arguments]
            if all(kinds) and len({k.group(1) for k in kinds if k}) > 1:
                return "numeric"
            if function in ("_==_", "_!=_") and "null_type" in arguments:
                return "null"
        return None
    if "cannot be the range of a comprehension" in text and "'toolrt.d" in text:
        return "record"
    undefined = _UNDEFINED.search(text)
    if undefined is not None:
        field_name, message = undefined.groups()
        if message in made.open or (message, field_name) in made.left_out:
            return "open"
        if not own_schema and re.search(r"has\(\s*[\w.]*\." + re.escape(field_name) + r"\s*\)", source):
            return "guarded"
    return None


def _word(made: _Env, text: str) -> str:
    """The checker's text with the messages named by what they hold (``args.filter``)."""
    for name, label in made.labels.items():
        if name in text:
            text = (
                text.replace(f"struct '{name}'", f"`{label}`")
                .replace(name.lower(), name)
                .replace(name, f"object {label}")
            )
    return text
