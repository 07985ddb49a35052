"""Each worker reports the config snapshot it serves: a metric label, and a line of
``toolrt status`` read from the shared Redis, so an operator sees when a fleet has
converged after a config change."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

from fleet_servers import free_port
from fleet_support import write_config

from runtime import Runtime
from runtime.cli import main
from runtime.settings import Settings


def _status(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["status", *argv], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_status_lists_each_worker_and_says_when_the_fleet_has_converged(
    tmp_path: Path, workspace: Path, redis_url: str
) -> None:
    first_config = write_config(tmp_path / "a", {"quotas": {"calls_per_session": 5}})
    second_config = tmp_path / "b"
    shutil.copytree(first_config, second_config)
    settings = Settings(limit_store=redis_url, audit_sink="off")
    first = Runtime([first_config], workspace_root=workspace, settings=settings)
    second = Runtime([second_config], workspace_root=workspace, settings=settings)
    try:
        assert first.snapshot.version == second.snapshot.version
        first.presence.beat()  # type: ignore[union-attr]
        second.presence.beat()  # type: ignore[union-attr]
        code, out, _ = _status("--limit-store", redis_url)
        assert code == 0, out
        assert (
            out.count("serves snapshot") == 2
            and f"converged: all 2 worker(s) serve snapshot {first.snapshot.version}" in out
        )
        # A config change reaches one worker only.
        text = (second_config / "tools.yaml").read_text().replace('"calls_per_session": 5', '"calls_per_session": 6')
        (second_config / "tools.yaml").write_text(text)
        assert second.reload().snapshot is not None
        assert second.snapshot.version != first.snapshot.version
        code, out, _ = _status("--limit-store", redis_url)
        assert code == 1 and "not converged: 2 snapshots are served" in out
        code, out, _ = _status("--limit-store", redis_url, "--format", "json")
        assert sorted(w["snapshot"] for w in json.loads(out)) == sorted(
            [first.snapshot.version, second.snapshot.version]
        )
        assert f'toolrt_snapshot_info{{version="{second.snapshot.version}"}} 1' in second.metrics.prometheus()
        assert second.metrics.snapshot()["info"]["snapshot"] == {"version": second.snapshot.version}
    finally:
        second.close_sync()
    code, out, _ = _status("--limit-store", redis_url)
    assert code == 0 and out.count("serves snapshot") == 1  # a closed worker drops out at once
    first.close_sync()
    code, out, _ = _status("--limit-store", redis_url)
    assert code == 0 and "no workers have reported" in out


def test_status_without_a_shared_store_says_there_is_no_fleet() -> None:
    code, _, err = _status("--limit-store", "memory")
    assert code == 2 and "no fleet to report" in err


def test_status_with_an_unreachable_store_says_so() -> None:
    code, _, err = _status("--limit-store", f"redis://127.0.0.1:{free_port()}/0")
    assert code == 2 and "unreachable" in err and "Traceback" not in err
