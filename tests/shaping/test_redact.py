"""Redactor: every shipped pattern redacts its secrets, look-alikes survive, one combined RE2 scan."""

from __future__ import annotations

import pytest
from shaping_samples import ALL_ZERO_CARD, LOOK_ALIKES, PII, PREFIXED_ASSIGNMENTS, SECRETS

from runtime.config.models import Validator
from runtime.regex import compile_re2
from runtime.shaping.redact import Redactor
from runtime.snapshot import CompiledPattern, CompiledRedaction


def profile(name: str, *patterns: tuple[str, str] | tuple[str, str, dict[str, object]]) -> CompiledRedaction:
    """A compiled profile from (name, regex[, options]) pairs, as the config compiler builds it."""
    compiled = []
    for item in patterns:
        options: dict[str, object] = dict(item[2]) if len(item) == 3 else {}  # type: ignore[misc]
        regex = compile_re2(item[1], case_insensitive=bool(options.pop("case_insensitive", False)))
        replacement = str(options.pop("replacement", f"[REDACTED:{item[0]}]"))
        validator = options.pop("validator", None)
        compiled.append(CompiledPattern(item[0], regex, replacement, validator))  # type: ignore[arg-type]
    combined = compile_re2("|".join(f"({p.regex.pattern})" for p in compiled))
    return CompiledRedaction(name, tuple(compiled), combined)


def test_every_shipped_pattern_has_a_positive_sample(default_profiles: tuple[CompiledRedaction, ...]) -> None:
    names = {p.name for prof in default_profiles for p in prof.patterns if not p.keep}
    assert names == {name for name, _, _ in SECRETS + PII}


def test_every_shipped_keep_pattern_has_a_look_alike_it_keeps(default_profiles: tuple[CompiledRedaction, ...]) -> None:
    kept = {p.name for prof in default_profiles for p in prof.patterns if p.keep}
    assert kept == {"ssh_remote", "url_user_without_password"}
    for pattern in (p for prof in default_profiles for p in prof.patterns if p.keep):
        assert any(pattern.regex.search(text) for text in LOOK_ALIKES), pattern.name


@pytest.mark.parametrize(
    ("name", "template", "secret"), SECRETS + PII, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(SECRETS + PII)]
)
def test_shipped_pattern_redacts_its_secret(redactor: Redactor, name: str, template: str, secret: str) -> None:
    text = template.format(secret)
    redacted, counts = redactor.redact(text)
    assert redacted == template.format(f"[REDACTED:{name}]")
    assert counts == {name: 1}


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_look_alikes_survive_unchanged(redactor: Redactor, text: str) -> None:
    assert redactor.redact(text) == (text, {})


def test_a_kept_look_alike_does_not_shield_a_real_address_nearby(redactor: Redactor) -> None:
    text = "remote git@github.com:org/repo.git, mail bob@example.com: thanks, web http://user@host.example.com/"
    redacted, counts = redactor.redact(text)
    assert "git@github.com:org/repo.git" in redacted and "http://user@host.example.com/" in redacted
    assert "bob@example.com" not in redacted and counts == {"email": 1}


@pytest.mark.parametrize(
    ("text", "gone", "kept"),
    [
        (
            "git clone https://ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8@github.com/o/r.git",
            "ghp_a1B2",
            "github.com/o/r.git",
        ),
        (
            "curl https://eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U@api.example.com/x",
            "eyJzdWIi",
            "api.example.com",
        ),
        ("user=alice@example.com:role=admin", "alice@example.com", "role=admin"),
        ("alice@example.com:bob@example.org", "bob@example.org", ""),
    ],
)
def test_a_kept_look_alike_never_shields_a_secret_inside_or_after_it(
    redactor: Redactor, text: str, gone: str, kept: str
) -> None:
    redacted, _ = redactor.redact(text)
    assert gone not in redacted and kept in redacted


def test_a_keep_pattern_leaves_its_match_alone_and_uncounted() -> None:
    keep = CompiledPattern(
        "version_tag", compile_re2(r"v\d+\.\d+\.\d+"), "", None, keep=True, shields=frozenset({"number"})
    )
    number = CompiledPattern("number", compile_re2(r"\d+"), "[N]", None)
    redactor = Redactor((CompiledRedaction("p", (keep, number), None),))
    assert redactor.redact("release v1.2.3 has 42 fixes") == ("release v1.2.3 has [N] fixes", {"number": 1})


@pytest.mark.parametrize("text", PREFIXED_ASSIGNMENTS)
def test_assignments_to_prefixed_secret_names_are_redacted(redactor: Redactor, text: str) -> None:
    redacted, counts = redactor.redact(text)
    assert counts == {"secret_assignment": 1}
    assert "[REDACTED:secret_assignment]" in redacted


def test_an_all_zero_card_number_is_not_a_card(redactor: Redactor) -> None:
    assert redactor.redact(ALL_ZERO_CARD) == (ALL_ZERO_CARD, {})


def test_all_samples_in_one_text_are_each_counted(redactor: Redactor) -> None:
    samples = SECRETS + PII
    text = "\n".join(template.format(secret) for _, template, secret in samples) + "\n" + "\n".join(LOOK_ALIKES)
    redacted, counts = redactor.redact(text)
    expected: dict[str, int] = {}
    for name, _, _ in samples:
        expected[name] = expected.get(name, 0) + 1
    assert counts == expected
    secrets_part, _, look_alikes_part = redacted.partition("\n" + LOOK_ALIKES[0])
    for _, _, secret in samples:
        assert secret not in secrets_part
    assert LOOK_ALIKES[0] + look_alikes_part == "\n".join(LOOK_ALIKES)


def test_counts_never_contain_the_matched_values(redactor: Redactor) -> None:
    _, counts = redactor.redact("key AKIAIOSFODNN7EXAMPLE")
    assert counts == {"aws_access_key": 1}


def test_text_without_matches_is_returned_as_the_same_object(redactor: Redactor) -> None:
    text = "nothing to see here\n" * 100
    result, counts = redactor.redact(text)
    assert result is text and counts == {}


def test_non_ascii_text_around_matches_is_kept(redactor: Redactor) -> None:
    text = "用户 bob@example.com 登录 🎉 密码=秘密 ok, é AKIAIOSFODNN7EXAMPLE ü"
    redacted, _ = redactor.redact(text)
    assert redacted == "用户 [REDACTED:email] 登录 🎉 密码=秘密 ok, é [REDACTED:aws_access_key] ü"


def test_lone_surrogates_do_not_break_redaction(redactor: Redactor) -> None:
    redacted, counts = redactor.redact("\ud800 bob@example.com")
    assert redacted == "\ufffd [REDACTED:email]"
    assert counts == {"email": 1}


def test_a_card_number_that_fails_luhn_is_kept_but_a_valid_one_next_to_it_is_redacted(redactor: Redactor) -> None:
    text = "bad 4111 1111 1111 1112, good 4111 1111 1111 1111"
    assert redactor.redact(text) == ("bad 4111 1111 1111 1112, good [REDACTED:card_number]", {"card_number": 1})


def test_a_rejected_candidate_lets_a_later_pattern_match_at_the_same_position(redactor: Redactor) -> None:
    # 18 digits: card_number (listed first) matches and fails Luhn; cn_resident_id is
    # then tried at the same position and its checksum passes.
    assert redactor.redact("440305199211304524") == ("[REDACTED:cn_resident_id]", {"cn_resident_id": 1})


def test_a_rejected_candidate_lets_a_match_inside_it_be_found() -> None:
    red = Redactor([profile("p", ("num", r"\d{4}-\d{4}", {"validator": Validator.luhn}), ("pin", r"5\d{3}"))])
    # "1234-5678" fails Luhn; scanning goes on from the next character, so "5678" is found.
    assert red.redact("1234-5678") == ("1234-[REDACTED:pin]", {"pin": 1})


def test_profiles_are_combined_in_order_and_the_first_listed_pattern_wins_at_a_position() -> None:
    first = profile("first", ("long", r"abc\w+"))
    second = profile("second", ("short", r"abc"))
    assert Redactor([first, second]).redact("abcdef") == ("[REDACTED:long]", {"long": 1})
    assert Redactor([second, first]).redact("abcdef") == ("[REDACTED:short]def", {"short": 1})


def test_the_leftmost_match_wins_across_profiles() -> None:
    red = Redactor([profile("a", ("late", r"world")), profile("b", ("early", r"hello wor"))])
    assert red.redact("hello world") == ("[REDACTED:early]ld", {"early": 1})


def test_patterns_with_their_own_capture_groups_are_told_apart() -> None:
    red = Redactor(
        [
            profile("a", ("kv", r"(key)=(\w+)"), ("nested", r"((a)(b))+c")),
            profile("b", ("named", r"(?P<user>u\d+)"), ("plain", r"zzz")),
        ]
    )
    text = "key=1 ababc u42 zzz"
    assert red.redact(text) == (
        "[REDACTED:kv] [REDACTED:nested] [REDACTED:named] [REDACTED:plain]",
        {"kv": 1, "nested": 1, "named": 1, "plain": 1},
    )


def test_which_pattern_matched_is_decided_with_the_characters_around_the_match() -> None:
    # In "_%foo" the \b before "%" holds ("_" is a word character, "%" is not), so
    # `edge` matches at "%". Looked at without its surroundings, "%foo" would not
    # match `edge` and would be taken for `plain`, which also matches it.
    red = Redactor([profile("p", ("edge", r"\b%foo"), ("plain", r"%foo"))])
    assert red.redact("_%foo") == ("_[REDACTED:edge]", {"edge": 1})
    assert red.redact(" %foo") == (" [REDACTED:plain]", {"plain": 1})
    assert red.redact("%foo") == ("[REDACTED:plain]", {"plain": 1})
    red = Redactor([profile("p", ("edge", r"foo%\b"), ("plain", r"foo%"))])
    assert red.redact("foo%_") == ("[REDACTED:edge]_", {"edge": 1})
    assert red.redact("foo% ") == ("[REDACTED:plain] ", {"plain": 1})


def all_samples_text() -> str:
    return (
        "\n".join(template.format(secret) for _, template, secret in SECRETS + PII)
        + "\n"
        + "\n".join(LOOK_ALIKES)
        + "\n_%x@example.com é@b.co"
    )


def test_results_are_the_same_through_google_re2s_public_wrapper(
    default_profiles: tuple[CompiledRedaction, ...], redactor: Redactor, monkeypatch: pytest.MonkeyPatch
) -> None:
    import runtime.shaping.redact_scan as redact_module

    monkeypatch.setattr(redact_module, "_low", None)
    public_only = Redactor(default_profiles)
    assert public_only._scanners[0].finder._match is None
    assert public_only.redact(all_samples_text()) == redactor.redact(all_samples_text())


def test_results_are_the_same_without_a_pattern_set(
    default_profiles: tuple[CompiledRedaction, ...], redactor: Redactor, monkeypatch: pytest.MonkeyPatch
) -> None:
    import re2

    import runtime.shaping.redact_scan as redact_module

    def no_set(sources: tuple[str, ...]) -> object:
        raise re2.error("set too large")

    monkeypatch.setattr(redact_module, "_compile_set", no_set)
    without_set = Redactor(default_profiles)
    assert without_set._scanners[0]._set is None
    assert without_set.redact(all_samples_text()) == redactor.redact(all_samples_text())


def test_patterns_that_cannot_share_one_alternation_still_all_apply(monkeypatch: pytest.MonkeyPatch) -> None:
    import re2

    import runtime.shaping.redact_scan as redact_module

    real = redact_module._compile

    def refuse_both(source: str) -> object:
        # Stands in for an alternation RE2 refuses (e.g. beyond its program size limit).
        if "one" in source and "two" in source:
            raise re2.error("pattern too large - compile failed")
        return real(source)

    monkeypatch.setattr(redact_module, "_compile", refuse_both)
    red = Redactor([profile("a", ("one", r"one")), profile("b", ("two", r"two"))])
    assert len(red._scanners) == 2
    assert red.redact("one two three") == ("[REDACTED:one] [REDACTED:two] three", {"one": 1, "two": 1})


def test_a_case_insensitive_pattern_stays_case_insensitive_inside_the_alternation() -> None:
    red = Redactor([profile("p", ("token", r"token:\s*\w+", {"case_insensitive": True}), ("exact", r"Exact"))])
    assert red.redact("TOKEN: abc exact Exact") == ("[REDACTED:token] exact [REDACTED:exact]", {"token": 1, "exact": 1})


def test_custom_replacement_text_is_inserted_literally() -> None:
    red = Redactor([profile("p", ("pin", r"pin=\d+", {"replacement": r"pin=*** \1 \g<0>"}))])
    assert red.redact("pin=1234") == (r"pin=*** \1 \g<0>", {"pin": 1})


def test_a_pattern_that_matches_the_empty_string_redacts_nothing() -> None:
    red = Redactor([profile("p", ("maybe", r"x*"), ("word", r"secret"))])
    assert red.redact("a secret b") == ("a [REDACTED:word] b", {"word": 1})


def test_a_validator_that_raises_counts_as_a_match(monkeypatch: pytest.MonkeyPatch) -> None:
    import runtime.shaping.redact_scan as redact_module

    def broken(text: str) -> bool:
        raise RuntimeError("bug")

    monkeypatch.setitem(redact_module.VALIDATORS, Validator.luhn, broken)
    red = Redactor([profile("p", ("num", r"\d{16}", {"validator": Validator.luhn}))])
    assert red.redact("1234567890123456") == ("[REDACTED:num]", {"num": 1})


def test_an_empty_profile_list_gives_a_no_op_redactor() -> None:
    red = Redactor([])
    assert not red.enabled
    text = "AKIAIOSFODNN7EXAMPLE"
    assert red.redact(text) == (text, {})
    assert red.redact_value({"k": text}) == ({"k": text}, {})
    stream = red.stream()
    assert stream.feed(text) == text
    assert stream.finish() == ""
    assert stream.counts == {}


def test_redact_value_redacts_strings_in_nested_data_including_keys(redactor: Redactor) -> None:
    value = {"user": "bob@example.com", "items": [{"token": "ghp_" + "a" * 36}, 3, None, True], "alice@example.com": 1}
    redacted, counts = redactor.redact_value(value)
    assert redacted == {
        "user": "[REDACTED:email]",
        "items": [{"token": "[REDACTED:github_token]"}, 3, None, True],
        "[REDACTED:email]": 1,
    }
    assert counts == {"email": 2, "github_token": 1}


def test_redact_value_drops_data_nested_too_deep_instead_of_passing_it_unredacted(redactor: Redactor) -> None:
    deep: object = "bob@example.com"
    for _ in range(300):
        deep = [deep]
    redacted, _ = redactor.redact_value(deep)
    assert "bob@example.com" not in repr(redacted)
    assert "nested deeper than 200 levels" in repr(redacted)


def test_tools_with_the_same_profiles_share_one_compiled_alternation(
    default_profiles: tuple[CompiledRedaction, ...],
) -> None:
    assert (
        Redactor(default_profiles)._scanners[0].finder._public is Redactor(default_profiles)._scanners[0].finder._public
    )


def test_the_redactor_scans_with_re2_not_python_re(redactor: Redactor) -> None:
    import re2

    assert len(redactor._scanners) == 1
    assert isinstance(redactor._scanners[0].finder._public, re2._Regexp)


def test_a_large_text_with_many_look_alike_numbers_is_redacted_in_linear_time(redactor: Redactor) -> None:
    import time

    line = "order 1234567890123456 item 4000123456789010 ok\n"
    small, big = line * 2_000, line * 20_000
    redactor.redact(small)  # warm up RE2's DFA cache first
    # The thread's CPU time, not the wall clock: on a busy machine the wall time of either
    # run also counts the time spent waiting for a core, which says nothing about the work.
    start = time.thread_time()
    redactor.redact(small)
    t_small = time.thread_time() - start
    start = time.thread_time()
    result, counts = redactor.redact(big)
    t_big = time.thread_time() - start
    assert result == big and counts == {}
    assert t_big < 30 * max(t_small, 1e-4)  # ~10x the text: ~10x the time, not 100x


def test_a_posix_class_pattern_still_redacts_the_shortest_text_it_matches() -> None:
    pin = CompiledPattern("pin", compile_re2(r"\b[[:digit:]]{4}\b"), "[PIN]", None)
    redactor = Redactor((CompiledRedaction("p", (pin,), None),))
    assert redactor.redact("1234") == ("[PIN]", {"pin": 1})
