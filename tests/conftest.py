"""Settings shared by the whole test suite.

Hot reload is on by default for a Runtime; here it is off unless a test turns it on
(``Runtime(..., watch=True)``), so that the hundreds of runtimes the tests build do
not each keep a watcher thread. The reload tests enable it explicitly.
"""

from __future__ import annotations

import os

os.environ.setdefault("TOOLRT_HOT_RELOAD", "false")
