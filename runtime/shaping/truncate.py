"""Stage 06, step 3: cut a long result down to size, and say so in words the model can act on.

Modes (``ResolvedOutput.on_success`` / ``on_error``):

- ``artifact``: the full text is saved; the model gets a notice with the original
  length, the artifact id and the exact ``artifact_read(...)`` call that reads on,
  then a preview. If the text cannot be saved, falls back to ``head_tail``.
- ``head``: the start, then a line saying how much was cut.
- ``tail``: a line saying how much was cut, then the end.
- ``head_tail``: start and end with ``[... N characters omitted ...]`` between them,
  so the last lines of a failure (usually the actual error) survive.

The kept text never exceeds ``max_chars``; only the notice (a few hundred
characters) comes on top. Cuts prefer a line break near the boundary and never split
a surrogate pair.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from runtime.config.models import TruncationMode
from runtime.snapshot import ResolvedOutput

if TYPE_CHECKING:
    from runtime.shaping.artifacts import ArtifactRef

# How far a cut may move to land on a line break: a fifth of the kept part, at most
# this many characters (a whole line is worth more to the model than a half line,
# but not a big share of the budget).
_MAX_LINE_SLACK = 2_000


@dataclass(frozen=True, slots=True)
class Truncation:
    """What :func:`truncate` did: ``mode`` is the mode applied (None when not truncated)."""

    truncated: bool
    mode: str | None
    original_chars: int
    artifact_id: str | None = None


def truncate(
    text: str, output: ResolvedOutput, *, is_error: bool, save: Callable[[str], ArtifactRef] | None
) -> tuple[str, Truncation]:
    """``text`` cut to ``output.max_chars`` by the mode for successes or errors.

    ``save`` stores the full text and returns its :class:`ArtifactRef` (artifact
    mode); when it is None or raises, the result falls back to head and tail and
    says that the full text could not be kept.
    """
    total = len(text)
    if total <= output.max_chars:
        return text, Truncation(False, None, total)
    mode = TruncationMode(output.on_error if is_error else output.on_success)
    if mode is TruncationMode.artifact:
        reason = "no artifact store is configured"
        if save is not None:
            try:
                ref = save(text)
            except Exception as err:  # noqa: BLE001 - any failure to save falls back to head and tail
                reason = f"saving it failed: {err}"
            else:
                return _artifact(text, output, ref.id), Truncation(True, mode.value, total, ref.id)
        note = (
            f"[The full output ({total:,} characters) could not be kept ({reason}), so only its start and end are "
            "shown.]\n"
        )
        return note + _head_tail(text, output), Truncation(True, TruncationMode.head_tail.value, total)
    if mode is TruncationMode.head:
        return _head(text, output), Truncation(True, mode.value, total)
    if mode is TruncationMode.tail:
        return _tail(text, output), Truncation(True, mode.value, total)
    return _head_tail(text, output), Truncation(True, mode.value, total)


def read_more_call(artifact_id: str, offset: int) -> str:
    """The exact call that reads an artifact from ``offset``."""
    return f'artifact_read(id="{artifact_id}", offset={offset})'


def _artifact(text: str, output: ResolvedOutput, artifact_id: str) -> str:
    shown = _head_cut(text, min(output.preview_chars, output.max_chars))
    total = len(text)
    call = read_more_call(artifact_id, shown)
    how = (
        f'To read the rest, call {call} and go on from the next_offset it returns; add pattern="<regex>" to get only '
        "the matching lines."
    )
    if shown == 0:
        return (
            f"[Output too long to show: {total:,} characters. The full output is saved as artifact {artifact_id}. To "
            f'read it, call {call} and go on from the next_offset it returns; add pattern="<regex>" to get only the '
            "matching lines.]"
        )
    return (
        f"[Output truncated: {total:,} characters in total; the first {shown:,} are shown below. The full output is "
        f"saved as artifact {artifact_id}. {how}]\n{text[:shown]}"
    )


def _head(text: str, output: ResolvedOutput) -> str:
    cut = _head_cut(text, _limit(output.head_chars, output.max_chars))
    return (
        f"{_ensure_newline(text[:cut])}[... output truncated: the first {cut:,} of {len(text):,} characters are shown "
        f"above; the remaining {len(text) - cut:,} characters were cut and are not kept.]"
    )


def _tail(text: str, output: ResolvedOutput) -> str:
    start = _tail_cut(text, _limit(output.tail_chars, output.max_chars))
    return (
        f"[... output truncated: the first {start:,} of {len(text):,} characters were cut and are not kept; the last "
        f"{len(text) - start:,} are shown below.]\n{text[start:]}"
    )


def _head_tail(text: str, output: ResolvedOutput) -> str:
    head, tail = _split_budget(output)
    cut = _head_cut(text, head)
    start = max(_tail_cut(text, tail), cut)
    return f"{_ensure_newline(text[:cut])}[... {start - cut:,} characters omitted ...]\n{text[start:]}"


def _split_budget(output: ResolvedOutput) -> tuple[int, int]:
    """Characters kept from the start and from the end: head_chars and tail_chars,
    scaled down together when they would exceed max_chars."""
    budget = output.max_chars
    head, tail = max(output.head_chars, 0), max(output.tail_chars, 0)
    if head + tail == 0:
        head = budget // 2
        return head, budget - head
    if head + tail <= budget:
        return head, tail
    head = budget * head // (head + tail)
    return head, budget - head


def _limit(chars: int, max_chars: int) -> int:
    """``chars`` when set (> 0), else ``max_chars``; never more than ``max_chars``."""
    return min(chars, max_chars) if chars > 0 else max_chars


def _head_cut(text: str, n: int) -> int:
    """Where to end a head of at most ``n`` characters: after a line break near ``n`` if any."""
    if n >= len(text):
        return len(text)
    if n <= 0:
        return 0
    slack = min(n // 5, _MAX_LINE_SLACK)
    newline = text.rfind("\n", n - slack, n)
    cut = newline + 1 if newline >= 0 else n
    return _not_inside_pair(text, cut, -1)


def _tail_cut(text: str, n: int) -> int:
    """Where to start a tail of at most ``n`` characters: at a line start near ``len - n`` if any."""
    start = len(text) - n
    if start <= 0:
        return 0
    if n <= 0:
        return len(text)
    slack = min(n // 5, _MAX_LINE_SLACK)
    newline = text.find("\n", start - 1, start + slack)
    cut = newline + 1 if newline >= 0 else start
    return _not_inside_pair(text, cut, +1)


def _not_inside_pair(text: str, index: int, step: int) -> int:
    """Move ``index`` by ``step`` if it falls between the halves of a surrogate pair
    (possible in text decoded with ``surrogatepass``): half a character is garbage."""
    if 0 < index < len(text) and "\ud800" <= text[index - 1] <= "\udbff" and "\udc00" <= text[index] <= "\udfff":
        return index + step
    return index


def _ensure_newline(text: str) -> str:
    # The notice goes on its own line, so that it is never mistaken for output.
    return text if not text or text.endswith("\n") else text + "\n"
