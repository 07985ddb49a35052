"""The warehouse example runs end to end: a workflow against a real local HTTP API and
real files, compensated when its last step fails, and a canary split of label printers."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

pytest.importorskip("httpx")

APP = Path(__file__).resolve().parents[2] / "examples" / "warehouse" / "app.py"


async def test_the_warehouse_app_restocks_undoes_and_splits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main = runpy.run_path(str(APP))["main"]
    assert await main(tmp_path) == 0
    out = capsys.readouterr().out
    assert "1. restock ABC-123: ok" in out and "'ABC-123,12'" in out
    assert "2. restock ZZZ-001: compensated" in out and "files as before the run: True" in out
    assert "undo record via stock_edit: ok" in out and "undo log    via stock_edit: ok" in out
    assert (tmp_path / "stock.csv").read_text() == "sku,count\nABC-123,12\nZZZ-001,2\n"
    assert (tmp_path / "restock.log").read_text() == "ABC-123 +5\n"
