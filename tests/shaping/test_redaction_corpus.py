"""Recall and false positives of the shipped `secrets` profile on the corpus in
redaction_corpus.py (the README quotes the figures)."""

from __future__ import annotations

from redaction_corpus import measure

from runtime.shaping.redact import Redactor
from runtime.snapshot import CompiledRedaction


def test_the_secrets_profile_catches_the_corpus_and_leaves_ordinary_text_alone(
    default_profiles: tuple[CompiledRedaction, ...],
) -> None:
    figures = measure(Redactor(default_profiles[:1]))
    assert figures["positives"] >= 1000 and figures["negatives"] >= 400
    assert figures["recall"] >= 0.99, figures
    assert figures["false_positive_rate"] <= 0.01, figures["false_positives"]
