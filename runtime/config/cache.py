"""Compile cache: work reused across snapshot builds, keyed by content hash.

As Kubernetes does for admission policies, a reload recompiles only what changed:
files are re-parsed only when their bytes change, documents re-validated only when
their content changes, and each tool's compiled pieces (argument validator, CEL
programs, findings) are reused while its document and engines are the same. Entries
not used by the latest build are dropped, so the cache tracks the live config.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from runtime.config.yamlsource import ParsedFile

T = TypeVar("T")


class CompileCache:
    """Holds parsed files, validated models and compiled pieces between builds."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._files: dict[tuple[str, str], ParsedFile] = {}
        self._models: dict[str, BaseModel] = {}
        self._compiled: dict[tuple[Any, ...], Any] = {}
        self._used: set[Any] = set()
        self._trail: list[Any] | None = None  # the entries used since reuse() began its build

    def begin(self) -> None:
        """Start a build: remember which entries it uses."""
        with self._lock:
            self._used = set()

    def finish(self) -> None:
        """End a build: forget entries it did not use."""
        with self._lock:
            self._files = {k: v for k, v in self._files.items() if ("file", k) in self._used}
            self._models = {k: v for k, v in self._models.items() if ("model", k) in self._used}
            self._compiled = {k: v for k, v in self._compiled.items() if ("compiled", k) in self._used}

    def _use(self, entry: Any) -> None:
        self._used.add(entry)
        if self._trail is not None:
            self._trail.append(entry)

    def parsed(self, display: str, digest: str, parse: Callable[[], ParsedFile]) -> ParsedFile:
        key = (display, digest)
        self._use(("file", key))
        hit = self._files.get(key)
        if hit is None:
            hit = self._files[key] = parse()
        return hit

    def model(self, content_hash: str) -> BaseModel | None:
        hit = self._models.get(content_hash)
        if hit is not None:
            self._use(("model", content_hash))
        return hit

    def remember_model(self, content_hash: str, model: BaseModel) -> BaseModel:
        self._use(("model", content_hash))
        self._models[content_hash] = model
        return model

    def compiled(self, key: tuple[Any, ...], build: Callable[[], T]) -> T:
        self._use(("compiled", key))
        hit = self._compiled.get(key)
        if hit is None:
            hit = self._compiled[key] = build()
        return hit  # type: ignore[no-any-return]

    def reused(self, key: tuple[Any, ...], made_of: tuple[Any, ...], build: Callable[[], T | None]) -> T | None:
        """Like :meth:`compiled` for a value made of other objects of this build (a whole
        tool from its source and model): kept while those very objects (by identity; an
        id is reused once its object is gone) come back in ``key``'s context. A hit keeps
        alive every entry its build used, so that they are still there the day it
        misses; a ``None`` result is not kept."""
        full = (*key, *map(id, made_of))
        entry = ("compiled", full)
        self._use(entry)
        hit = self._compiled.get(full)
        if hit is not None and all(a is b for a, b in zip(hit[0], made_of, strict=True)):
            self._used.update(hit[2])
            if self._trail is not None:
                self._trail.extend(hit[2])
            return hit[1]  # type: ignore[no-any-return]
        outer, self._trail = self._trail, []
        try:
            value = build()
        finally:
            used, self._trail = self._trail, outer
        if outer is not None:
            outer.extend(used)
        if value is None:
            self._compiled.pop(full, None)
        else:
            self._compiled[full] = (made_of, value, tuple(used))
        return value

    def stats(self) -> dict[str, int]:
        return {"files": len(self._files), "models": len(self._models), "compiled": len(self._compiled)}
