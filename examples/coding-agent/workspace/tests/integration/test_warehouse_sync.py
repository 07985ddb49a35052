"""Talks to the warehouse service, which never answers: this test hangs.

It starts the service in a session of its own (as daemons do), so stopping only the
test runner's process group would leave the service running. The service holds a lock
on build/warehouse-service.lock while it runs and then writes its pid to
build/warehouse-service.pid, so that one can check it was stopped too.
"""

import subprocess
import sys
import time
from pathlib import Path

SERVICE = """
import fcntl, os, sys, time
held = open(sys.argv[1], "w")
fcntl.flock(held, fcntl.LOCK_EX)
with open(sys.argv[2] + ".part", "w") as pid_file:
    pid_file.write(str(os.getpid()))
os.replace(sys.argv[2] + ".part", sys.argv[2])  # whole or absent, never empty
time.sleep(600)
"""


def test_stock_levels_sync_with_the_warehouse() -> None:
    build = Path("build")
    build.mkdir(exist_ok=True)
    pid_file = build / "warehouse-service.pid"
    service = subprocess.Popen(
        [sys.executable, "-c", SERVICE, str(build / "warehouse-service.lock"), str(pid_file)],
        start_new_session=True,
    )
    while not pid_file.exists():
        time.sleep(0.01)
    print(f"waiting for the warehouse service (pid {service.pid}) to answer...", flush=True)
    time.sleep(600)
