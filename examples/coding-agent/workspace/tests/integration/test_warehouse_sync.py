"""Talks to the warehouse service, which never answers: this test hangs.

It starts the service in a session of its own (as daemons do), so stopping only the
test runner's process group would leave the service running. The service's pid is
written to build/warehouse-service.pid so that one can check it was stopped too.
"""

import subprocess
import sys
import time
from pathlib import Path


def test_stock_levels_sync_with_the_warehouse() -> None:
    service = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    pid_file = Path("build") / "warehouse-service.pid"
    pid_file.parent.mkdir(exist_ok=True)
    pid_file.write_text(str(service.pid))
    print(f"waiting for the warehouse service (pid {service.pid}) to answer...", flush=True)
    time.sleep(600)
