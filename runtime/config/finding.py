"""A problem found while checking config, before it is placed in a file.

Its own module so that the expression checks (:mod:`runtime.config.expressions`) and the type and cost checks under
them (:mod:`runtime.config.exprtypes`) both make findings without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass

Path = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Finding:
    """A problem at ``path`` in a document, optionally at ``inner`` (line, col) inside
    the string value there."""

    path: Path
    code: str
    message: str
    warning: bool = False
    inner: tuple[int, int] | None = None
