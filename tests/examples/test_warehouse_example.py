"""The warehouse example runs end to end: a workflow against a real local HTTP API and
real files, compensated when its last step fails, a canary split of label printers, and
a run whose process is killed mid-way, resumed from the journal (in the app, and from
the command line as the README walks through it)."""

from __future__ import annotations

import io
import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.cli import main as toolrt

pytest.importorskip("httpx")

APP = Path(__file__).resolve().parents[2] / "examples" / "warehouse" / "app.py"


async def test_the_warehouse_app_restocks_undoes_and_splits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main = runpy.run_path(str(APP))["main"]
    assert await main(tmp_path) == 0
    out = capsys.readouterr().out
    assert "1. restock ABC-123: ok" in out and "'ABC-123,12'" in out
    assert "2. restock ZZZ-001: compensated" in out and "files as before the run: True" in out
    assert "undo record via stock_edit: ok" in out and "undo log    via stock_edit: ok" in out
    assert "4. run wf_restock_demo_" in out and "killed while printing" in out
    assert "resumed: ok. Resumed run wf_restock_demo_" in out
    assert "4 step(s) had ended before the process stopped (stock, lookup, record, log)" in out
    assert (tmp_path / "stock.csv").read_text() == "sku,count\nABC-123,12\nZZZ-001,2\nQRS-042,5\n"
    # Each edit once: the edits that had ended before the kill were not run again.
    assert (tmp_path / "restock.log").read_text() == "ABC-123 +5\nQRS-042 +4\n"


def _toolrt(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = toolrt(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def test_a_run_killed_mid_way_is_resumed_from_the_command_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the app and toolrt share the default state folder, .toolrt/ here
    workspace = tmp_path / "ws"
    done = subprocess.run(
        [sys.executable, str(APP), "--workspace", str(workspace), "--stop-mid-run", "wf_cli_demo"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={k: v for k, v in os.environ.items() if k != "WAREHOUSE_PRINTER_JAM"},
    )
    assert done.returncode == 0, done.stderr
    assert "toolrt workflow resume wf_cli_demo" in done.stdout
    assert (workspace / "stock.csv").read_text().endswith("QRS-042,5\n")  # the edit ran before the kill
    code, out, _ = _toolrt("workflow", "status", "wf_cli_demo", "--workspace", str(workspace), "--format", "json")
    status = json.loads(out)
    assert code == 0 and status["status"] == "running" and status["owner"]["alive"] is False
    assert {s["id"]: s["status"] for s in status["steps"]}.items() >= {"record": "ok", "log": "ok"}.items()
    config = str(APP.parent)
    code, out, _ = _toolrt("workflow", "resume", "wf_cli_demo", "--config", config, "--workspace", str(workspace))
    result = json.loads(out)
    assert code == 0 and result["status"] == "ok", out
    assert [s["status"] for s in result["steps"]] == ["ok"] * 6
    assert (workspace / "restock.log").read_text() == "QRS-042 +4\n"  # appended once, before the kill
    code, out, _ = _toolrt("workflow", "resume", "wf_cli_demo", "--config", config, "--workspace", str(workspace))
    assert "already finished (ok)" in json.loads(out)["note"]
    assert (workspace / "stock.csv").read_text().endswith("QRS-042,5\n")
