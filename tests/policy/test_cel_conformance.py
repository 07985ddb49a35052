"""The two CEL engines give the same verdict (true / false / error) for the same expression and data.

Verdict: "true" only for a boolean true without error, "false" for a boolean false without error,
"error" for everything else (evaluation errors and non-boolean values). An expected verdict is
what the CEL specification gives; where the engines differ the case is marked xfail(strict) with
"engine divergence" in its reason, so that every known difference stays visible and a fix shows
up as an unexpected pass. A case failing because of a known bug in the runtime (not a difference
between the engines) is marked the same way with a reason starting "bug:".
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path
from typing import Any

import pytest

from runtime.config.compile import load_snapshot
from runtime.errors import CelCompileError, ToolrtError
from runtime.policy.cel import POLICY_VARIABLES, RULE_VARIABLES, Outcome, get_engine
from runtime.policy.celrefs import analyse, tokenize
from runtime.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
CONFIG_DIRS = (ROOT / "examples" / "coding-agent", ROOT / "examples" / "customer-service", ROOT / "policies")
ENGINES = ("fast", "portable")
CODES = {"T": "true", "F": "false", "E": "error"}


def verdict(outcome: Outcome) -> str:
    if outcome.is_true:
        return "true"
    if outcome.error is None and outcome.value is False:
        return "false"
    return "error"


@functools.cache
def compiled(engine: str, source: str, variables: tuple[str, ...] = RULE_VARIABLES) -> Any:
    return get_engine(engine, translated=False).compile(source, variables)


def run(engine: str, program: Any, data: dict[str, Any], variables: tuple[str, ...]) -> str:
    """The verdict of ``program`` on ``data``; an exception escaping the engine is reported, not raised."""
    try:
        activation = get_engine(engine, translated=False).activation(data, variables)
        return verdict(program.evaluate(activation))
    except Exception as err:
        return f"raised {type(err).__name__}: {err}"


def both(source: str, data: dict[str, Any], variables: tuple[str, ...] = RULE_VARIABLES) -> tuple[str, str]:
    return tuple(run(engine, compiled(engine, source, variables), data, variables) for engine in ENGINES)  # type: ignore[return-value]


def divergence(reason: str) -> pytest.MarkDecorator:
    """xfail(strict) for a known difference; a reason starting with "bug:" names a runtime bug instead."""
    return pytest.mark.xfail(
        strict=True, reason=reason if reason.startswith("bug:") else f"engine divergence: {reason}"
    )


# ---------------------------------------------------------------------------
# (a) every rule expression and policy `when` in examples/ and policies/

TOOL = {"name": "x", "read_only": True, "risk": "low"}
SESSION = {"id": "s", "labels": {"customer_id": "C-42"}}
CALL = {"id": "c1"}


@functools.cache
def config_expressions() -> dict[str, dict[str, Any]]:
    """``kind:owner/rule`` -> source, variables and the program compiled by each engine's snapshot."""
    found: dict[str, dict[str, Any]] = {}

    def add(key: str, source: str, variables: tuple[str, ...], engine: str, program: Any) -> None:
        entry = found.setdefault(key, {"source": source, "variables": variables, "programs": {}})
        assert entry["source"] == source, f"{key} has two different sources"
        entry["programs"].setdefault(engine, program)

    for directory in CONFIG_DIRS:
        for engine in ENGINES:
            snapshot = load_snapshot([directory], Settings(cel_engine=engine, schema_engine="portable"))
            assert snapshot.cel_engine == engine
            for name, tool in snapshot.tools.items():
                for rule in tool.rules:
                    add(f"tool:{name}/{rule.name}", rule.source, RULE_VARIABLES, engine, rule.program)
            for policy in snapshot.policies:
                for rule in policy.rules:
                    if rule.when is not None:
                        add(f"policy:{policy.name}/{rule.name}", rule.when.source, POLICY_VARIABLES, engine, rule.when)
    return found


def case(
    label: str, expected: str, args: dict[str, Any] | None = None, reason: str | None = None, **other: Any
) -> tuple[str, str, dict[str, Any], str | None]:
    data = {"args": args if args is not None else {}, "tool": TOOL, "session": SESSION, "call": CALL, "commands": []}
    data.update(other)
    return label, expected, data, reason


# A customer-service session: the customer's ticket and order ids, as the app puts them in the labels.
CUSTOMER = {"id": "s", "labels": {"customer_id": "C-42", "tickets": "T-1001,T-1003", "orders": "O-555,O-556"}}


def own_id_cases(
    field: str, own: str, other: str, prefix: str, any_id: str
) -> list[tuple[str, str, dict[str, Any], str | None]]:
    """The customer-service ownership rules: the id must be a whole item of the session's list."""
    return [
        case("satisfies: one of the customer's ids", "true", {field: own}, session=CUSTOMER),
        case("violates: another customer's id", "false", {field: other}, session=CUSTOMER),
        case("violates: a prefix of the customer's id", "false", {field: prefix}, session=CUSTOMER),
        case("violates: a session without the customer's ids", "false", {field: any_id}),
        case("session without labels", "error", {field: any_id}, session={"id": "s"}),
        case("empty args", "error", {}, session=CUSTOMER),
        case("wrong type: int id", "error", {field: 1001}, session=CUSTOMER),
        # An "id" that is the whole list would pass: the input schema's id pattern
        # (no commas) refuses it before any rule runs.
        case(
            "an id holding commas (refused by the schema first)",
            "true",
            {field: CUSTOMER["labels"][field.replace("_id", "s")]},
            session=CUSTOMER,
        ),
    ]


CONFIG_CASES: dict[str, list[tuple[str, str, dict[str, Any], str | None]]] = {
    "tool:file_read/no-parent-escape": [
        case("satisfies: path inside the workspace", "true", {"path": "src/app.py"}),
        case("violates: leading parent segment", "false", {"path": "../secrets.txt"}),
        case("violates: embedded parent segment", "false", {"path": "src/../../etc/passwd"}),
        case("empty args", "error", {}),
        case("wrong type: int", "error", {"path": 7}),
        case("wrong type: list holding ..", "error", {"path": [".."]}),
        case("wrong type: list without ..", "error", {"path": ["a"]}),
    ],
    "tool:file_edit/str-replace-needs-strings": [
        case(
            "satisfies: str_replace with both strings",
            "true",
            {"path": "a", "mode": "str_replace", "old_string": "x", "new_string": "y"},
        ),
        case("satisfies: another mode", "true", {"path": "a", "mode": "append", "content": "x"}),
        case("violates: new_string missing", "false", {"path": "a", "mode": "str_replace", "old_string": "x"}),
        case("empty args", "error", {}),
        case("wrong type: mode is an int, strings missing", "true", {"path": "a", "mode": 1}),
        case("wrong type: mode is an int, strings present", "true", {"mode": 1, "old_string": "x", "new_string": "y"}),
    ],
    "tool:file_edit/content-for-whole-file-modes": [
        case("satisfies: str_replace", "true", {"mode": "str_replace"}),
        case("satisfies: append with content", "true", {"mode": "append", "content": "x"}),
        case("violates: append without content", "false", {"mode": "append"}),
        case("empty args", "error", {}),
        case("wrong type: mode is null, no content", "false", {"mode": None}),
        case("wrong type: mode is an int, no content", "false", {"mode": 1}),
    ],
    "tool:file_edit/insert-needs-line": [
        case("satisfies: insert with line", "true", {"mode": "insert", "line": 3}),
        case("satisfies: another mode", "true", {"mode": "append"}),
        case("violates: insert without line", "false", {"mode": "insert"}),
        case("empty args", "error", {}),
        case("wrong type: mode is a list", "true", {"mode": ["insert"]}),
        # `line` has a minimum but no maximum, so this passes argument validation and reaches the rule.
        case("huge line number", "error", {"path": "a", "mode": "insert", "content": "x", "line": 2**70}),
    ],
    "tool:git_push/not-main": [
        case("satisfies: feature branch", "true", {"branch": "feature/login"}),
        case("satisfies: a name that only contains main", "true", {"branch": "main-fix"}),
        case("violates: main", "false", {"branch": "main"}),
        case("violates: master", "false", {"branch": "master"}),
        case("violates: main in another case", "false", {"branch": "Main"}),
        case("empty args", "error", {}),
        case("wrong type: int", "error", {"branch": 1}),
        case("wrong type: list", "error", {"branch": ["main"]}),
    ],
    "tool:run_tests/tests-only": [
        case("satisfies: a test path", "true", {"path": "tests/test_auth.py"}),
        case("satisfies: a test's node id", "true", {"path": "tests/test_auth.py::TestLogin::test_ok[a-1]"}),
        case("satisfies: no path", "true", {}),
        case("violates: a source path", "false", {"path": "src/app.py"}),
        case("violates: climbing out of tests", "false", {"path": "tests/../.."}),
        case("violates: a name that only starts with tests", "false", {"path": "tests_evil"}),
        case("violates: a pytest option", "false", {"path": "--rootdir=/"}),
        case("violates: a component starting with -", "false", {"path": "tests/-pevil"}),
        case("violates: a backslash", "false", {"path": "tests\\..\\x"}),
        case(
            "violates: a NUL byte",
            "false",
            {"path": "tests/x\x00"},
            "the fast engine cannot read a NUL (its binding cuts the string there), so it reports an error, which "
            "fails closed; the pipeline evaluates this rule in Python (celdirect), where the NUL is refused",
        ),
        case("violates: a trailing newline", "false", {"path": "tests\n"}),
        case("wrong type: int", "error", {"path": 3}),
        case("wrong type: null (present, so has() is true)", "error", {"path": None}),
    ],
    "tool:collect_tests/tests-only": [
        case("satisfies: a test folder", "true", {"path": "tests/unit"}),
        case("satisfies: no path", "true", {}),
        case("violates: a source path", "false", {"path": "src"}),
        case("violates: a dot component", "false", {"path": "tests/./../x"}),
        case("violates: an absolute path", "false", {"path": "/etc"}),
        case("violates: a pytest plugin option", "false", {"path": "-p"}),
        case("wrong type: int", "error", {"path": 3}),
        case("wrong type: null (present, so has() is true)", "error", {"path": None}),
    ],
    **{
        f"tool:{tool}/own-ticket": own_id_cases("ticket_id", "T-1003", "T-1002", "T-100", "T-1001")
        for tool in ("query_ticket", "reply_customer", "close_ticket")
    },
    "tool:query_order/own-order": own_id_cases("order_id", "O-555", "O-777", "O-55", "O-555"),
    "tool:reply_customer/no-refund-promises": [
        case(
            "satisfies: no promise", "true", {"ticket_id": "T-1", "body": "The refunds team will review your request."}
        ),
        case("violates: promise in another case", "false", {"body": "This is a GUARANTEED Refund."}),
        case("violates: promise with a no-break space", "false", {"body": "a guaranteed\u00a0refund"}),
        case("violates: promise with words in between", "false", {"body": "We guarantee you a full refund."}),
        case("violates: promise the other way round", "false", {"body": "Your refund is guaranteed."}),
        case("empty args", "error", {}),
        case("wrong type: int body", "error", {"body": 5}),
    ],
    "tool:reply_customer/no-hidden-characters": [
        case("satisfies: plain text on several lines", "true", {"body": "Hello,\n\tthanks. Merci, René"}),
        case("violates: a zero-width space", "false", {"body": "guaranteed\u200brefund"}),
        case("violates: a right-to-left override", "false", {"body": "x\u202ey"}),
        case("violates: an escape sequence", "false", {"body": "x\x1b[2K"}),
        case("empty args", "error", {}),
        case("wrong type: int body", "error", {"body": 5}),
    ],
    "policy:coding-agent/no-edits-to-ci": [
        case("matches: a workflow file", "true", {"path": ".github/workflows/ci.yml"}),
        case("matches: through ./", "true", {"path": "./.github/workflows/ci.yml"}),
        case("matches: through a parent", "true", {"path": "src/../.github/workflows/ci.yml"}),
        case("matches: in another case", "true", {"path": ".GitHub/workflows/ci.yml"}),
        case("no match: a name that only contains .github", "false", {"path": "docs/x.github.md"}),
        case("no match: a source file", "false", {"path": "src/app.py"}),
        case("no match: no path", "false", {}),
        case("wrong type: int path", "error", {"path": 1}),
    ],
    "policy:coding-agent/tests-ask-when-edits-do-not": [
        case("matches: accept_edits mode", "true", session={"id": "s", "mode": "accept_edits", "labels": {}}),
        case("no match: default mode", "false", session={"id": "s", "mode": "default", "labels": {}}),
        case("session without a mode", "error"),
        case("wrong type: int mode", "false", session={"id": "s", "mode": 1, "labels": {}}),
    ],
    "policy:default-permissions/deny-secret-files": [
        case("matches: .env", "true", {"path": ".env"}),
        case("matches: nested .env.local", "true", {"path": "config/.env.local"}),
        case("matches: private key", "true", {"path": "home/u/.ssh/id_rsa"}),
        case("matches: public key", "true", {"path": "id_ed25519.pub"}),
        case("matches: pem", "true", {"path": "certs/server.pem"}),
        case("matches: .git internals", "true", {"path": ".git/config"}),
        case("matches: a .git directory", "true", {"path": "repo/.git"}),
        case("matches: .git itself", "true", {"path": ".git"}),
        case("matches: .ssh config", "true", {"path": ".ssh/config"}),
        case("matches: .netrc", "true", {"path": "home/u/.netrc"}),
        case("matches: .pgpass", "true", {"path": ".pgpass"}),
        case("matches: dsa key", "true", {"path": "keys/id_dsa"}),
        case("matches: .key", "true", {"path": "certs/server.key"}),
        case("matches: .p12 in another case", "true", {"path": "certs/client.P12"}),
        case("matches: inside a .env.d directory", "true", {"path": ".env.d/app"}),
        case("matches: upper-case .ENV", "true", {"path": ".ENV"}),
        case("no match: a source file", "false", {"path": "src/app.py"}),
        case("no match: .envrc", "false", {"path": ".envrc"}),
        case("no match: .github", "false", {"path": ".github/workflows/ci.yml"}),
        case("no match: .gitignore", "false", {"path": ".gitignore"}),
        case("no match: environment.py", "false", {"path": "environment.py"}),
        case("no match: a .keys file", "false", {"path": "docs/api.keys"}),
        case("no match: a name ending in id_rsa", "false", {"path": "my_id_rsa"}),
        case("no match: a pem backup", "false", {"path": "x.pem.bak"}),
        case("no match: no path", "false", {}),
        case("wrong type: int path", "error", {"path": 1}),
    ],
    "policy:default-permissions/deny-secret-files-in-commands": [
        case("matches: cat .env", "true", commands=[["ls"], ["cat", "./.env"]]),
        case(
            "matches: a key behind sudo", "true", commands=[["sudo", "cp", "id_rsa", "/tmp"], ["cp", "id_rsa", "/tmp"]]
        ),
        case("matches: .git internals", "true", commands=[["cat", ".git/config"]]),
        case("matches: .git itself", "true", commands=[["tar", "czf", "r.tgz", ".git"]]),
        case("matches: .netrc", "true", commands=[["cat", "~/.netrc"]]),
        case("matches: .ssh", "true", commands=[["ls", "~/.ssh"]]),
        case("matches: upper-case .ENV", "true", commands=[["cat", ".ENV"]]),
        case("matches: a .key file", "true", commands=[["cat", "certs/server.key"]]),
        case("matches: .env as an option value", "true", commands=[["docker", "run", "--env-file=.env", "app"]]),
        case("matches: .env from git history", "true", commands=[["git", "show", "HEAD:.env"]]),
        case("matches: .env posted by curl", "true", commands=[["curl", "-d", "@.env", "x"]]),
        case("matches: brace list naming .env", "true", commands=[["cat", "{.env,x}"]]),
        case("matches: brace list naming .git", "true", commands=[["cp", "-r", "{src,.git}", "/tmp"]]),
        case("matches: hidden-name glob .e*", "true", commands=[["cat", ".e*"]]),
        case("matches: hidden-name bracket glob", "true", commands=[["cat", ".en[v]"]]),
        case("matches: hidden-name glob in a directory", "true", commands=[["cat", ".gi?/config"]]),
        case("matches: hidden-name glob below a directory", "true", commands=[["cat", "x/.e*"]]),
        case("matches: brace after the dot", "true", commands=[["cat", ".{env,x}"]]),
        case("matches: brace alternative that is only the dot", "true", commands=[["cat", "{.,}env"]]),
        case("matches: every hidden file", "true", commands=[["cat", ".*"]]),
        case("no match: ordinary commands", "false", commands=[["git", "status"], ["pytest", "-q"]]),
        case("no match: no commands", "false"),
        case("no match: a .envrc", "false", commands=[["cat", ".envrc"]]),
        case("no match: environment.md", "false", commands=[["ls", "docs/environment.md"]]),
        case("no match: .github", "false", commands=[["cat", ".github/workflows/ci.yml"]]),
        case("no match: .gitignore", "false", commands=[["cat", ".gitignore"]]),
        case("no match: a glob over source files", "false", commands=[["cat", "src/*.py"]]),
        case("no match: --exclude-dir=.git", "false", commands=[["grep", "-r", "--exclude-dir=.git", "x", "."]]),
        case(
            "no match: jq filters",
            "false",
            commands=[["jq", ".[0]", "a.json"], ["jq", "-r", ".items[].name", "a.json"]],
        ),
        case("no match: a glob under .github", "false", commands=[["ls", ".github/*"]]),
        case("no match: ordinary brace expansion", "false", commands=[["cp", "app.{py,bak}", "/tmp"]]),
        case("wrong type: an int argument", "error", commands=[["cat", 1]]),
    ],
    "policy:default-permissions/ask-network": [
        case(
            "matches: http handler that writes",
            "true",
            tool={"name": "x", "read_only": False, "handler": "http", "labels": {}},
        ),
        case(
            "matches: labelled network tool",
            "true",
            tool={"name": "x", "read_only": False, "handler": "python", "labels": {"network": "true"}},
        ),
        case(
            "no match: read-only http", "false", tool={"name": "x", "read_only": True, "handler": "http", "labels": {}}
        ),
        case(
            "no match: local tool", "false", tool={"name": "x", "read_only": False, "handler": "python", "labels": {}}
        ),
        case("tool without labels", "error", tool={"name": "x", "read_only": False, "handler": "python"}),
    ],
    "policy:default-permissions/ask-high-risk": [
        case("matches: high", "true", tool={"name": "x", "risk": "high"}),
        case("matches: critical", "true", tool={"name": "x", "risk": "critical"}),
        case("no match: low", "false", tool={"name": "x", "risk": "low"}),
        case("tool without risk", "error", tool={"name": "x"}),
        case("wrong type: int risk", "false", tool={"name": "x", "risk": 3}),
    ],
    "policy:default-permissions/allow-read-only": [
        case("matches: read-only tool", "true", tool={"name": "x", "read_only": True}),
        case("no match: writing tool", "false", tool={"name": "x", "read_only": False}),
        case("tool without read_only", "error", tool={"name": "x"}),
        case("wrong type: string read_only", "false", tool={"name": "x", "read_only": "yes"}),
        case("wrong type: int read_only", "false", tool={"name": "x", "read_only": 1}),
    ],
}


def _config_case_params() -> list[Any]:
    params = []
    for key, cases in CONFIG_CASES.items():
        for label, expected, data, reason in cases:
            marks = [divergence(reason)] if reason else []
            params.append(pytest.param(key, data, expected, id=f"{key} | {label}", marks=marks))
    return params


def test_both_engines_compile_every_config_expression() -> None:
    expressions = config_expressions()
    assert len(expressions) >= 12
    for key, entry in expressions.items():
        assert set(entry["programs"]) == set(ENGINES), key


def test_every_config_expression_has_hand_written_cases() -> None:
    assert set(CONFIG_CASES) == set(config_expressions())


def test_config_cases_include_a_passing_and_a_failing_case() -> None:
    for key, cases in CONFIG_CASES.items():
        assert {"true", "false"} <= {expected for _, expected, _, _ in cases}, key


@pytest.mark.parametrize(("key", "data", "expected"), _config_case_params())
def test_config_expression_gives_the_same_verdict_in_both_engines(
    key: str, data: dict[str, Any], expected: str
) -> None:
    entry = config_expressions()[key]
    verdicts = tuple(run(engine, entry["programs"][engine], data, entry["variables"]) for engine in ENGINES)
    assert verdicts == (expected, expected), f"{entry['source']!r} on {data}"


@pytest.mark.parametrize("engine", ENGINES)
def test_arguments_that_pass_validation_are_evaluated_without_raising(engine: str) -> None:
    snapshot = load_snapshot([CONFIG_DIRS[0]], Settings(cel_engine=engine, schema_engine="portable"))
    tool = snapshot.tools["file_edit"]
    args = {"path": "a.py", "mode": "insert", "content": "x", "line": 2**70}
    assert tool.arguments.validate(args) == ()
    activation = get_engine(engine, translated=False).activation(
        {"args": args, "tool": TOOL, "session": SESSION, "call": CALL}, RULE_VARIABLES
    )
    outcomes = [rule.program.evaluate(activation) for rule in tool.rules]
    assert not all(outcome.is_true for outcome in outcomes)  # fails closed: the value cannot be represented


# A generic sweep: every args field any config expression reads (and every tool/session/call
# field) set to one value of each JSON type; only agreement is asserted.
SWEEP_VALUES = {
    "int": 1,
    "double": 2.5,
    "bool": True,
    "null": None,
    "list": ["main"],
    "map": {"a": 1},
    "string": "main",
    "dotenv": ".env",
    "huge-int": 2**70,
}
# (key, kind) -> reason for a known divergence; none at present: the engines agree on every config
# expression for every JSON type.
SWEEP_DIVERGENCES: dict[tuple[str, str], str] = {
    # The portable engine converts the whole activation up front and fails on any
    # integer beyond 64 bits, even in fields the expression never reads; the fast
    # engine converts lazily. Unreachable in the pipeline: validation refuses such
    # integers before any rule runs.
    (
        "policy:default-permissions/deny-secret-files-in-commands",
        "huge-int",
    ): "portable converts unread fields too and errors on a 2**70 it never reads",
}


def _sweep_params() -> list[Any]:
    params = []
    for key in sorted(CONFIG_CASES):
        for kind in SWEEP_VALUES:
            reason = SWEEP_DIVERGENCES.get((key, kind))
            params.append(
                pytest.param(key, kind, id=f"{key} | all fields {kind}", marks=[divergence(reason)] if reason else [])
            )
    return params


def test_sweep_divergences_name_real_cases() -> None:
    assert {key for key, _ in SWEEP_DIVERGENCES} <= set(CONFIG_CASES)
    assert {kind for _, kind in SWEEP_DIVERGENCES} <= set(SWEEP_VALUES)


@pytest.mark.parametrize(("key", "kind"), _sweep_params())
def test_config_expression_agrees_on_every_json_type(key: str, kind: str) -> None:
    entry = config_expressions()[key]
    fields = sorted({path.fields[0] for e in config_expressions().values() for path in analyse(e["source"]).args_paths})
    value = SWEEP_VALUES[kind]
    data = {
        "args": dict.fromkeys(fields, value),
        "tool": {"name": value, "read_only": value, "risk": value},
        "session": {"id": value, "labels": {"customer_id": value}},
        "call": {"id": value},
        "commands": [],
    }
    fast, portable = (run(engine, entry["programs"][engine], data, entry["variables"]) for engine in ENGINES)
    assert fast == portable, f"{entry['source']!r}: fast={fast} portable={portable}"


# ---------------------------------------------------------------------------
# (b) a corpus of expressions x four activations

ACTIVATIONS: dict[str, dict[str, Any]] = {
    "good": {
        "args": {
            "n": 5,
            "d": 2.5,
            "s": "hello",
            "l": [1, 2, 3],
            "ls": ["a", "b"],
            "m": {"k": "v", "x": {"y": 1}},
            "b": True,
            "z": None,
            "u": 0,
            "path": "src/app.py",
        },
        "tool": {"name": "x", "read_only": True, "risk": "low"},
        "session": {"id": "s", "labels": {"customer_id": "C-42"}},
        "call": {"id": "c1"},
    },
    "other": {
        "args": {
            "n": 2,
            "d": -1.5,
            "s": "world",
            "l": [0, 7],
            "ls": ["c"],
            "m": {"k": "w", "x": {"y": 0}},
            "b": False,
            "z": "set",
            "u": 3,
            "path": "../etc/passwd",
        },
        "tool": {"name": "y", "read_only": False, "risk": "high"},
        "session": {"id": "s2", "labels": {"customer_id": "C-7"}},
        "call": {"id": "c2"},
    },
    "empty": {"args": {}, "tool": {}, "session": {}, "call": {}},
    "wrong": {
        "args": {
            "n": "5",
            "d": "x",
            "s": 7,
            "l": "abc",
            "ls": [1, 2],
            "m": [1],
            "b": "true",
            "z": 0,
            "u": -1,
            "path": 42,
        },
        "tool": {"name": 1, "read_only": "yes", "risk": 3},
        "session": {"id": 1, "labels": "x"},
        "call": {"id": None},
    },
}

# (expression, verdicts on good / other / empty / wrong as T, F or E)
CORPUS: list[tuple[str, str]] = [
    # missing fields and has()
    ("args.missing == 1", "EEEE"),
    ("args.missing.x == 1", "EEEE"),
    ("has(args.n)", "TTFT"),
    ("has(args.missing)", "FFFF"),
    ("has(args.z)", "TTFT"),
    ("has(args.m.k)", "TTEE"),
    ("has(args.m.nope)", "FFEE"),
    ("has(args.m.x.y)", "TTEE"),
    ('!has(args.path) || args.path.startsWith("src/")', "TFTE"),
    ("has(args.s) && args.s.size() > 3", "TTFE"),
    # strings
    ('args.s.startsWith("he")', "TFEE"),
    ('args.s.endsWith("lo")', "TFEE"),
    ('args.s.contains("ell")', "TFEE"),
    ('("," + args.s + ",").contains(",hello,")', "TFEE"),  # a concatenation is a string like any other
    ('args.s.contains("el" + "l")', "TFEE"),
    ('args.s.matches("^h.*o$")', "TFEE"),
    ('args.s.matches("(?i)HELLO")', "TFEE"),
    ('args.s.matches("[0-9]+")', "FFEE"),
    ("args.path.matches('(^|/)\\\\.\\\\.(/|$)')", "FTEE"),
    ("args.s.size() == 5", "TTEE"),
    ("size(args.s) == 5", "TTEE"),
    ('args.s + " world" == "hello world"', "TFEE"),
    ('args.s < "m"', "TFEE"),
    ('args.s == "hello"', "TFEF"),
    ('args.s != "hello"', "FTET"),
    ("args.s == 5", "FFEF"),
    ('"he" + "llo" == args.s', "TFEF"),
    # lists and maps
    ("1 in args.l", "TFEE"),
    ("args.n in [1, 2, 5]", "TTEF"),
    ('args.s in ["hello", "world"]', "TTEF"),
    ('"k" in args.m', "TTEF"),
    ("args.l.size() == 3", "TFET"),
    ("size(args.l) > 1", "TTET"),
    ("args.l.all(x, x > 0)", "TFEE"),
    ("args.l.exists(x, x > 2)", "TTEE"),
    ("args.l.exists_one(x, x > 2)", "TTEE"),
    ("args.l.map(x, x * 2) == [2, 4, 6]", "TFEE"),
    ("args.l.filter(x, x > 1).size() == 2", "TFEE"),
    ("args.ls.all(x, x.size() == 1)", "TTEE"),
    ('args.ls.exists(x, x == "b")', "TFEF"),
    ('args.m.exists(k, k == "x")', "TTEF"),
    ("args.l[0] == 1", "TFEE"),
    ("args.l[5] == 1", "EEEE"),
    ("args.l[-1] == 3", "EEEE"),
    ("args.l + [4] == [1, 2, 3, 4]", "TFEE"),
    ("args.l == [1, 2, 3]", "TFEF"),
    ('args.m["k"] == "v"', "TFEE"),
    ('args.m.k == "v"', "TFEE"),
    ("args.m.x.y == 1", "TFEE"),
    ('args.m.x["y"] > 0', "TFEE"),
    ("size(args.m) == 2", "TTEF"),
    ("args.s.all(c, true)", "EEEE"),
    # numbers: int, double, uint, mixed comparisons, arithmetic errors
    ("args.n > 3", "TFEE"),
    ("args.n > 3.0", "TFEE"),
    ("args.n == 5.0", "TFEF"),
    ("args.n != 5.0", "FTET"),
    ("args.n in [5.0]", "TFEF"),
    ("args.n >= 5.0 && args.n <= 5.0", "TFEE"),
    ("args.d > 2", "TFEE"),
    ("args.d == 2.5", "TFEF"),
    ("args.n == args.d", "FFEF"),
    ("args.n + 1 == 6", "TFEE"),
    ("args.n - 10 < 0", "TTEE"),
    ("args.n * 2 == 10", "TFEE"),
    ("args.n / 2 == 2", "TFEE"),
    ("args.n % 2 == 1", "TFEE"),
    ("-args.n == -5", "TFEE"),
    ("args.d / 2.0 == 1.25", "TFEE"),
    ("args.d * 2.0 == 5.0", "TFEE"),
    ("args.n / 0 == 1", "EEEE"),
    ("args.n % 0 == 0", "EEEE"),
    ("args.d / 0.0 > 1.0", "TFEE"),
    ("args.n + 2.5 > 7.0", "EEEE"),
    ("args.u == 0u", "TFEF"),
    ("args.u >= 0u", "TTEF"),
    ("args.n > 3u", "TFEE"),
    ("args.u + 1u == 1u", "EEEE"),
    ("uint(args.n) == 5u", "TFET"),
    ("int(args.d) == 2", "TFEE"),
    ("double(args.n) == 5.0", "TFET"),
    ('string(args.n) == "5"', "TFET"),
    ("args.n * 9223372036854775807 > 0", "EEEE"),
    ("5u - 6u > 0u", "EEEE"),
    ("type(args.n) == int", "TTEF"),
    # bool, null, ternary, logic with errors
    ("args.b", "TFEE"),
    ("args.b == true", "TFEF"),
    ("!args.b", "FTEE"),
    ("args.b == 1", "FFEF"),
    ("args.z == null", "TFEF"),
    ("args.z != null", "FTET"),
    ("args.n > 3 ? true : false", "TFEE"),
    ('args.n > 3 ? args.s == "hello" : args.missing', "TEEE"),
    ("args.n == 5 ? args.missing : true", "ETET"),
    ("args.s", "EEEE"),
    ("args.n", "EEEE"),
    ("false && args.missing == 1", "FFFF"),
    ("args.missing == 1 && false", "FFFF"),
    ("true || args.missing == 1", "TTTT"),
    ("args.missing == 1 || true", "TTTT"),
    ("args.missing == 1 || false", "EEEE"),
    ("true && args.missing == 1", "EEEE"),
    ("!(args.missing == 1)", "EEEE"),
    ("args.b && args.n > 3", "TFEE"),
    ("args.b || args.n > 3", "TFEE"),
    # the other variables
    ("tool.read_only == true", "TFEF"),
    ('tool.risk == "high" || tool.risk == "critical"', "FTEF"),
    ('tool.name.startsWith("x")', "TFEE"),
    ('session.labels.customer_id == "C-42"', "TFEE"),
    ("has(session.labels.customer_id)", "TTEE"),
    ('call.id == "c1"', "TFEF"),
    ("call.id != null", "TTEF"),
]

HAS_INTERMEDIATE = "has() whose operand's receiver is missing or not a map: fast=error (CEL spec), portable=false"
CORPUS_DIVERGENCES: dict[tuple[str, str], str] = {
    **{
        (expr, act): HAS_INTERMEDIATE
        for expr in ("has(args.m.k)", "has(args.m.nope)", "has(args.m.x.y)", "has(session.labels.customer_id)")
        for act in ("empty", "wrong")
    },
    (
        "args.s.all(c, true)",
        "good",
    ): "fast=error portable=true: cel-python iterates a string's characters in comprehensions",
    (
        "args.s.all(c, true)",
        "other",
    ): "fast=error portable=true: cel-python iterates a string's characters in comprehensions",
}


def _corpus_params() -> list[Any]:
    params = []
    for expr, codes in CORPUS:
        for act, code in zip(ACTIVATIONS, codes, strict=True):
            reason = CORPUS_DIVERGENCES.get((expr, act))
            params.append(
                pytest.param(expr, act, CODES[code], id=f"{expr} @{act}", marks=[divergence(reason)] if reason else [])
            )
    return params


def test_corpus_is_large_and_has_no_duplicates() -> None:
    expressions = [expr for expr, _ in CORPUS]
    assert len(expressions) >= 60
    assert len(set(expressions)) == len(expressions)


def test_corpus_divergences_name_real_cases() -> None:
    known = {(expr, act) for expr, _ in CORPUS for act in ACTIVATIONS}
    assert set(CORPUS_DIVERGENCES) <= known


@pytest.mark.parametrize(("expr", "act", "expected"), _corpus_params())
def test_corpus_expression_gives_the_same_verdict_in_both_engines(expr: str, act: str, expected: str) -> None:
    assert both(expr, ACTIVATIONS[act]) == (expected, expected)


# Single-activation cases: RE2 semantics of matches(), Unicode, the policy `commands` variable,
# and further divergences found while writing the corpus.
EXTRA: list[tuple[str, str, dict[str, Any], str, str | None]] = [
    ("matches is unanchored", 'args.s.matches("ell")', {"s": "hello"}, "true", None),
    ("empty pattern matches the empty string", 'args.s.matches("")', {"s": ""}, "true", None),
    ("RE2 $ is the end of text, not before a final newline", 'args.s.matches("^x$")', {"s": "x\n"}, "false", None),
    ("RE2 \\d is ASCII", 'args.s.matches("^\\\\d$")', {"s": "\u0663"}, "false", None),
    ("RE2 \\w is ASCII", 'args.s.matches("^\\\\w$")', {"s": "é"}, "false", None),
    ("RE2 \\pL is Unicode", 'args.s.matches("\\\\pL")', {"s": "é"}, "true", None),
    ("RE2 (?i) folds Unicode case", 'args.s.matches("(?i)é")', {"s": "É"}, "true", None),
    ("dot does not match newline", 'args.s.matches("a.c")', {"s": "a\nc"}, "false", None),
    ("(?s) dot matches newline", 'args.s.matches("(?s)a.c")', {"s": "a\nc"}, "true", None),
    ("dot matches one code point", 'args.s.matches("^.$")', {"s": "😀"}, "true", None),
    ("catastrophic shape runs in linear time", 'args.s.matches("(a+)+b")', {"s": "a" * 3000}, "false", None),
    ("look-ahead is an evaluation error", 'args.s.matches("(?=a)")', {"s": "a"}, "error", None),
    ("invalid pattern is an evaluation error", 'args.s.matches("(")', {"s": "a"}, "error", None),
    ("size counts code points (astral)", "args.s.size() == 1", {"s": "😀"}, "true", None),
    ("size counts code points (combining)", "args.s.size() == 2", {"s": "e\u0301"}, "true", None),
    ("largest int64 is fine", "args.n > 0", {"n": 2**63 - 1}, "true", None),
    ("int overflow is an error", "args.n + 1 > 0", {"n": 2**63 - 1}, "error", None),
    ("integer beyond 64 bits", "args.n > 0", {"n": 2**70}, "error", None),
    ("negative integer beyond 64 bits", "args.n < 0", {"n": -(2**70)}, "error", None),
    ("int-valued double equals int in a list", "args.l == [1]", {"l": [1.0]}, "true", None),
    ("int-valued double equals int in a map", 'args.m == {"k": 1}', {"m": {"k": 1.0}}, "true", None),
    ("negative double divided by zero is -inf", "args.d / 0.0 < 0.0", {"d": -1.5}, "true", None),
    ("0.0 / 0.0 is NaN, never equal", "args.d / 0.0 == args.d / 0.0", {"d": 0.0}, "false", None),
    ("size of null is an error", "args.z.size() == 0", {"z": None}, "error", None),
    ("size() function of null is an error", "size(args.z) == 0", {"z": None}, "error", None),
    ("list has no contains()", '!args.l.contains("..")', {"l": ["a"]}, "error", None),
    ("map has no contains()", '!args.m.contains("..")', {"m": {"a": 1}}, "error", None),
    ("bool is not a number (ordering)", "args.b > 0", {"b": True}, "error", None),
    ("bool is not a number (ordering with double)", "args.b > 0.5", {"b": True}, "error", None),
    ("bool is not a number (arithmetic)", "args.b + 1 == 2", {"b": True}, "error", None),
    ("int 1 is not bool true", "args.n == true", {"n": 1}, "false", None),
    (
        "strings are not iterable (exists)",
        'args.s.exists(c, c == "b")',
        {"s": "abc"},
        "error",
        "fast=error portable=false: cel-python iterates a string's characters",
    ),
    ("mixed list compared with ==", '[1, "a"].all(x, x == 1)', {}, "false", None),
    ("mixed list: exists stops at the first true", "args.l.exists(x, x == 2)", {"l": ["a", 2]}, "true", None),
    ("exists: an error is absorbed by a true element", "[0, 1].exists(x, 1 / x > 0)", {}, "true", None),
    ("all: an error is absorbed by a false element", "[1, 0].all(x, 1 / x < 0)", {}, "false", None),
    ("all: an error with no false element is an error", "[0, 1].all(x, 1 / x > 0)", {}, "error", None),
    ("exists_one: an error is an error", "[1, 2].exists_one(x, 2 / (x - 1) > 0)", {}, "error", None),
    ("map literal: missing key is an error", '{"a": 1}["b"] == 1', {}, "error", None),
    ("map literal: in tests keys", '"b" in {"a": 1}', {}, "false", None),
    ("int overflow in a literal", "9223372036854775807 * 2 > 0", {}, "error", None),
    ("int64 min / -1 overflows", "-9223372036854775808 / -1 == 0", {}, "error", None),
    ("truncating double to int", "int(args.d) == -2", {"d": -2.9}, "true", None),
    ("double beyond int64 cannot become int", "int(args.d) > 0", {"d": 1e20}, "error", None),
    ("negative int cannot become uint", "uint(args.n) > 0u", {"n": -1}, "error", None),
    ("unparsable int()", 'int("x") == 1', {}, "error", None),
    ("null equals null", "null == null", {}, "true", None),
    # a string is not indexable in CEL; cel-python indexes it by character, so `!=` fails open
    ("strings are not indexable", 'args.s[0] != "x"', {"s": "abc"}, "error", None),
    # computed strings and doubles: cel-python returns plain Python str / float for these
    ("concatenated string in a list", 'args.s + "x" in ["ax"]', {"s": "a"}, "true", None),
    ("concatenated string is not unequal to itself", 'args.s + "x" != "ax"', {"s": "a"}, "false", None),
    ("concatenated string orders", 'args.s + "x" < "z"', {"s": "a"}, "true", None),
    ("double product orders", "args.d * 2.0 > 4.0", {"d": 2.5}, "true", None),
    ("doubles computed in map() compared with a list", "args.l.map(x, x + 0.5) == [1.5]", {"l": [1.0]}, "true", None),
    (
        "concatenated strings compared in a comprehension",
        'args.l.exists(x, x + "" == "b")',
        {"l": ["a", "b"]},
        "true",
        None,
    ),
]

POLICY_EXTRA: list[tuple[str, str, list[list[str]], str]] = [
    ("a dangerous command", 'commands.exists(c, c[0] == "rm" && "-rf" in c)', [["ls"], ["rm", "-rf", "/"]], "true"),
    ("no command at all", 'commands.exists(c, c[0] == "rm")', [], "false"),
    ("all over no commands", "commands.all(c, c.size() > 0)", [], "true"),
    ("index beyond a short command", 'commands.exists(c, c[1] == "-rf")', [["ls"]], "error"),
    ("guarded index", 'commands.exists(c, c.size() > 1 && c[1] == "-rf")', [["ls"]], "false"),
]


def _extra_params() -> list[Any]:
    return [
        pytest.param(expr, args, expected, id=label, marks=[divergence(reason)] if reason else [])
        for label, expr, args, expected, reason in EXTRA
    ]


@pytest.mark.parametrize(("expr", "args", "expected"), _extra_params())
def test_extra_expression_gives_the_same_verdict_in_both_engines(
    expr: str, args: dict[str, Any], expected: str
) -> None:
    data = {"args": args, "tool": TOOL, "session": SESSION, "call": CALL}
    assert both(expr, data) == (expected, expected)


@pytest.mark.parametrize(
    ("expr", "commands", "expected"), [pytest.param(e, c, v, id=label) for label, e, c, v in POLICY_EXTRA]
)
def test_policy_commands_variable_gives_the_same_verdict_in_both_engines(
    expr: str, commands: list[list[str]], expected: str
) -> None:
    data = {"args": {}, "tool": TOOL, "session": SESSION, "call": CALL, "commands": commands}
    assert both(expr, data, POLICY_VARIABLES) == (expected, expected)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_variable_missing_from_the_activation_is_an_error(engine: str) -> None:
    program = compiled(engine, 'session.id == "s"')
    assert run(engine, program, {"args": {}}, RULE_VARIABLES) == "error"


# ---------------------------------------------------------------------------
# fail closed: an error or a non-boolean never passes a rule


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "expr", ["args.missing == 1", "args.n / 0 == 0", "args.l[9] == 1", 'args.s.matches("(")', "args.n > args.s"]
)
def test_a_rule_whose_evaluation_errors_never_counts_as_passing(engine: str, expr: str) -> None:
    data = {"args": {"n": 1, "s": "x", "l": [1]}, "tool": TOOL, "session": SESSION, "call": CALL}
    outcome = compiled(engine, expr).evaluate(get_engine(engine, translated=False).activation(data, RULE_VARIABLES))
    assert outcome.error
    assert outcome.value is None
    assert outcome.is_true is False


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("expr", "value"),
    [
        ("args.t", "true"),
        ('"true"', "true"),
        ("1", 1),
        ("args.n", 1),
        ("[true]", [True]),
        ("args.z", None),
        ('{"ok": true}', {"ok": True}),
    ],
)
def test_a_non_boolean_result_never_counts_as_passing(engine: str, expr: str, value: Any) -> None:
    data = {"args": {"t": "true", "n": 1, "z": None}, "tool": TOOL, "session": SESSION, "call": CALL}
    outcome = compiled(engine, expr).evaluate(get_engine(engine, translated=False).activation(data, RULE_VARIABLES))
    assert outcome.error is None
    assert outcome.value == value
    assert outcome.is_true is False


def test_cel_expr_python_reports_an_error_as_a_truthy_value() -> None:
    """The trap the fast engine's wrapper exists for: the raw binding returns an error *value*."""
    cel = pytest.importorskip("cel_expr_python.cel")
    env = cel.NewEnv(variables={"args": cel.Type.Map(cel.Type.STRING, cel.Type.DYN)})
    result = env.compile("args.missing == 1").eval(env.Activation({"args": {}}))
    assert result.type() == cel.Type.ERROR
    assert isinstance(result.value(), str) and bool(result.value())
    wrapped = (
        get_engine("fast")
        .compile("args.missing == 1", ("args",))
        .evaluate(get_engine("fast").activation({"args": {}}, ("args",)))
    )
    assert wrapped.error == result.value()
    assert not wrapped.is_true


@pytest.mark.parametrize(
    ("outcome", "is_true"),
    [
        (Outcome(value=True), True),
        (Outcome(value=False), False),
        (Outcome(value="true"), False),
        (Outcome(value=1), False),
        (Outcome(value=[True]), False),
        (Outcome(value=True, error="boom"), False),
        (Outcome(error="boom"), False),
        (Outcome(), False),
    ],
)
def test_outcome_is_true_only_for_boolean_true_without_error(outcome: Outcome, is_true: bool) -> None:
    assert outcome.is_true is is_true


# ---------------------------------------------------------------------------
# compile errors

SYNTAX_ERRORS = [
    # (source, line, col): the position of the offending token, 1-based
    ("args.n > > 3", 1, 10),
    ("args.a +* 2", 1, 9),
    ("args.n = 1", 1, 8),
    ("'abc", 1, 1),
    ("args.n == 1\n&& )", 2, 4),
    ("   \n\n   )", 3, 4),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("source", "line", "col"), SYNTAX_ERRORS)
def test_a_syntax_error_raises_with_a_one_based_position(engine: str, source: str, line: int, col: int) -> None:
    with pytest.raises(CelCompileError) as caught:
        get_engine(engine, translated=False).compile(source, RULE_VARIABLES)
    assert (caught.value.line, caught.value.col) == (line, col)
    assert caught.value.message
    assert isinstance(caught.value, ToolrtError)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("source", "line"), [("args.n >", 1), ("(args.n", 1), ("args.n == 1 &&\n  args.m ==", 2), ("args.n == 1 ? 2", 1)]
)
def test_an_expression_that_ends_too_early_raises_on_its_last_line(engine: str, source: str, line: int) -> None:
    with pytest.raises(CelCompileError) as caught:
        get_engine(engine, translated=False).compile(source, RULE_VARIABLES)
    last = source.splitlines()[-1]
    last_token_col = tokenize(last)[-1].offset + 1
    assert caught.value.line == line
    assert caught.value.col in (last_token_col, len(last) + 1)  # the last token (portable) or just past it (fast)


@pytest.mark.xfail(
    strict=True,
    reason=(
        "engine divergence: at the end of input fast reports the column after the last character (1:9), portable the "
        "last character (1:8)"
    ),
)
def test_an_expression_that_ends_too_early_has_the_same_position_in_both_engines() -> None:
    positions = set()
    for engine in ENGINES:
        with pytest.raises(CelCompileError) as caught:
            get_engine(engine, translated=False).compile("args.n >", RULE_VARIABLES)
        positions.add((caught.value.line, caught.value.col))
    assert len(positions) == 1


@pytest.mark.parametrize(
    ("source", "variables", "name", "col"),
    [
        ("foo == 1", RULE_VARIABLES, "foo", 1),
        ("args.x && bar", RULE_VARIABLES, "bar", 11),
        ("commands.size() > 0", RULE_VARIABLES, "commands", 1),
        ("nosuch(args.n)", RULE_VARIABLES, "nosuch", None),
    ],
)
def test_the_fast_engine_rejects_undeclared_identifiers_at_compile_time(
    source: str, variables: tuple[str, ...], name: str, col: int | None
) -> None:
    with pytest.raises(CelCompileError) as caught:
        get_engine("fast").compile(source, variables)
    assert f"undeclared reference to '{name}'" in caught.value.message
    assert caught.value.line == 1
    if col is not None:
        assert caught.value.col == col


def test_commands_is_declared_for_policies_only() -> None:
    program = get_engine("fast").compile("commands.size() > 0", POLICY_VARIABLES)
    assert program.evaluate(get_engine("fast").activation({"commands": [["ls"]]}, POLICY_VARIABLES)).is_true


def test_the_portable_engine_reports_undeclared_identifiers_at_evaluation() -> None:
    engine = get_engine("portable")
    assert engine.checks_types is False
    outcome = engine.compile("foo == 1", RULE_VARIABLES).evaluate(engine.activation({"args": {}}, RULE_VARIABLES))
    assert outcome.error and not outcome.is_true


@pytest.mark.parametrize("source", ["1 + 'a'", "args.s.size() == 5.0", "5 in [5.0, 6.0]", '1 in {"a": 1}', "true == 1"])
def test_the_fast_engine_rejects_statically_ill_typed_expressions(source: str) -> None:
    fast = get_engine("fast")
    assert fast.checks_types is True
    with pytest.raises(CelCompileError) as caught:
        fast.compile(source, RULE_VARIABLES)
    assert "no matching overload" in caught.value.message
    get_engine("portable").compile(source, RULE_VARIABLES)  # the portable engine does not check types


def test_get_engine_names_and_caching() -> None:
    assert get_engine("fast").name == "fast"
    assert get_engine("portable").name == "portable"
    assert get_engine("auto") is get_engine("fast")
    assert get_engine("portable") is get_engine("portable")
    with pytest.raises(ValueError, match="unknown CEL engine"):
        get_engine("quick")


# ---------------------------------------------------------------------------
# thread safety of the portable engine


def test_portable_program_is_safe_to_evaluate_from_several_threads() -> None:
    engine = get_engine("portable")
    program = engine.compile('args.s + ":" + string(args.n * 2)', RULE_VARIABLES)
    check = engine.compile("args.l.all(x, x < args.n) && args.n % 2 == args.parity", RULE_VARIABLES)
    threads, per_thread = 4, 500
    barrier = threading.Barrier(threads)
    wrong: list[str] = []

    def work(index: int) -> None:
        barrier.wait()
        for i in range(per_thread):
            n = index * 100_000 + i
            args = {"s": f"t{index}", "n": n, "l": [0, n - 1] if n else [], "parity": n % 2}
            activation = engine.activation({"args": args}, RULE_VARIABLES)
            text = program.evaluate(activation) if i % 2 else check.evaluate(activation)
            want = Outcome(value=f"t{index}:{2 * n}") if i % 2 else Outcome(value=True)
            if text != want:
                wrong.append(f"thread {index} n={n}: {text}")

    workers = [threading.Thread(target=work, args=(index,)) for index in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert wrong == []


@pytest.mark.parametrize("source", ["nosuchfn(args.x) == 1", "args.x.nosuch()"])
def test_an_evaluation_error_names_the_problem_without_dumping_the_arguments_or_session(source: str) -> None:
    engine = get_engine("portable")  # cel-python appends its whole activation to such messages
    data = {
        "args": {"x": "value-of-x"},
        "session": {"id": "s", "user": "", "mode": "default", "labels": {"tickets": "T-1,T-2"}},
    }
    outcome = engine.compile(source, RULE_VARIABLES).evaluate(engine.activation(data, RULE_VARIABLES))
    assert outcome.error is not None and "nosuch" in outcome.error
    assert "value-of-x" not in outcome.error and "T-1" not in outcome.error and len(outcome.error) <= 500
