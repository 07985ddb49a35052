"""The wheel alone is enough: `pip install toolrt` (no extras) runs the demo, and ships
the JSON Schemas, the packs, the example and `py.typed`.

The wheel is built from this checkout (pip, with the build backend from the package
registry) and unpacked; the demo then runs from the unpacked copy, in a folder where
the checkout is not importable, so that only what the wheel holds is used.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(out), str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if built.returncode != 0:
        pytest.fail(f"building the wheel failed:\n{built.stderr[-2000:]}")
    (path,) = out.glob("toolrt-*.whl")
    return path


def test_the_wheel_holds_the_schemas_packs_example_and_py_typed(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "runtime/py.typed" in names
    assert {f"runtime/_schemas/{p.name}" for p in (REPO / "schemas").glob("*.json")} <= names
    assert "runtime/_packs/permissions-default.yaml" in names
    assert {
        "runtime/_examples/coding-agent/tools.yaml",
        "runtime/_examples/coding-agent/workspace/pyproject.toml",
    } <= names


def test_the_demo_runs_from_the_wheel_alone(wheel: Path, tmp_path: Path) -> None:
    unpacked = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(unpacked)
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(unpacked)}
    code = (
        "import sys, runtime.demo as d; from runtime.cli import main; print(d.default_example()); "
        "sys.exit(main(sys.argv[1:]))"
    )
    demo = subprocess.run(
        [sys.executable, "-c", code, "demo"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert demo.returncode == 0, demo.stderr[-2000:]
    assert demo.stdout.splitlines()[0] == str(unpacked / "runtime" / "_examples" / "coding-agent")
    assert "demo finished" in demo.stdout
    schemas = subprocess.run(
        [sys.executable, "-c", code, "schema", "--out", str(tmp_path / "schemas")],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert schemas.returncode == 0, schemas.stderr
    assert sorted(p.name for p in (tmp_path / "schemas").glob("*.json")) == sorted(
        p.name for p in (REPO / "schemas").glob("*.json")
    )
