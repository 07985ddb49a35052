"""The `toolrt` command line: lint output formats, exit codes, schema and demo."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from runtime.cli import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, main
from runtime.config.schema import all_schemas

REPO = Path(__file__).resolve().parent.parent
CODING_AGENT = REPO / "examples" / "coding-agent"

TOOL = """\
apiVersion: toolrt/v1
kind: Tool
metadata:
  name: t
spec:
  description: d
  handler: builtin:file_read
  input_schema:
    type: object
    additionalProperties: false
    properties:
      path: {type: string}
"""
BAD = TOOL.replace("builtin:file_read", "builtin:file_raed")  # unknown-builtin at 7:12
WARNING_ONLY = TOOL.replace("{type: string}", "{type: string, maxLenght: 5}")  # schema-unknown-keyword warning at 12:39
TYPE_ERROR = (
    TOOL + "  rules:\n    - name: r\n      expression: '1 + \"a\" == 2'\n      message: m\n"
)  # cel-type with both engines (each in its own words)

LINE = re.compile(
    r"^(?P<file>[^:]+):(?P<line>\d+):(?P<col>\d+): (?P<severity>error|warning)\[(?P<code>[a-z0-9-]+)\]: "
    r"(?P<message>.+)$"
)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working directory; files written here are named relative to it."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(directory: Path, text: str, name: str = "c.yaml") -> Path:
    config = directory / "config"
    config.mkdir(exist_ok=True)
    (config / name).write_text(text, encoding="utf-8")
    return config


# ---------------------------------------------------------------------------
# lint: formats


def test_lint_text_prints_one_line_per_problem_and_a_summary(workdir: Path) -> None:
    write(workdir, BAD)
    code, out, _ = run("lint", "config")
    lines = out.splitlines()
    assert code == EXIT_PROBLEMS
    match = LINE.match(lines[0])
    assert match is not None, lines[0]
    assert match.group("file", "line", "col", "severity", "code") == (
        "config/c.yaml",
        "7",
        "12",
        "error",
        "unknown-builtin",
    )
    assert match.group("message").startswith("no built-in tool `file_raed`. Did you mean `file_read`?")
    assert lines[1:] == ["1 file(s), 1 document(s): 1 error(s), 0 warning(s)"]


def test_lint_text_of_a_clean_config_is_only_the_summary(workdir: Path) -> None:
    write(workdir, TOOL)
    code, out, err = run("lint", "config")
    assert (code, out, err) == (EXIT_OK, "1 file(s), 1 document(s): 0 error(s), 0 warning(s)\n", "")


def test_lint_json_lists_problems_with_location_code_severity_and_message(workdir: Path) -> None:
    write(workdir, BAD + "---\n" + WARNING_ONLY.replace("name: t", "name: u"))
    code, out, _ = run("lint", "config", "--format", "json")
    report = json.loads(out)
    assert code == EXIT_PROBLEMS
    assert (report["files"], report["documents"], report["errors"], report["warnings"]) == (1, 2, 1, 1)
    assert [(p["file"], p["line"], p["col"], p["code"], p["severity"]) for p in report["problems"]] == [
        ("config/c.yaml", 7, 12, "unknown-builtin", "error"),
        ("config/c.yaml", 25, 39, "schema-unknown-keyword", "warning"),
    ]
    assert all(
        set(p) == {"file", "line", "col", "code", "severity", "message"} and p["message"] for p in report["problems"]
    )


def test_lint_sarif_is_a_2_1_0_log_with_rules_and_regions(workdir: Path) -> None:
    write(workdir, BAD)
    code, out, _ = run("lint", "config", "--format", "sarif")
    log = json.loads(out)
    assert code == EXIT_PROBLEMS
    assert log["version"] == "2.1.0"
    run_ = log["runs"][0]
    assert run_["tool"]["driver"]["name"] == "toolrt"
    (result,) = run_["results"]
    assert result["ruleId"] == "unknown-builtin"
    assert result["level"] == "error"
    assert run_["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == "unknown-builtin"
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "config/c.yaml"
    assert location["region"] == {"startLine": 7, "startColumn": 12}
    assert result["message"]["text"].startswith("no built-in tool `file_raed`")


def test_lint_sarif_region_of_a_whole_file_problem_starts_at_line_1(workdir: Path) -> None:
    config = write(workdir, TOOL)
    (config / "big.yaml").write_text("#" * 2_000_000, encoding="utf-8")
    code, out, _ = run("lint", "config", "--format", "sarif")
    (result,) = json.loads(out)["runs"][0]["results"]
    assert code == EXIT_PROBLEMS
    assert result["ruleId"] == "file-too-large"
    assert result["locations"][0]["physicalLocation"]["region"] == {"startLine": 1, "startColumn": 1}


def test_lint_github_prints_workflow_annotations(workdir: Path) -> None:
    write(workdir, BAD + "---\n" + WARNING_ONLY.replace("name: t", "name: u"))
    code, out, _ = run("lint", "config", "--format", "github")
    lines = out.splitlines()
    assert code == EXIT_PROBLEMS
    assert lines[0].startswith(
        "::error file=config/c.yaml,line=7,col=12,title=unknown-builtin::no built-in tool `file_raed`"
    )
    assert lines[1].startswith("::warning file=config/c.yaml,line=25,col=39,title=schema-unknown-keyword::")
    assert len(lines) == 2


def test_lint_github_strict_shows_warnings_as_errors(workdir: Path) -> None:
    write(workdir, WARNING_ONLY)
    code, out, _ = run("lint", "config", "--format", "github", "--strict")
    assert code == EXIT_PROBLEMS
    assert out.startswith("::error file=config/c.yaml,line=12,col=39,title=schema-unknown-keyword::")


def test_lint_github_escapes_percent_and_newlines_in_messages(workdir: Path) -> None:
    test = (
        "apiVersion: toolrt/v1\nkind: PolicyTest\nmetadata: {name: pt}\nspec:\n  cases:\n    - name: x\n      tool: "
        '"50%\\nnext"\n      expect: {decision: allow}\n'
    )
    write(workdir, TOOL)
    write(workdir, test, "tests.yaml")
    code, out, _ = run("lint", "config", "--format", "github")
    (line,) = out.splitlines()
    assert code == EXIT_PROBLEMS
    assert line.startswith(
        "::error file=config/tests.yaml,line=7,col=13,title=unknown-tool::no tool named `50%25%0Anext`."
    )


def test_lint_github_escapes_commas_in_file_names(workdir: Path) -> None:
    write(workdir, BAD, "a,b.yaml")
    _, out, _ = run("lint", "config", "--format", "github")
    assert out.startswith("::error file=config/a%2Cb.yaml,line=7,col=12,title=unknown-builtin::")


def test_lint_github_prints_nothing_for_a_clean_config(workdir: Path) -> None:
    write(workdir, TOOL)
    assert run("lint", "config", "--format", "github") == (EXIT_OK, "", "")


# ---------------------------------------------------------------------------
# lint: exit codes


def test_lint_of_the_coding_agent_example_exits_0() -> None:
    code, out, _ = run("lint", str(CODING_AGENT))
    assert code == EXIT_OK
    assert out.endswith(": 0 error(s), 0 warning(s)\n")


def test_lint_with_errors_exits_1(workdir: Path) -> None:
    write(workdir, BAD)
    assert run("lint", "config")[0] == EXIT_PROBLEMS


def test_lint_of_a_missing_path_exits_2_and_names_it(workdir: Path) -> None:
    code, out, err = run("lint", "nope.yaml")
    assert (code, out) == (EXIT_USAGE, "")
    assert "nope.yaml" in err


def test_lint_without_paths_uses_the_configured_dir(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLRT_CONFIG_DIR", "mine")
    assert run("lint")[0] == EXIT_USAGE
    (workdir / "mine").mkdir()
    (workdir / "mine" / "c.yaml").write_text(BAD, encoding="utf-8")
    code, out, _ = run("lint")
    assert code == EXIT_PROBLEMS
    assert out.startswith("mine/c.yaml:7:12: error[unknown-builtin]")


def test_lint_with_invalid_settings_in_the_environment_exits_2(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(workdir, TOOL)
    monkeypatch.setenv("TOOLRT_MAX_CONFIG_FILE_BYTES", "10")
    code, _, err = run("lint", "config")
    assert code == EXIT_USAGE
    assert err.startswith("toolrt: invalid settings:")


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["lint", "--bogus"], id="unknown-flag"),
        pytest.param(["lint", "--format", "xml", "."], id="unknown-format"),
        pytest.param(["lint", "--engine", "turbo", "."], id="unknown-engine"),
        pytest.param(["frobnicate"], id="unknown-command"),
        pytest.param([], id="no-command"),
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == EXIT_USAGE
    assert "usage: toolrt" in capsys.readouterr().err


def test_usage_errors_are_written_to_the_given_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run("lint", "--bogus")
    assert code == EXIT_USAGE
    assert "unrecognized arguments: --bogus" in err


def test_strict_turns_a_warning_only_config_into_exit_1(workdir: Path) -> None:
    write(workdir, WARNING_ONLY)
    code, out, _ = run("lint", "config")
    assert code == EXIT_OK
    assert "warning[schema-unknown-keyword]" in out
    code, out, _ = run("lint", "config", "--strict")
    assert code == EXIT_PROBLEMS
    assert out.splitlines()[0].startswith("config/c.yaml:12:39: error[schema-unknown-keyword]:")
    assert out.splitlines()[-1] == "1 file(s), 1 document(s): 1 error(s), 0 warning(s)"


def test_engine_flag_selects_the_cel_engine(workdir: Path) -> None:
    # Mixing uint and int literals in a comparison: cel-cpp's checker refuses it, while
    # both engines compare the values at run time (so toolrt's own checker lets it be).
    write(workdir, TOOL + "  rules:\n    - name: r\n      expression: '1u < 2'\n      message: m\n")
    fast_code, fast_out, _ = run("lint", "config", "--engine", "fast")
    assert fast_code == EXIT_PROBLEMS
    assert "error[cel-type]" in fast_out and "no matching overload" in fast_out
    assert run("lint", "config", "--engine", "portable")[0] == EXIT_OK


def test_both_engines_report_a_type_error_in_the_same_words(workdir: Path) -> None:
    write(workdir, TYPE_ERROR)
    outputs = [run("lint", "config", "--engine", engine) for engine in ("fast", "portable")]
    assert [code for code, _, _ in outputs] == [EXIT_PROBLEMS, EXIT_PROBLEMS]
    assert outputs[0][1] == outputs[1][1]
    assert "error[cel-type]" in outputs[0][1] and "is not defined for" in outputs[0][1]


# ---------------------------------------------------------------------------
# schema


def test_schema_out_writes_every_schema_and_check_passes(tmp_path: Path) -> None:
    out_dir = tmp_path / "schemas"
    code, out, _ = run("schema", "--out", str(out_dir))
    assert code == EXIT_OK
    assert sorted(p.name for p in out_dir.iterdir()) == sorted(all_schemas())
    assert out == f"wrote {len(all_schemas())} schemas to {out_dir}\n"
    assert (
        json.loads((out_dir / "tool.schema.json").read_text(encoding="utf-8"))["$id"]
        == "urn:toolrt:schemas:v1:tool.schema.json"
    )
    assert run("schema", "--out", str(out_dir), "--check") == (EXIT_OK, "", "")


def test_schema_check_fails_when_a_file_was_edited(tmp_path: Path) -> None:
    out_dir = tmp_path / "schemas"
    run("schema", "--out", str(out_dir))
    edited = out_dir / "tool.schema.json"
    edited.write_text(edited.read_text(encoding="utf-8").replace('"description"', '"descriptio"', 1), encoding="utf-8")
    code, _, err = run("schema", "--out", str(out_dir), "--check")
    assert code == EXIT_PROBLEMS
    assert err == f"{edited}: out of date; run `toolrt schema --out {out_dir}`\n"


def test_schema_check_fails_when_a_file_is_missing(tmp_path: Path) -> None:
    out_dir = tmp_path / "schemas"
    run("schema", "--out", str(out_dir))
    (out_dir / "workflow.schema.json").unlink()
    code, _, err = run("schema", "--out", str(out_dir), "--check")
    assert code == EXIT_PROBLEMS
    assert "workflow.schema.json: out of date" in err


def test_checked_in_schemas_match_the_models() -> None:
    code, _, err = run("schema", "--out", str(REPO / "schemas"), "--check")
    assert (code, err) == (EXIT_OK, "")


def test_schema_without_out_prints_the_combined_schema() -> None:
    code, out, _ = run("schema")
    assert code == EXIT_OK
    assert json.loads(out)["$id"] == "urn:toolrt:schemas:v1:toolrt.schema.json"


# ---------------------------------------------------------------------------
# demo


# The scripted session itself is tested in tests/test_demo.py.


def test_demo_with_a_missing_config_dir_exits_2(tmp_path: Path) -> None:
    code, _, err = run("demo", "--config", str(tmp_path / "nope"))
    assert code == 2
    assert "example config not found" in err


def test_toolrt_call_writes_its_audit_record_before_it_exits(tmp_path) -> None:
    from runtime.audit import query, store_path

    examples = Path(__file__).resolve().parents[1] / "examples" / "coding-agent"
    out = io.StringIO()
    assert (
        main(
            [
                "call",
                "--config",
                str(examples),
                "--workspace",
                str(tmp_path),
                "tool_search",
                "--args",
                '{"query": "read"}',
            ],
            stdout=out,
        )
        == 0
    )
    assert [row["tool"] for row in query(store_path(tmp_path))] == ["tool_search"]


# ---------------------------------------------------------------------------
# every call given is answered; what cannot be read is an error, never an empty answer


def test_version_prints_the_package_version() -> None:
    code, out, _ = run("--version")
    assert code == EXIT_OK
    assert re.fullmatch(r"toolrt \S+\n", out)


@pytest.mark.parametrize(
    ("provider", "call", "reply_key"),
    [
        ("anthropic", {"type": "tool_use", "id": "toolu_1", "name": "list_dir", "input": {}}, "tool_use_id"),
        (
            "openai-chat",
            {"id": "c1", "type": "function", "function": {"name": "list_dir", "arguments": "{}"}},
            "tool_call_id",
        ),
        (
            "openai-responses",
            {"type": "function_call", "call_id": "c1", "name": "list_dir", "arguments": "{}"},
            "call_id",
        ),
    ],
)
def test_run_answers_a_single_call_object(workdir: Path, provider: str, call: dict, reply_key: str) -> None:
    (workdir / "call.json").write_text(json.dumps(call), encoding="utf-8")
    code, out, err = run(
        "run",
        "--config",
        str(CODING_AGENT),
        "--workspace",
        str(CODING_AGENT / "workspace"),
        "--provider",
        provider,
        "call.json",
    )
    assert code == EXIT_OK, err
    assert reply_key in out and "README.md" in out


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("null", "holds null"),
        ("5", "holds a JSON int"),
        ('"text"', "holds a JSON str"),
        ("[" * 200_000 + "]" * 200_000, "nests deeper"),
    ],
    ids=["null", "number", "string", "deep"],
)
def test_run_refuses_a_payload_it_cannot_read_with_a_message(workdir: Path, content: str, words: str) -> None:
    (workdir / "calls.json").write_text(content, encoding="utf-8")
    code, out, err = run("run", "--config", str(CODING_AGENT), "calls.json")
    assert code == EXIT_USAGE
    assert words in err and out == ""
    assert "Traceback" not in err


def test_run_of_a_payload_without_calls_for_the_provider_is_not_a_silent_success(workdir: Path) -> None:
    (workdir / "calls.json").write_text(json.dumps({"role": "assistant", "content": "no calls here"}), encoding="utf-8")
    code, out, err = run("run", "--config", str(CODING_AGENT), "calls.json")
    assert code == EXIT_PROBLEMS
    assert "no anthropic tool call found" in err and out == ""


def test_test_with_no_cases_fails_with_a_message(workdir: Path) -> None:
    write(workdir, TOOL)
    code, out, err = run("test", "config")
    assert code == EXIT_PROBLEMS
    assert "no PolicyTest cases" in err


def test_lint_sarif_names_the_tool_version_rule_help_and_relative_uris_that_survive_spaces(workdir: Path) -> None:
    config = workdir / "my config"
    config.mkdir()
    (config / "a tool.yaml").write_text(BAD, encoding="utf-8")
    code, out, _ = run("lint", str(config), "--format", "sarif")
    assert code == EXIT_PROBLEMS
    run_ = json.loads(out)["runs"][0]
    driver = run_["tool"]["driver"]
    assert driver["version"] and driver["informationUri"].startswith("https://")
    (rule,) = driver["rules"]
    assert rule["id"] == "unknown-builtin"
    assert rule["help"]["text"] and rule["helpUri"].startswith("https://")
    location = run_["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": "my%20config/a%20tool.yaml", "uriBaseId": "%SRCROOT%"}
    base = run_["originalUriBaseIds"]["%SRCROOT%"]["uri"]
    from urllib.parse import unquote, urlparse

    assert Path(unquote(urlparse(base).path)) / unquote(location["uri"]) == (config / "a tool.yaml").resolve()
