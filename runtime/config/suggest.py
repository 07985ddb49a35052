""" "Did you mean" hints for misspelt keys, names and references."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(word: str, candidates: Iterable[str], limit: int = 1) -> list[str]:
    """The candidates most similar to ``word``, best first (may be empty)."""
    if len(word) > 200:
        return []  # nobody misspells a 200-character name; and matching it would be slow
    pool = sorted(set(candidates))
    by_case = {c.lower(): c for c in pool}
    hits = difflib.get_close_matches(word.lower(), list(by_case), n=limit, cutoff=0.6)
    return [by_case[h] for h in hits]


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """' Did you mean `x`?' or '' when nothing is close."""
    hits = closest(word, candidates)
    return f" Did you mean `{hits[0]}`?" if hits else ""


def ranked(word: str, candidates: Iterable[str]) -> list[str]:
    """All candidates, the closest to ``word`` first, then alphabetically."""
    pool = sorted(set(candidates))
    probe = word.lower()[:200]
    return sorted(pool, key=lambda c: (-difflib.SequenceMatcher(None, probe, c.lower()).ratio(), c))
