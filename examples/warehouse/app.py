"""The warehouse example: a workflow with compensation, an http tool and a canary.

    python examples/warehouse/app.py [--workspace DIR]

Starts a small inventory API on a free local port (the http tool may reach only
127.0.0.1/32, by its ``allow_networks``; its API key comes from the environment), makes
a workspace with ``stock.csv`` (by default a temporary directory), then:

1. runs the ``restock`` workflow for an item: every step a call through the pipeline;
2. runs it for an item whose buyer cannot be told: the run fails and its file edits
   are undone (the files are back, byte for byte);
3. prints labels for twenty sessions: the ``print_label`` rollout sends about 20 % of
   them to version 2, each session always to the same version;
4. runs it in another process that is killed (SIGKILL) while the label printer is
   jammed, then resumes the run from the journal: the steps that had ended are not
   run again, the label (an idempotent step) is printed again, and the run ends ok.

    python examples/warehouse/app.py --workspace DIR --stop-mid-run RUN_ID

only does the first half of 4 and exits, leaving the run for
``toolrt workflow status RUN_ID --workspace DIR`` and
``toolrt workflow resume RUN_ID --config examples/warehouse --workspace DIR``.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from runtime import Runtime
from runtime.records import Session
from runtime.workflow.resume import summary

HERE = Path(__file__).resolve().parent
INVENTORY = {
    "ABC-123": {"count": 7, "reorder_at": 10},
    "ZZZ-001": {"count": 2, "reorder_at": 5},
    "QRS-042": {"count": 1, "reorder_at": 4},
}
STOCK = "sku,count\nABC-123,7\nZZZ-001,2\nQRS-042,1\n"
API_KEY = "demo-key-not-a-secret"


class _Inventory(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep the example's output clean
        return

    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        sku = self.path.rsplit("/", 1)[-1]
        item = INVENTORY.get(sku)
        if self.headers.get("X-Api-Key") != API_KEY:
            status, body = 401, {"error": "bad api key"}
        elif item is None:
            status, body = 404, {"error": f"no item {sku}"}
        else:
            status, body = 200, {"sku": sku, **item}
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def start_inventory() -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Inventory)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server


def _prepare(workspace: Path) -> None:
    (workspace / "stock.csv").write_text(STOCK)
    (workspace / "restock.log").write_text("")


def stop_mid_run(workspace: Path, port: int, run_id: str) -> None:
    """Run ``restock`` of QRS-042 as ``run_id`` in another process with the label printer
    jammed, and kill that process (SIGKILL) once it is printing: a process that stopped
    in the middle of a run, as a crash or an OOM kill would leave it."""
    marker = workspace.parent / f".{workspace.name}-printer-jammed"
    marker.unlink(missing_ok=True)
    env = {**os.environ, "WAREHOUSE_PRINTER_JAM": str(marker)}
    command = [sys.executable, __file__, "--workspace", str(workspace), "--child-run", run_id, "--port", str(port)]
    child = subprocess.Popen(command, env=env)
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            if child.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the restock process ended before it printed (exit {child.returncode})")
            time.sleep(0.01)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        marker.unlink(missing_ok=True)


async def child_run(workspace: Path, port: int, run_id: str) -> int:
    """The process ``stop_mid_run`` kills: one restock run, named ``run_id``."""
    runtime = Runtime([HERE], workspace_root=workspace, watch=False)
    await runtime.run_workflow(
        "restock", {"port": port, "sku": "QRS-042", "add": 4}, Session(id="clerk-9"), run_id=run_id
    )
    return 1  # never reached: the printer jams


async def stop_only(workspace: Path, run_id: str) -> int:
    """``--stop-mid-run``: the killed run, left for ``toolrt workflow resume``."""
    os.environ.setdefault("WAREHOUSE_API_KEY", API_KEY)
    _prepare(workspace)
    server = start_inventory()
    try:
        stop_mid_run(workspace, server.server_address[1], run_id)
    finally:
        server.shutdown()
        server.server_close()
    print(f"run {run_id} was killed while printing its label; see it and go on with it:")
    print(f"  toolrt workflow status {run_id} --workspace {workspace}")
    print(f"  toolrt workflow resume {run_id} --config {HERE} --workspace {workspace}")
    return 0


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12] if path.exists() else "missing"


async def main(workspace: Path) -> int:
    os.environ.setdefault("WAREHOUSE_API_KEY", API_KEY)  # the operator's environment, not the YAML
    _prepare(workspace)
    server = start_inventory()
    port = server.server_address[1]
    runtime = Runtime([HERE], workspace_root=workspace, watch=False)
    try:
        print(f"inventory API on 127.0.0.1:{port}; workspace {workspace}")

        result = await runtime.run_workflow(
            "restock", {"port": port, "sku": "ABC-123", "add": 5}, Session(id="clerk-1")
        )
        print(f"\n1. restock ABC-123: {result.status}")
        for step in result.steps:
            print(f"   {step.id:7} {step.status:8} {step.duration_ms:7.1f} ms")
        print("   stock.csv:", (workspace / "stock.csv").read_text().splitlines()[1:])

        before = {name: digest(workspace / name) for name in ("stock.csv", "restock.log")}
        result = await runtime.run_workflow(
            "restock", {"port": port, "sku": "ZZZ-001", "add": 3}, Session(id="clerk-1")
        )
        after = {name: digest(workspace / name) for name in ("stock.csv", "restock.log")}
        print(f"\n2. restock ZZZ-001: {result.status}")
        for step in result.steps:
            print(f"   {step.id:7} {step.status:8}" + (f"  ({step.reason})" if step.reason else ""))
        for comp in result.compensations:
            print(f"   undo {comp.step:6} via {comp.tool}: {comp.status}")
        print(f"   files as before the run: {before == after}")

        served: dict[str, int] = {}
        for i in range(20):
            label = await runtime.call("print_label", {"sku": "ABC-123", "count": 12}, Session(id=f"clerk-{i}"))
            version = str(label.metadata.get("tool_version"))
            served[version] = served.get(version, 0) + 1
        print(f"\n3. print_label over 20 sessions, by version: {dict(sorted(served.items()))}")
        ok = result.status == "compensated" and before == after

        run_id = f"wf_restock_demo_{os.getpid()}"
        stop_mid_run(workspace, port, run_id)
        shown = summary(runtime.workflow_journal().load(run_id))
        print(f"\n4. run {run_id} killed while printing; its journal says:")
        for step in shown["steps"]:
            print(f"   {step['id']:7} {step['status']}")
        resumed = await runtime.resume_workflow(run_id)
        print(f"   resumed: {resumed.status}. {resumed.note}")
        print("   stock.csv:", (workspace / "stock.csv").read_text().splitlines()[1:])
        return 0 if ok and resumed.status == "ok" else 1
    finally:
        await runtime.close()
        server.shutdown()
        server.server_close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--workspace", type=Path, default=None, help="where stock.csv is written (default: a temporary directory)"
    )
    parser.add_argument("--stop-mid-run", metavar="RUN_ID", help="only start a run and kill its process mid-way")
    parser.add_argument("--child-run", metavar="RUN_ID", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child_run:
        raise SystemExit(asyncio.run(child_run(options.workspace, options.port, options.child_run)))
    if options.stop_mid_run:
        if options.workspace is None:
            parser.error("--stop-mid-run needs --workspace (the run is resumed in that workspace)")
        options.workspace.mkdir(parents=True, exist_ok=True)
        raise SystemExit(asyncio.run(stop_only(options.workspace.resolve(), options.stop_mid_run)))
    if options.workspace is not None:
        options.workspace.mkdir(parents=True, exist_ok=True)
        raise SystemExit(asyncio.run(main(options.workspace)))
    with tempfile.TemporaryDirectory(prefix="toolrt-warehouse-") as folder:
        raise SystemExit(asyncio.run(main(Path(folder))))
