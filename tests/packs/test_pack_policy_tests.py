"""The shipped packs lint clean (strictly) and their PolicyTest cases pass, through the
same `toolrt lint` and `toolrt test` commands teams run in CI."""

from __future__ import annotations

import io
from pathlib import Path

from runtime.cli import main

CONFIG = Path(__file__).parent / "config"
PACKS = Path(__file__).resolve().parents[2] / "policies"


def test_every_shipped_pack_lints_clean_strictly() -> None:
    out = io.StringIO()
    assert main(["lint", "--strict", str(PACKS)], stdout=out) == 0, out.getvalue()


def test_the_pack_policy_tests_all_pass() -> None:
    out = io.StringIO()
    code = main(["test", str(CONFIG)], stdout=out)
    report = out.getvalue()
    assert code == 0, report
    assert "0 failed" in report and report.count("PASS") >= 19
