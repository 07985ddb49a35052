"""How toolrt starts a Python child that runs one of its own modules (``python -m runtime....``).

``python -m`` puts the folder the child starts in first on its import path. The isolated
python handler's child starts in the workspace, and the audit writer's child in the app's
folder, which is often the workspace too: a ``json.py`` or a ``runtime/`` package an agent
wrote there would be imported instead of the real one, and run with the app's environment
(and, in the audit child, the arguments before redaction). So the child is started with
``-P`` (nothing put first on its path), and the app's ``PYTHONPATH`` reaches it without its
relative entries (they would be read from the child's folder) and without the entries
inside a folder the agent can write to. The folder holding the ``runtime`` package is added
when the child would not find it otherwise (a checkout run in place rather than installed).
"""

from __future__ import annotations

import functools
import os
import site
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

#: The folder holding the ``runtime`` package.
PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


def own_module_argv(module: str, *args: str) -> list[str]:
    """The command that runs ``module`` (one of toolrt's) in a child Python with ``args``."""
    return [sys.executable, "-P", "-m", module, *args]


def own_module_env(base: Mapping[str, str], untrusted: Sequence[str | os.PathLike[str]] = ()) -> dict[str, str]:
    """``base`` (the app's environment) with the ``PYTHONPATH`` such a child gets: the
    app's absolute entries outside every ``untrusted`` folder, then the package's folder
    unless it is an installed one (the child finds those by itself)."""
    env = dict(base)
    kept = [entry for entry in env.get("PYTHONPATH", "").split(os.pathsep) if _trusted(entry, untrusted)]
    if not _installed(PACKAGE_ROOT):
        kept.append(PACKAGE_ROOT)
    if kept:
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(kept))
    else:
        env.pop("PYTHONPATH", None)
    return env


def _trusted(entry: str, untrusted: Sequence[str | os.PathLike[str]]) -> bool:
    if not entry or not os.path.isabs(entry):
        return False  # "" and relative entries are read from the child's folder
    real = os.path.realpath(entry)
    for folder in untrusted:
        root = os.path.realpath(folder)
        if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
            return False
    return True


@functools.cache
def _installed(folder: str) -> bool:
    """Whether ``folder`` is one a child Python reads packages from by itself (looked up
    once: an isolated handler's child is started for every call)."""
    places = [*site.getsitepackages(), site.getusersitepackages()] if hasattr(site, "getsitepackages") else []
    real = os.path.realpath(folder)
    return any(os.path.realpath(place) == real for place in places)
