"""The package stays a house a newcomer can read: no module over 600 lines."""

from __future__ import annotations

from pathlib import Path

import runtime

MAX_LINES = 600
PACKAGE = Path(runtime.__file__).parent


def test_no_runtime_module_is_longer_than_600_lines() -> None:
    too_long = {
        str(path.relative_to(PACKAGE.parent)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not too_long, f"split these modules (one job each) to {MAX_LINES} lines or fewer: {too_long}"
