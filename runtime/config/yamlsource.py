"""YAML text -> plain data plus the line and column of every node.

ruamel.yaml only *composes* the node graph here (safe, pure-Python, YAML 1.2); we
construct the data ourselves so that we can:

- keep a position for every value and every mapping key (errors deep inside an
  ``input_schema`` or a CEL expression point at file:line:col);
- refuse Python-object and other custom tags, duplicate keys, NaN/infinity, non-string
  keys, and alias "billion laughs" bombs (bounded node budget and depth);
- produce JSON-compatible data only (str, int, float, bool, None, dict, list).
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from ruamel.yaml.resolver import VersionedResolver

from runtime.config.problems import Location, Problem

Path = tuple[str | int, ...]

_CORE = "tag:yaml.org,2002:"
_MERGE = _CORE + "merge"
_KEY_TAGS = frozenset(_CORE + name for name in ("str", "int", "bool", "float", "null", "timestamp"))
_MAX_DEPTH = 64
_MAX_NODES = 200_000  # per document, counted after alias expansion


@dataclass(frozen=True, slots=True)
class ScalarStyle:
    style: str | None  # None (plain), '"', "'", '|', '>'
    line: int  # 1-based position of the scalar's first character (or indicator)
    col: int


@dataclass(frozen=True)
class SourceDocument:
    """One YAML document: its data and where each piece of it came from."""

    file: str
    index: int
    data: Any
    content_hash: str
    positions: Mapping[Path, tuple[int, int]] = field(repr=False)
    key_positions: Mapping[Path, tuple[int, int]] = field(repr=False)
    # Each string's ScalarStyle fields as a plain tuple: a config has tens of thousands,
    # and a tuple of atoms is soon left out of the garbage collector's walks.
    scalar_styles: Mapping[Path, tuple[str | None, int, int]] = field(repr=False)
    lines: tuple[str, ...] = field(repr=False)

    def locate(self, path: Path, *, key: bool = False) -> Location:
        """The location of ``path`` (its key if ``key``), else of its nearest ancestor."""
        probe = tuple(path)
        if key and probe in self.key_positions:
            line, col = self.key_positions[probe]
            return Location(self.file, line, col)
        while True:
            if probe in self.positions:
                line, col = self.positions[probe]
                return Location(self.file, line, col)
            if not probe:
                return Location(self.file, 1, 1)
            probe = probe[:-1]

    def _value(self, path: Path) -> Any:
        value = self.data
        for part in path:
            try:
                value = value[part]
            except (KeyError, IndexError, TypeError):
                return ""
        return value

    def _block_indent(self, indicator_line: int) -> int:
        for text in self.lines[indicator_line:]:
            if text.strip():
                return len(text) - len(text.lstrip(" "))
        return 0

    def locate_in_scalar(self, path: Path, line_in_text: int, col_in_text: int) -> Location:
        """Map a 1-based position inside a string value (a CEL expression, a regex) to the file."""
        fields = self.scalar_styles.get(tuple(path))
        if fields is None:
            return self.locate(path)
        style = ScalarStyle(*fields)
        text_lines = str(self._value(path)).splitlines() or [""]
        if line_in_text > len(text_lines):  # e.g. "unexpected end": point just past the text
            line_in_text, col_in_text = len(text_lines), len(text_lines[-1]) + 1
        if style.style in ("|", ">"):
            # Block scalars start on the line after the indicator; every content line
            # shares the indentation of the first non-empty one.
            file_line = style.line + line_in_text
            return Location(self.file, file_line, self._block_indent(style.line) + col_in_text)
        if line_in_text == 1:
            quote = 1 if style.style in ('"', "'") else 0
            return Location(self.file, style.line, style.col + quote + col_in_text - 1)
        return Location(self.file, style.line, style.col)


@dataclass
class ParsedFile:
    documents: list[SourceDocument]
    problems: list[Problem]


class _MemoResolver(VersionedResolver):
    """ruamel's resolver looks up the YAML version (through exception handling) for
    every scalar; config files are YAML 1.2 throughout, so look it up once."""

    @property
    def versioned_resolver(self) -> Any:
        table = self.__dict__.get("_memo_table")
        if table is None:
            table = self.__dict__["_memo_table"] = VersionedResolver.versioned_resolver.fget(self)  # type: ignore[attr-defined]
        return table

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        """A plain scalar's tag depends on its text alone (no path resolvers here), and a
        file repeats its keys and values: match each text against the patterns once, and
        share its tag (which then spells itself once)."""
        if kind is ScalarNode and implicit[0]:
            memo = self.__dict__.setdefault("_memo_tags", {})
            tag = memo.get(value)
            if tag is None:
                tag = memo[value] = super().resolve(kind, value, implicit)
            return tag
        return super().resolve(kind, value, implicit)


class _Refused(Exception):
    """Internal: a node we will not construct; carries the problem to report."""

    def __init__(self, node: Node | None, code: str, message: str) -> None:
        super().__init__(message)
        self.node = node
        self.code = code
        self.message = message


def parse_yaml(text: str, file: str) -> ParsedFile:
    """Parse every document in ``text``. Never raises: failures become problems."""
    lines = tuple(text.splitlines())
    documents: list[SourceDocument] = []
    problems: list[Problem] = []
    # libyaml (via ruamel.yaml.clib) is 5x faster, but it recurses in C and can crash
    # the process on pathologically deep nesting; such text goes to the pure-Python
    # parser, whose recursion ends in a RecursionError we report.
    loader = YAML(typ="safe", pure=_looks_deep(text))
    loader.Resolver = _MemoResolver
    try:
        for index, root in enumerate(_compose_all(loader, text)):
            if root is None:
                continue
            builder = _Builder()
            try:
                data = builder.build(root, (), 0)
            except _Refused as refused:
                problems.append(_problem_at(file, refused.node, refused.code, refused.message))
                continue
            documents.append(
                SourceDocument(
                    file=file,
                    index=index,
                    data=data,
                    content_hash=content_hash(data),
                    positions=builder.positions,
                    key_positions=builder.key_positions,
                    scalar_styles=builder.styles,
                    lines=lines,
                )
            )
    except MarkedYAMLError as err:
        problems.append(_syntax_problem(file, err))
    except YAMLError as err:
        problems.append(Problem(Location(file, 1, 1), "yaml-syntax", f"YAML syntax error: {err}."))
    except RecursionError:
        problems.append(
            Problem(
                Location(file, 1, 1),
                "yaml-too-deep",
                f"YAML nesting is too deep to parse; config documents may nest at most {_MAX_DEPTH} levels.",
            )
        )
    return ParsedFile(documents, problems)


_BRACKETS = re.compile(r"[\[\]{}]")
_DEEP_INDENT = re.compile(r"^[ \t]{257}", re.MULTILINE)  # a line indented past 256
_DASHES = re.compile(r"(?:-[ \t]+){32,}")


def _looks_deep(text: str) -> bool:
    """True when ``text`` may nest far deeper than any config needs (checked cheaply)."""
    if _DASHES.search(text):
        return True
    if _DEEP_INDENT.search(text):
        return True
    if text.count("[") + text.count("{") > _MAX_DEPTH:
        depth = deepest = 0
        for match in _BRACKETS.finditer(text):
            depth = depth + 1 if match.group() in "[{" else max(depth - 1, 0)
            deepest = max(deepest, depth)
            if deepest > _MAX_DEPTH:
                return True
    return False


def _compose_all(loader: YAML, text: str) -> Iterator[Node | None]:
    yield from loader.compose_all(io.StringIO(text))


def content_hash(data: Any) -> str:
    """A stable hash of a document's data (key order and formatting do not matter)."""
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


_UNCLOSED = {
    "quoted scalar": "a quoted string opened here is never closed: add its closing quote",
    "flow mapping": "a `{` opened here is never closed: add its `}`",
    "flow sequence": "a `[` opened here is never closed: add its `]`",
}


def _syntax_problem(file: str, err: MarkedYAMLError) -> Problem:
    """A YAML syntax error at the place to fix: where an unclosed construct opened (the
    scanner only notices at the end of the file), else where the problem was found."""
    context = err.context or ""
    problem = err.problem or ""
    unclosed = next((text for construct, text in _UNCLOSED.items() if construct in context), None)
    if (
        unclosed is not None
        and err.context_mark is not None
        and ("end of stream" in problem or "document" in problem or "expected ','" in problem)
    ):
        mark = err.context_mark
        return Problem(Location(file, mark.line + 1, mark.column + 1), "yaml-syntax", f"YAML syntax error: {unclosed}.")
    mark = err.problem_mark or err.context_mark
    what = " ".join(p for p in (context, problem) if p) or "invalid YAML"
    line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
    return Problem(
        Location(file, line, col),
        "yaml-syntax",
        f"YAML syntax error: {what}. Fix the YAML at this position (check indentation, quotes and colons).",
    )


def _problem_at(file: str, node: Node | None, code: str, message: str) -> Problem:
    if node is None:
        return Problem(Location(file, 1, 1), code, message)
    return Problem(Location(file, node.start_mark.line + 1, node.start_mark.column + 1), code, message)


class _Builder:
    """Turns a composed node graph into plain data, recording positions."""

    def __init__(self) -> None:
        self.positions: dict[Path, tuple[int, int]] = {}
        self.key_positions: dict[Path, tuple[int, int]] = {}
        self.styles: dict[Path, tuple[str | None, int, int]] = {}
        self.budget = _MAX_NODES
        # id(tag object) -> (that object, its text): ruamel spells a tag anew at each ask.
        self._tags: dict[int, tuple[Any, str | None]] = {}

    def _tag(self, node: Node) -> str | None:
        tag = node.ctag
        known = self._tags.get(id(tag))
        if known is None:
            known = self._tags[id(tag)] = (tag, None if tag is None else str(tag))
        return known[1]

    def build(self, node: Node, path: Path, depth: int) -> Any:
        self.budget -= 1
        if self.budget < 0:
            raise _Refused(
                node,
                "yaml-alias-bomb",
                f"document expands to more than {_MAX_NODES:,} nodes (an alias expansion bomb?); reduce the use of "
                "YAML aliases.",
            )
        if depth > _MAX_DEPTH:
            raise _Refused(node, "yaml-too-deep", f"nesting deeper than {_MAX_DEPTH} levels; flatten the document.")
        self.positions.setdefault(path, (node.start_mark.line + 1, node.start_mark.column + 1))
        if isinstance(node, ScalarNode):
            return self._scalar(node, path)
        if isinstance(node, SequenceNode):
            self._check_tag(node, "seq")
            return [self.build(item, (*path, i), depth + 1) for i, item in enumerate(node.value)]
        if isinstance(node, MappingNode):
            self._check_tag(node, "map")
            return self._mapping(node, path, depth)
        raise _Refused(node, "yaml-node", "unsupported YAML node")

    def _check_tag(self, node: Node, expected: str) -> None:
        if self._tag(node) != _CORE + expected:
            raise _Refused(
                node,
                "yaml-tag",
                f"tag `{node.tag}` is not allowed: config is plain data (maps, lists, strings, numbers, booleans, "
                "null). Remove the tag.",
            )

    def _mapping(self, node: MappingNode, path: Path, depth: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        explicit: set[str] = set()
        merged: list[tuple[ScalarNode, Node]] = []
        for key_node, value_node in node.value:
            if self._tag(key_node) == _MERGE:
                merged.append((key_node, value_node))
                continue
            key = self._key(key_node)
            if key in explicit:
                first = self.key_positions.get((*path, key))
                where = f" (first at line {first[0]})" if first else ""
                raise _Refused(
                    key_node,
                    "yaml-duplicate-key",
                    f"duplicate key `{key}`{where}; a key may appear once per mapping. Remove one of them.",
                )
            explicit.add(key)
            self.key_positions.setdefault((*path, key), (key_node.start_mark.line + 1, key_node.start_mark.column + 1))
            result[key] = self.build(value_node, (*path, key), depth + 1)
        # `<<: *defaults` merge keys: explicit keys win, earlier merges win over later.
        for key_node, value_node in merged:
            sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
            for source in sources:
                if not isinstance(source, MappingNode):
                    raise _Refused(key_node, "yaml-merge", "a `<<` merge key needs a mapping or a list of mappings.")
                for key, value in self._mapping(source, path, depth).items():
                    result.setdefault(key, value)
        return result

    def _key(self, node: Node) -> str:
        if not isinstance(node, ScalarNode):
            raise _Refused(node, "yaml-key", "mapping keys must be plain strings, not lists or mappings.")
        if self._tag(node) not in _KEY_TAGS:
            self._check_tag(node, "str")
        return str(node.value)

    def _scalar(self, node: ScalarNode, path: Path) -> Any:
        full_tag = str(self._tag(node))
        tag = full_tag.removeprefix(_CORE) if full_tag.startswith(_CORE) else None
        value: str = node.value
        if tag in ("str", "timestamp"):
            self.styles.setdefault(path, (node.style, node.start_mark.line + 1, node.start_mark.column + 1))
            return value
        if tag == "null":
            return None
        if tag == "bool":
            return value.lower() == "true"
        if tag == "int":
            return _to_int(value)
        if tag == "float":
            number = _to_float(value)
            if number != number or number in (float("inf"), float("-inf")):
                raise _Refused(
                    node,
                    "yaml-value",
                    f"`{value}` is not allowed: NaN and infinity cannot be represented in JSON. Use a finite number.",
                )
            return number
        raise _Refused(
            node,
            "yaml-tag",
            f"tag `{node.tag}` is not allowed: config is plain data (maps, lists, strings, numbers, booleans, null). "
            "Remove the tag.",
        )


def _to_int(text: str) -> int:
    digits = text.replace("_", "")
    sign = -1 if digits.startswith("-") else 1
    digits = digits.lstrip("+-")
    for prefix, base in (("0x", 16), ("0o", 8), ("0b", 2)):
        if digits.lower().startswith(prefix):
            return sign * int(digits[2:], base)
    return sign * int(digits)


def _to_float(text: str) -> float:
    lowered = text.replace("_", "").lower()
    if lowered in (".inf", "+.inf"):
        return float("inf")
    if lowered == "-.inf":
        return float("-inf")
    if lowered == ".nan":
        return float("nan")
    return float(lowered)
