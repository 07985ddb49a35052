"""A ``toolrt serve`` that runs for weeks stays flat: its resident set, read from /proc
while the official MCP client drives a real server process, stops growing after warm-up.

- stdio with the SQLite audit sink: every call recorded (the sink once prepared one SQL
  statement per batch size, whose cached copies grew native memory for good).
- streamable HTTP: clients that open a session and walk away without ending it; the
  server expires each one and frees what it held (toolrt's client table once kept every
  SDK session alive).

The long runs (100,000 calls; 1,000 abandoned sessions) are ``tests/benchmarks/
bench_serve_memory.py``; these shorter ones assert the same slope.
"""

from __future__ import annotations

from pathlib import Path

from serve_memory import Growth, drive_http_abandoned, drive_stdio

#: Growth after warm-up allowed per 1,000 calls: 100,000 calls may add at most ~8 MiB.
#: A leak of one SQL statement per batch size measured ~800 KiB per 1,000 calls, and
#: the per-call leak once seen with the audit log off ~240 KiB.
STDIO_KIB_PER_1000_CALLS = 80.0
#: Calls in the window whose growth is measured.
WINDOW = 5_000
#: Sessions in the window whose growth is measured.
SESSIONS_WINDOW = 80
#: Growth allowed per abandoned session once sessions are expired; one that is never
#: freed holds about 50 KiB.
HTTP_KIB_PER_SESSION = 15.0


async def test_stdio_server_with_the_sqlite_audit_log_stays_flat_after_warm_up(tmp_path: Path) -> None:
    # Warm-up (SQLite's page cache filling as the log grows, allocator arenas) takes a
    # number of calls that varies with the machine's pace, so the run goes on until a
    # window of WINDOW calls grew less than the bound: a healthy server gets there
    # after 10,000-20,000 calls; a leak grows in every window and never does.
    def flat(growth: Growth) -> bool:
        done = growth.samples[-1][0]
        return done >= 8_000 and growth.slope_kib_per_1000_calls(last=WINDOW) < STDIO_KIB_PER_1000_CALLS

    growth = await drive_stdio(tmp_path, calls=40_000, warm_up=8_000, every=500, until=flat)
    assert flat(growth), growth.describe()


async def test_http_server_frees_abandoned_sessions_and_stays_flat(tmp_path: Path) -> None:
    # As above: rounds go on until the last SESSIONS_WINDOW sessions grew less than the
    # bound (about 150 sessions of warm-up here); sessions never freed grow in every window.
    def flat(growth: Growth) -> bool:
        done = growth.samples[-1][0]
        per_session = growth.slope_kib_per_1000_calls(last=SESSIONS_WINDOW) / 1000
        return done >= 2 * SESSIONS_WINDOW and per_session < HTTP_KIB_PER_SESSION

    growth = await drive_http_abandoned(tmp_path, rounds=25, per_round=20, warm_up_rounds=4, until=flat)
    assert flat(growth), growth.describe()
