"""The fast paths of ``Redactor.redact`` redact exactly as the slow, sure path does.

The fast paths: a text without any candidate costs one scan and comes back as it is;
the first candidate found is not searched for again; a candidate that the pattern set
names alone is taken without a second look in place (unless its verdict could keep
text: look-alikes, validators, value_only). The reference here is the general scanner
loop with the set switched off, so every candidate is identified by trying the
patterns one by one in place. Generated outputs: secrets and personal data of every
shipped family in many contexts, near misses, look-alike characters, secrets at line
and chunk edges and across the 1 KB mark, multi-byte neighbours, and huge outputs.
"""

from __future__ import annotations

import json
import random
import string

import pytest
import redaction_corpus as corpus
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shaping_samples import pem_key

from runtime.shaping._unicode import to_utf8
from runtime.shaping.disguise import DISGUISED, has_disguise, redact_disguised
from runtime.shaping.redact import Redactor
from runtime.shaping.redact_scan import _build_scanners, _scan

_RNG = random.Random(1717)
_AL = string.ascii_letters + string.digits


def _reference(redactor: Redactor, text: str) -> tuple[str, dict[str, int]]:
    """The slow path: each scanner in turn, every candidate identified pattern by pattern in place."""
    scanners = _build_scanners([p for profile in redactor.profiles for p in profile.patterns])
    for scanner in scanners:
        scanner._set = None  # no set: identify() tries the patterns in order, each confirmed in place
    return _slow(scanners, text, redactor.spans)


@pytest.fixture(scope="module")
def reference_scanners(redactor: Redactor):  # noqa: ANN201 - the scanners of the slow path, built once
    scanners = _build_scanners([p for profile in redactor.profiles for p in profile.patterns])
    for scanner in scanners:
        scanner._set = None
    return scanners


def _slow(scanners, text: str, spans) -> tuple[str, dict[str, int]]:  # noqa: ANN001
    """The slow path, with the disguise passes around it as ``Redactor.redact`` runs them
    on text holding a disguise character (they are no fast path: both paths have them)."""
    if not has_disguise(text):
        return _slow_plain(scanners, text)
    text, hidden = redact_disguised(text, spans, inside=True)
    text, counts = _slow_plain(scanners, text)
    text, more = redact_disguised(text, spans)
    if hidden + more:
        counts[DISGUISED] = counts.get(DISGUISED, 0) + hidden + more
    return text, counts


def _slow_plain(scanners, text: str) -> tuple[str, dict[str, int]]:  # noqa: ANN001
    data = to_utf8(text)
    counts: dict[str, int] = {}
    for scanner in scanners:
        out: list[bytes] = []
        _scan(scanner, data, 0, None, out, counts)
        data = b"".join(out)
    return data.decode("utf-8"), counts


def _luhn_card() -> str:
    digits = [4] + [_RNG.randint(0, 9) for _ in range(14)]
    total = 0
    for i, d in enumerate(reversed(digits)):
        d = d * 2 if i % 2 == 0 else d
        total += d - 9 if d > 9 else d
    digits.append((10 - total % 10) % 10)
    text = "".join(map(str, digits))
    return " ".join(text[i : i + 4] for i in range(0, 16, 4)) if _RNG.random() < 0.5 else text


def _pii() -> list[str]:
    return [
        f"{_RNG.choice(['ana', 'li.wei', 'j_o+tag'])}{_RNG.randint(1, 99)}@example.{_RNG.choice(['org', 'com', 'io'])}",
        _luhn_card(),
        "4111 1111 1111 1112",  # fails Luhn: kept
        "GB82 WEST 1234 5698 7654 32",
        "GB82WEST12345698765433",  # fails the IBAN check
        "+44 20 7946 0958",
        "+33 6 12 34 56 78",
        "138 1234 5678",
        "11010519491231002X",
        "110105194912310021",  # fails the resident-ID checksum
        "git@github.com:org/repo.git",  # a look-alike, kept
        "https://deploy@example.com/path",  # a look-alike, kept
        "ssh://git@host.example.org:2222/x",
    ]


_CONFUSABLES = {"a": "\u0430", "e": "\u0435", "o": "\u043e", "p": "\u0440", "c": "\u0441", "x": "\u0445", "i": "\u0456"}


def _near_misses(secret: str) -> list[str]:
    """Variants that nearly match: shortened, one character changed, a confusable letter,
    a zero-width character inside, full-width letters, the prefix broken."""
    out = [secret[:-1], secret[1:], secret[: len(secret) // 2]]
    i = _RNG.randrange(len(secret))
    out.append(secret[:i] + _RNG.choice("!#~ ") + secret[i + 1 :])
    out.append("".join(_CONFUSABLES.get(ch, ch) for ch in secret))
    out.append(secret[:3] + "\u200b" + secret[3:])
    out.append(
        secret[:4] + "".join(chr(ord(ch) + 0xFEE0) if "!" <= ch <= "~" else ch for ch in secret[4:10]) + secret[10:]
    )
    out.append(secret.replace("_", "-", 1) if "_" in secret else secret.replace("-", "_", 1))
    return out


_CONTEXTS = [
    "{}",
    " {} ",
    "x{}",  # glued to a word character
    "{}x",
    "é{}ü",  # multi-byte neighbours
    "中文{}中文",
    "🙂{}🙂",
    "\n{}\n",
    "\r\n{}\r\n",
    '{{"v": "{}"}}',
    "token={}",
    "export API_TOKEN='{}'",
    "Authorization: Bearer {}",
    "line one\n  - {}\nline three",
    "\t{}\t",
]


def _fragments() -> list[str]:
    secrets: list[str] = corpus._families() + corpus._assignments() + _pii()
    frags = list(secrets)
    for secret in secrets[:: max(1, len(secrets) // 25)]:
        frags.extend(_near_misses(secret))
    frags.extend(corpus.negatives()[:80])
    return frags


def _outputs(count: int) -> list[str]:
    """Generated outputs of about 1 KB: clean ones and ones holding secrets and personal data."""
    frags = _fragments()
    clean = corpus.negatives()
    out: list[str] = []
    for n in range(count):
        lines = _RNG.sample(clean, k=12)
        if n % 3:  # two of three hold something
            for _ in range(_RNG.randint(1, 4)):
                where = _RNG.randrange(len(lines) + 1)
                lines.insert(where, _RNG.choice(_CONTEXTS).format(_RNG.choice(frags)))
        text = "\n".join(lines)
        if n % 7 == 0:
            text = text.replace("\n", "\r\n")
        if n % 11 == 0:
            text = text.rstrip("\n")  # a secret may end the text
        out.append(text)
    return out


def test_generated_outputs_are_redacted_as_by_the_slow_path(redactor: Redactor, reference_scanners) -> None:  # noqa: ANN001
    for text in _outputs(1500):
        assert redactor.redact(text) == _slow(reference_scanners, text, redactor.spans), text


def test_every_fragment_alone_and_in_every_context_is_redacted_as_by_the_slow_path(
    redactor: Redactor,
    reference_scanners,  # noqa: ANN001
) -> None:
    for frag in _fragments():
        for context in _CONTEXTS:
            text = context.format(frag)
            assert redactor.redact(text) == _slow(reference_scanners, text, redactor.spans), text


def test_secret_across_the_one_kilobyte_mark_is_redacted_as_by_the_slow_path(
    redactor: Redactor,
    reference_scanners,  # noqa: ANN001
) -> None:
    filler = "\n".join(corpus.negatives())
    tokens = corpus._families()[:20]
    for secret in tokens + _pii():
        for shift in range(0, len(secret) + 1, max(1, len(secret) // 6)):
            text = filler[: 1023 - shift] + " " + secret + " " + filler[:200]  # the 1 KB mark inside the secret
            expected = _slow(reference_scanners, text, redactor.spans)
            assert redactor.redact(text) == expected, text
            if secret in tokens:
                assert secret not in expected[0]


def test_secrets_at_line_and_chunk_edges_stream_as_they_redact_whole(default_profiles) -> None:  # noqa: ANN001
    """A small window: chunk edges fall inside secrets; the stream still redacts as the whole text does."""
    small = Redactor(default_profiles, window=256)
    frags = corpus._families()[:30] + _pii()
    for n, frag in enumerate(frags):
        text = "a" * (250 + n % 9) + "\n" + frag + "\n" + "b" * 300 + " " + frag
        whole = small.redact(text)
        for size in (1, 7, 255, 256, 1024):
            stream = small.stream()
            got = "".join(stream.feed(text[i : i + size]) for i in range(0, len(text), size)) + stream.finish()
            assert got == whole[0], (frag, size)
            assert stream.counts == whole[1]


def test_clean_text_comes_back_as_the_same_object(redactor: Redactor) -> None:
    for text in corpus.negatives():
        out, counts = redactor.redact(text)
        if not counts:
            assert out is text


def test_huge_outputs_are_redacted_as_by_the_slow_path(redactor: Redactor, reference_scanners) -> None:  # noqa: ANN001
    clean = "\n".join(corpus.negatives())
    huge_clean = (clean + "\n") * (300_000 // len(clean) + 1)
    assert redactor.redact(huge_clean) == (huge_clean, {})
    secrets = corpus._families() + _pii() + [pem_key(), json.dumps({"private_key": pem_key()})]
    parts = []
    for i in range(0, len(huge_clean), 20_000):
        parts.append(huge_clean[i : i + 20_000])
        parts.append(_RNG.choice(_CONTEXTS).format(_RNG.choice(secrets)))
    huge = "".join(parts)
    got = redactor.redact(huge)
    assert got == _slow(reference_scanners, huge, redactor.spans)
    assert got[1]


def test_candidates_that_are_kept_come_back_unchanged(redactor: Redactor, reference_scanners) -> None:  # noqa: ANN001
    """Candidates refused by their validator or kept as look-alikes: the text itself, counts empty."""
    for text in ["4111 1111 1111 1112", "git@github.com:org/repo.git", "110105194912310021", "password: ${DB_PW}"]:
        for context in _CONTEXTS[:8]:
            whole = context.format(text)
            assert redactor.redact(whole) == _slow(reference_scanners, whole, redactor.spans) == (whole, {})


_PIECES = st.sampled_from(
    [*corpus._families()[:40], *_pii(), *corpus.NEGATIVES_FIXED, "\n", "\r\n", " ", "é", "中", "🙂", "\u200b", "x", "="]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(_PIECES, st.text(max_size=12)), max_size=30))
def test_any_mix_of_pieces_is_redacted_as_by_the_slow_path(redactor: Redactor, pieces: list[str]) -> None:
    text = "".join(pieces)
    assert redactor.redact(text) == _reference(redactor, text)
