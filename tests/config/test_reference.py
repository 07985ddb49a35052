"""The YAML reference in the README is generated from the models and kept current."""

from __future__ import annotations

import io
from pathlib import Path

from runtime.cli import main
from runtime.config.models import DOCUMENT_MODELS
from runtime.config.reference import BEGIN, END, between_markers, reference_markdown
from runtime.config.schema import kind_schema

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_carries_the_current_reference() -> None:
    assert between_markers(README.read_text(encoding="utf-8")) == reference_markdown().strip("\n"), (
        "the README's YAML reference is stale: run `make schemas`"
    )


def test_every_kind_and_every_spec_field_is_in_the_reference() -> None:
    text = reference_markdown()
    for kind in DOCUMENT_MODELS:
        assert f"### `{kind}`" in text
        schema = kind_schema(kind)
        spec = schema["$defs"][schema["properties"]["spec"]["$ref"].rsplit("/", 1)[-1]]
        for field in spec["properties"]:
            assert f"| `{field}` |" in text, (kind, field)


def test_nested_objects_get_their_own_table_with_defaults_and_required_fields() -> None:
    text = reference_markdown()
    assert "`spec.timeout`" in text and "| `total_s` | number | `60.0` | Wall-clock limit for one call. |" in text
    assert "| `expression` | string | required |" in text
    assert '| `risk` | `low` \\| `medium` \\| `high` \\| `critical` | `"medium"` |' in text


def test_update_rewrites_only_the_part_between_the_markers(tmp_path: Path) -> None:
    target = tmp_path / "GUIDE.md"
    target.write_text(f"# Guide\n\nbefore\n\n{BEGIN}\nold text\n{END}\n\nafter\n", encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    assert main(["schema", "--reference", "--update", str(target)], out, err) == 0
    text = target.read_text(encoding="utf-8")
    assert text.startswith("# Guide\n\nbefore\n\n") and text.endswith(f"{END}\n\nafter\n")
    assert "old text" not in text and between_markers(text) == reference_markdown().strip("\n")


def test_update_refuses_a_file_without_markers_and_says_what_to_add(tmp_path: Path) -> None:
    target = tmp_path / "GUIDE.md"
    target.write_text("# Guide\n", encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    assert main(["schema", "--reference", "--update", str(target)], out, err) == 2
    assert BEGIN in err.getvalue() and target.read_text(encoding="utf-8") == "# Guide\n"
    assert main(["schema", "--reference", "--update", str(tmp_path / "missing.md")], out, err) == 2


def test_reference_prints_the_markdown() -> None:
    out = io.StringIO()
    assert main(["schema", "--reference"], out, io.StringIO()) == 0
    assert out.getvalue() == reference_markdown()
