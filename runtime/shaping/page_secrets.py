"""Artifact pages that never cut a secret in two.

An artifact holds a tool's output as the tool's redaction left it: with ``redaction:
[]`` on the tool, in clear. ``artifact_read`` redacts each page with its own profiles,
but a page is cut at a character count, and a token cut by the page's end (or begun
before its start) matches no pattern in either page: ``AKIAIOSFOD`` on one page and
``NN7EXAMPLE`` on the next both pass. So before a page goes out, the secrets around
its two ends are found in the page with :data:`LOOK_BEHIND` characters before it and
its look-ahead after it, and:

- a secret that starts inside the page and runs past its end is left for the next
  page: the page ends where the secret starts (the next page, starting there, holds
  it whole and redacts it);
- a secret that covers the page from its start to beyond its end makes the page end
  where the secret ends (it is redacted whole);
- the rest of a secret that began before the page's start (an ``offset`` the model
  chose inside it) is replaced by that secret's redaction mark.

Offsets stay those of the artifact: paging from 0 with the offsets given still visits
every character once.
"""

from __future__ import annotations

import dataclasses

from runtime.shaping.artifacts import ArtifactPage
from runtime.shaping.redact import Redactor

LOOK_BEHIND = 1024  # characters before a page read to find a secret begun before it


def keep_secrets_whole(page: ArtifactPage, before: str, redactor: Redactor) -> ArtifactPage:
    """``page`` with its ends moved or masked so that no secret ``redactor`` knows is cut
    by them. ``before`` is the text just before the page (up to :data:`LOOK_BEHIND`
    characters); ``page.after`` the look-ahead after it."""
    if not page.text:
        return page
    window = before + page.text + page.after
    start, end = len(before), len(before) + len(page.text)
    masked_to, mark = start, ""
    new_end = end
    for begin, stop, replacement in redactor.spans(window):
        if begin < start < stop:
            masked_to, mark = stop, replacement
        if begin < end < stop:
            new_end = begin if begin > start else stop
    if masked_to == start and new_end == end:
        return page
    text = mark + window[masked_to:new_end] if masked_to < new_end else mark
    next_offset: int | None = page.offset + (new_end - start)
    if next_offset is not None and next_offset >= page.total_chars:
        next_offset = None
    return dataclasses.replace(page, text=text, next_offset=next_offset, after=window[new_end:])
