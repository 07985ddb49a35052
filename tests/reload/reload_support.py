"""Helpers for the reload tests: tool YAML written into real config dirs (in place,
by rename, or ConfigMap-style through a ``..data`` symlink), and a thread-safe log of
the events a :class:`ConfigWatcher` delivers, with waits that time out generously."""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from runtime.reload import ConfigWatcher, ReloadEvent

# Generous: the suite must pass on a loaded two-core machine (a folder deleted and created
# again is found after a restart pause and a settle window, each stretched by the load).
# A wait returns as soon as its condition holds, so a long bound costs nothing when green.
WAIT_S = 30.0

TOOL = """\
apiVersion: toolrt/v1
kind: Tool
metadata: {{name: {name}}}
spec:
  description: {description}
  handler: builtin:tool_search
  read_only: true
  input_schema:
    type: object
    properties:
      query: {{type: string}}
{extra}"""

BAD_YAML = "apiVersion: toolrt/v1\nkind: Tool\nmetadata: {name: finder\nspec: [\n"
BAD_CEL_RULE = "  rules:\n    - {expression: 'size(args.query) > ', message: say more}\n"


def tools_yaml(tools: Mapping[str, str], extra: str = "") -> str:
    """One Tool document per ``name: description`` (``extra`` is appended to the last spec)."""
    names = list(tools)
    return "---\n".join(TOOL.format(name=n, description=tools[n], extra=extra if n == names[-1] else "") for n in names)


def write_in_place(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def write_by_rename(path: Path, text: str) -> None:
    """Save the way many editors do: write a temporary file, then rename it over the target."""
    temporary = path.with_name(path.name + ".tmp~")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


class ConfigMapDir:
    """A Kubernetes ConfigMap volume layout: ``..<timestamp>/`` folders holding the files,
    ``..data -> ..<timestamp>``, and ``<file> -> ..data/<file>`` at the top. An update
    writes a new timestamped folder and atomically renames a new ``..data`` symlink."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        self.generation = 0

    def publish(self, files: Mapping[str, str]) -> None:
        self.generation += 1
        folder = f"..2026_01_01_00_00_{self.generation:02d}.{1000 + self.generation}"
        (self.root / folder).mkdir()
        for name, text in files.items():
            (self.root / folder / name).write_text(text, encoding="utf-8")
        data = self.root / "..data"
        old = os.readlink(data) if data.is_symlink() else None
        os.symlink(folder, self.root / "..data_tmp")
        os.replace(self.root / "..data_tmp", data)
        for name in files:
            link = self.root / name
            if not link.is_symlink():
                os.symlink(f"..data/{name}", link)
        if old is not None:
            shutil.rmtree(self.root / old)


class EventLog:
    """Collects events from a watcher's callback (any thread) and waits for them."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self.events: list[ReloadEvent] = []
        self.times: list[float] = []

    def __call__(self, event: ReloadEvent) -> None:
        with self._changed:
            self.events.append(event)
            self.times.append(time.monotonic())
            self._changed.notify_all()

    def mark(self) -> int:
        """The number of events so far: pass it as ``since`` to wait for newer ones."""
        with self._changed:
            return len(self.events)

    def since(self, mark: int) -> list[ReloadEvent]:
        with self._changed:
            return self.events[mark:]

    def wait_for(
        self, predicate: Callable[[ReloadEvent], bool], since: int = 0, timeout: float = WAIT_S
    ) -> ReloadEvent:
        """The first event after ``since`` that satisfies ``predicate``; fails after ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for event in self.events[since:]:
                    if predicate(event):
                        return event
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"no matching event within {timeout} s; got {[e.to_dict() for e in self.events[since:]]}"
                    )
                self._changed.wait(left)


def wait_until(condition: Callable[[], bool], timeout: float = WAIT_S, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout} s")
        time.sleep(0.01)


def watcher_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "toolrt-config-watcher" and t.is_alive()]


def wait_caught_up(watcher: ConfigWatcher, ignored: int = 0) -> None:
    """Wait until the watcher has dropped ``ignored`` more changes and then come back idle:
    every change made before this call has been handled (or dropped) by then. The positive
    signal tests use instead of sleeping before they assert that nothing happened."""
    wanted = watcher.changes_ignored + ignored
    wait_until(lambda: watcher.changes_ignored >= wanted, what=f"{ignored} changes dropped by the filter")
    wakes = watcher.idle_wakes
    wait_until(lambda: watcher.idle_wakes > wakes, what="the watcher idle again")
