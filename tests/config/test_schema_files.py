"""schemas/ is generated from the models; these tests fail when it drifts."""

import json
from pathlib import Path

import jsonschema
import pytest

from runtime.config.models import KINDS
from runtime.config.schema import all_schemas, kind_file, render

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"


@pytest.mark.parametrize("name", sorted(all_schemas()))
def test_checked_in_schema_matches_the_models(name):
    expected = render(all_schemas()[name])
    actual = (SCHEMAS / name).read_text(encoding="utf-8")
    assert actual == expected, f"schemas/{name} is out of date: run `toolrt schema --out schemas`"


def test_there_is_one_schema_per_kind_plus_a_combined_one():
    assert sorted(p.name for p in SCHEMAS.glob("*.json")) == sorted(
        [kind_file(k) for k in KINDS] + ["toolrt.schema.json"]
    )


@pytest.mark.parametrize("name", sorted(all_schemas()))
def test_every_schema_is_valid_draft_2020_12(name):
    schema = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


def test_combined_schema_accepts_a_tool_and_rejects_an_unknown_kind():
    validator = jsonschema.Draft202012Validator(all_schemas()["toolrt.schema.json"])
    tool = {
        "apiVersion": "toolrt/v1",
        "kind": "Tool",
        "metadata": {"name": "t"},
        "spec": {"description": "d", "handler": "builtin:file_read"},
    }
    assert validator.is_valid(tool)
    assert not validator.is_valid({**tool, "kind": "Tol"})
    assert not validator.is_valid({**tool, "spec": {**tool["spec"], "timout": 1}})
