"""Read-only listing and search in the workspace: ``list_dir``, ``glob`` and ``grep``.

Each tool is a plain function over a :class:`~runtime.workspace.sandbox.Workspace`
that returns text for the model. Bad input is refused with a
:class:`~runtime.workspace.errors.WorkspaceError` (and nothing else); every path
argument goes through :meth:`Workspace.resolve`; output names files only by their
workspace-relative path; every list is capped, with a notice that says how much was
left out and how to narrow the request. Results are sorted by path (component by
component, in code-point order), so the same tree gives the same text.

What ``glob`` and ``grep`` look at comes from one walker, shared by both grep engines
so that they search exactly the same files:

* directories are opened through descriptors with ``O_NOFOLLOW`` from the root down:
  a symbolic link is never traversed, and a directory swapped for a link during the
  walk is skipped rather than followed;
* entries matching the deny globs are left out and denied directories not entered;
* hidden names (starting with ``.``) are skipped unless the pattern names one
  (``.github/**``, ``**/.eslintrc*``);
* ``.gitignore`` files inside the workspace are honoured (git's syntax: the deepest
  file decides, its last matching line wins). Nothing above the root is read, nor
  global excludes, and it does not matter whether a ``.git`` directory exists: a
  workspace is often a subdirectory or an export of a checkout;
* dependency and cache directories (:data:`NOISE_DIRS`) are not entered unless the
  pattern names them;
* ``include_ignored=True`` lifts the last three rules; the deny globs always apply;
* the ``path`` argument itself is always searched (as in ripgrep): only the deny
  globs apply to it, so ``grep(..., path="build")`` searches an ignored directory.

``grep`` runs ripgrep when ``rg`` is on PATH and a Python engine otherwise. Ripgrep is
given the walker's file list (fixed argv, no shell, ``--no-config``, ``--`` before
the pattern, a time limit after which it is killed); ripgrep's own filters (ignore
files, hidden files, globs) therefore play no part, and every path it reports is
checked again against the list and the deny globs. The Python engine matches with
RE2 (``google-re2``), which, like ripgrep's regex engine, is linear-time and has no
look-around or back-references, so a pattern means the same in both. Every pattern
is checked with RE2 first, whatever the engine. Known difference: ``\\w``, ``\\d``,
``\\s`` and ``\\b`` are Unicode-aware in ripgrep and ASCII-only in RE2.

Symbolic links: ``list_dir`` shows them (``name -> target`` for a target inside the
workspace, never the target of one outside); ``glob`` lists a link to a file inside
the workspace; ``grep`` does not follow links (ripgrep's default), a target inside
the workspace is searched under its own path.

The package, one job per module (each imports only those above it)::

    common.py         SearchLimits, NOISE_DIRS, text and descriptor helpers
    matcher.py        the search globs (dialect: runtime.workspace.globs) and where to descend
    gitignore.py      .gitignore files, read as git reads them
    walker.py         the one walker of glob and grep
    listing.py        list_dir
    find.py           glob
    regex.py          grep's patterns, checked with RE2
    results.py        GrepRequest, the Engine protocol, per-file hits
    engine_python.py  PythonEngine: RE2 in this process
    engine_rg.py      RipgrepEngine: rg on the walker's file list
    grep.py           grep: check, walk, search with one engine, format

Limits are a :class:`SearchLimits` passed to each call (``limits=``), not module globals.
"""

from runtime.workspace.search.common import DEFAULT_LIMITS, NOISE_DIRS, GrepEngine, GrepOutput, SearchLimits
from runtime.workspace.search.engine_python import PythonEngine
from runtime.workspace.search.engine_rg import RipgrepEngine, ripgrep
from runtime.workspace.search.find import glob
from runtime.workspace.search.grep import grep
from runtime.workspace.search.listing import list_dir
from runtime.workspace.search.results import Engine, GrepRequest

__all__ = [
    "DEFAULT_LIMITS",
    "NOISE_DIRS",
    "Engine",
    "GrepEngine",
    "GrepOutput",
    "GrepRequest",
    "PythonEngine",
    "RipgrepEngine",
    "SearchLimits",
    "glob",
    "grep",
    "list_dir",
    "ripgrep",
]
