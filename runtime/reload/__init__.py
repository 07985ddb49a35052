"""Hot reload: watch the config files and swap in a new snapshot when an edit is clean.

:class:`ConfigWatcher` runs ``watchfiles.watch`` in a daemon thread. A batch of
relevant changes (YAML files, and the ``..data`` symlink swaps of Kubernetes
ConfigMap volumes) is debounced into one call of the ``reload`` callable, which
builds a snapshot off the hot path and swaps it in only when the build is clean
(:meth:`runtime.runtime.Runtime.reload` does exactly that). Each attempt becomes a
:class:`ReloadEvent`: logged, counted, and handed to an optional callback.

:func:`watch_events` is the engine of ``toolrt watch``: it keeps its own snapshot and
yields the initial load and every reload attempt as events.

Publishing (what makes an edit go live): in the default *settle* mode a batch of
changes is published only from a stable view: every config file (and pack folder)
unchanged in inode, size, times and content for ``settle_ms`` after the last change
(setting ``reload_settle_ms``), and unchanged again after compiling, so that a file
written in steps, deleted and recreated, or a folder renamed away and back is never
compiled half-way. A reload that removes tools, Policy documents, deny or ask rules (or
changes one), or a tool's business rules is *held*: it goes live only once the view has
stayed the same for a second full window. In *marker* mode (setting ``reload_marker``)
nothing is published until a commit marker changes: a file a deploy step writes last,
or the ``..data`` symlink a Kubernetes ConfigMap volume swaps.

Event kinds (``ReloadEvent.event``):

- ``loaded``: a clean build while nothing was serving (the initial load, or the first
  clean build after an initial config that was broken);
- ``reloaded``: a clean build replaced the serving snapshot. A rebuild whose content
  is identical (a comment, key order, a touched file) yields the same version: it is
  still reported, with ``version == previous`` and no changed tools, so a consumer
  sees every attempt and learns that an earlier error is gone;
- ``error``: the build failed; ``serving`` is the version that keeps serving;
- ``held``: a clean build that removes or weakens something was held back for another
  settle window (``version`` is the held build, ``errors`` says what it removes).
- ``mcp_drift``: not an attempt: the attempt's build found an MCP server listing tools
  that differ from the lock file (``server``, ``drift``: each change, ``drift_count``);
  delivered right after that attempt's event (see :meth:`ConfigWatcher.notify`). The
  lock file is watched too (:meth:`ConfigWatcher.watch_file`): once it is rewritten or
  removed, the tools mounted now are compared with it at once, with no reload attempt.

The watcher never installs signal handlers and never configures logging: it only
emits ``loguru`` records (with structured extras) for the application to route.
"""

from runtime.reload.events import EventKind, PublishMode, ReloadEvent, diff_tools, weakenings
from runtime.reload.stream import watch_events
from runtime.reload.watcher import DEFAULT_DEBOUNCE_MS, DEFAULT_MAX_WAIT_MS, ConfigWatcher, Guard

__all__ = [
    "DEFAULT_DEBOUNCE_MS",
    "DEFAULT_MAX_WAIT_MS",
    "ConfigWatcher",
    "EventKind",
    "Guard",
    "PublishMode",
    "ReloadEvent",
    "diff_tools",
    "watch_events",
    "weakenings",
]
