"""Secrets disguised by what an ordinary command adds to its output.

``grep --color=always`` splits a token with colour codes, ``json.dumps``/``repr`` glue
``\\n`` to it, and text may carry zero-width characters, soft hyphens, word joiners,
combining marks, NULs (UTF-16), backspace overstrikes or full-width letters. A reader
sees the token straight through each, so the redactor does too: through
``Redactor.redact`` (results, errors, audit), its stream (command output, artifacts,
jobs) and a real ``run_command`` through a Runtime. Encodings (base64, hex, URL or HTML
escapes of every character, reversal) stay out of reach, as the README says.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from runtime import Session
from runtime.shaping._unicode import clean
from runtime.shaping.redact import Redactor
from runtime.testing import runtime_from_yaml

TOKENS = {
    "github": "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5",
    "aws": "AKIA" + "QWERTYUIOPASDFGH",
    "openai": "sk-proj-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2Yz3Ab4Cd5Ef6",
    "slack": "xoxb-" + "1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "stripe": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dcAbCdEf",
}


def _join_every(token: str, sep: str) -> str:
    return sep.join(token)


def _at(token: str, k: int, insert: str) -> str:
    return token[:k] + insert + token[k:]


DISGUISES = {
    "grep colour around the prefix": lambda t: f"\x1b[01;31m\x1b[K{t[:4]}\x1b[m\x1b[K{t[4:]}",
    "grep colour in the middle": lambda t: f"{t[:6]}\x1b[01;31m\x1b[K{t[6:12]}\x1b[m\x1b[K{t[12:]}",
    "colour code after every character": lambda t: _join_every(t, "\x1b[0m"),
    "256-colour code": lambda t: _at(t, 5, "\x1b[38;5;196m"),
    "OSC hyperlink codes": lambda t: f"\x1b]8;;http://x\x07{t[:5]}\x1b]8;;\x07{t[5:]}",
    "zero-width space": lambda t: _at(t, 3, "\u200b"),
    "zero-width joiner every character": lambda t: _join_every(t, "\u200d"),
    "soft hyphen": lambda t: _at(t, 2, "\u00ad"),
    "word joiner every character": lambda t: _join_every(t, "\u2060"),
    "byte order mark": lambda t: _at(t, 4, "\ufeff"),
    "left-to-right mark": lambda t: _at(t, 6, "\u200e"),
    "combining accent": lambda t: _at(t, 5, "\u0301"),
    "variation selector": lambda t: _at(t, 7, "\ufe0f"),
    "NUL between characters (UTF-16 text)": lambda t: _join_every(t, "\x00"),
    "backspace overstrike": lambda t: _at(t, 6, "x\x08"),
    "full-width letters": lambda t: "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in t),
    "JSON newline escape before it": lambda t: '{"log": "started\\n' + t + '\\nstopped"}',
    "JSON tab escape before it": lambda t: '"a\\t' + t + '"',
    "repr of bytes": lambda t: repr(f"x\n{t}\n".encode()),
    "JSON \\u escapes of letters": lambda t: json.dumps(t).replace("A", "\\u0041").replace("_", "\\u005f"),
    "\\x escape of the first letter": lambda t: f"\\x{ord(t[0]):02x}" + t[1:],
    "escaped quote before it": lambda t: '"\\"' + t + '\\""',
}

CASES = [
    pytest.param(name, token, disguise, id=f"{family}-{name}")
    for family, token in TOKENS.items()
    for name, disguise in DISGUISES.items()
]


def _leaks(out: str, token: str) -> bool:
    """Whether ``out`` still shows the token's body, once its disguise is read through."""
    import re
    import unicodedata

    seen = re.sub(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|.\x08", "", out)
    seen = "".join(c for c in seen if unicodedata.category(c) not in ("Cf", "Mn", "Cc") or c == "\n")
    seen = unicodedata.normalize("NFKC", seen)
    seen = re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), seen)
    seen = re.sub(r"\\x([0-9a-fA-F]{2})", lambda m: chr(int(m.group(1), 16)), seen)
    return token[-12:] in seen


@pytest.mark.parametrize(("name", "token", "disguise"), CASES)
def test_a_disguised_token_is_redacted(redactor: Redactor, name: str, token: str, disguise) -> None:  # noqa: ANN001
    text = "before " + disguise(token) + " after\n"
    assert _leaks(text, token), "the case shows the token to a reader"
    out, counts = redactor.redact(text)
    assert not _leaks(out, token), (name, out)
    assert counts
    assert out.startswith("before ") and out.endswith(" after\n")


@pytest.mark.parametrize(("name", "token", "disguise"), CASES[:: len(TOKENS)])
def test_a_disguised_token_is_redacted_from_streamed_output_in_small_chunks(
    redactor: Redactor, name: str, token: str, disguise
) -> None:  # noqa: ANN001
    text = "line one\n" + disguise(token) + "\nline three\n" * 3
    stream = redactor.stream()
    out = "".join(stream.feed(text[k : k + 4096]) for k in range(0, len(text), 4096)) + stream.finish()
    assert not _leaks(out, token), (name, out)


@pytest.mark.parametrize(
    "text",
    [
        "\x1b[32mPASSED\x1b[0m tests/test_a.py::test_x",
        "print('a\\nb\\tc')",
        'json.dumps({"a": "x\\ny"})',
        "ｈｅｌｌｏ ｗｏｒｌｄ",
        "caf\u00e9 na\u0301ive",
        "a\u200bb",
        "\\u0041\\u0042\\u0043 abc",
        "\x1b[1m\x1b[31mERROR\x1b[0m: 3 failed, 12 passed in 0.52s",
        "git diff --color: \x1b[32m+def main():\x1b[m",
    ],
)
def test_disguise_characters_in_ordinary_output_change_nothing(redactor: Redactor, text: str) -> None:
    assert redactor.redact(text)[0] == text


@pytest.mark.parametrize(
    "text",
    [
        "%67%68%70%5F" + "%61" * 36,  # every character URL-encoded: an encoding
        "&#103;&#104;&#112;&#95;" + "&#97;" * 36,  # HTML character references
        TOKENS["github"][::-1],  # reversed
    ],
)
def test_encodings_stay_out_of_reach_as_the_readme_says(redactor: Redactor, text: str) -> None:
    assert redactor.redact(text)[0] == text


INCLUDE = """
apiVersion: toolrt/v1
kind: Include
metadata: {name: packs}
spec: {packs: [workspace-tools, permissions-default, redaction-default, output-default, builtin-tools]}
"""

COMMANDS = [
    "grep --color=always -e ghp_ -e AKIA -e sk-proj t.txt",
    "grep --color=always -e aB3dE -e QWERTY -e Ab1Cd t.txt",
    "python3 -c \"import json;print(json.dumps({'x': open('t.txt').read()}))\"",
    "python3 -c \"print(repr(open('t.txt').read().encode()))\"",
    "sed 's/_/_\\xe2\\x80\\x8b/; s/IA/I\\xe2\\x80\\x8bA/; s/-proj-/-pr\\xe2\\x80\\x8boj-/' t.txt",
    "iconv -f utf-8 -t utf-16le t.txt",
    "python3 -c \"[print('\\x1b[0m'.join(l.strip())) for l in open('t.txt')]\"",
    "python3 -c \"[print(''.join(chr(ord(c)+0xFEE0) if '!'<=c<='~' else c for c in s.strip()))"
    " for s in open('t.txt')]\"",
]


@pytest.mark.parametrize("command", COMMANDS)
def test_run_command_output_shows_no_token_through_a_disguise(command: str) -> None:
    text = "\n".join((TOKENS["github"], TOKENS["aws"], TOKENS["openai"])) + "\n"

    async def run() -> str:
        with runtime_from_yaml(INCLUDE, workspace_files={"t.txt": text}) as runtime:
            result = await runtime.call("run_command", {"command": command}, Session(mode="bypass"))
            assert result.status.value == "ok", result.content
            return result.content if isinstance(result.content, str) else json.dumps(result.content)

    out = asyncio.run(run())
    for name in ("github", "aws", "openai"):
        assert not _leaks(out.replace("\x00", ""), TOKENS[name]), (name, out)


def _disguised_log() -> str:
    """Clean lines, plain tokens and every disguise of every token, mixed."""
    lines = ["\x1b[32mok\x1b[0m step 1", "plain line", "path C:\\new\\table", "caf\u00e9 \u200b"]
    for n, (family, token) in enumerate(TOKENS.items()):
        lines.append(f"plain {family} {token}")
        for k, disguise in enumerate(DISGUISES.values()):
            lines.append(("\x1b[1m>\x1b[0m " if (n + k) % 3 == 0 else "") + "x " + disguise(token) + " y")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("size", [1, 3, 17, 100, 511, 512, 1000, 4096])
def test_streamed_disguised_output_is_redacted_as_the_whole_text_whatever_the_chunks(
    default_profiles,  # noqa: ANN001
    size: int,
) -> None:
    small = Redactor(default_profiles, window=512)  # chunk and window edges fall inside lines (up to 300 long)
    text = _disguised_log()
    whole = small.redact(text)
    stream = small.stream()
    got = "".join(stream.feed(text[i : i + size]) for i in range(0, len(text), size)) + stream.finish()
    assert (got, stream.counts) == whole
    for token in TOKENS.values():
        assert not _leaks(got, token)


def test_random_chunkings_of_disguised_output_give_the_whole_text_result(default_profiles) -> None:  # noqa: ANN001
    import random

    rng = random.Random(7)
    small = Redactor(default_profiles, window=512)
    text = _disguised_log()
    whole = small.redact(text)
    for _ in range(20):
        cuts = sorted(rng.sample(range(1, len(text)), 40))
        pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        stream = small.stream()
        got = "".join(stream.feed(piece) for piece in pieces) + stream.finish()
        assert (got, stream.counts) == whole


def test_a_token_the_plain_pass_finds_on_a_disguised_line_is_counted_once(redactor: Redactor) -> None:
    for token in TOKENS.values():
        text = f"\x1b[32mfound\x1b[0m {token} \u200b\n"
        out, counts = redactor.redact(text)
        assert sum(counts.values()) == 1, counts
        assert "disguised_secret" not in counts
        assert not _leaks(out, token)


@pytest.mark.parametrize("name", list(DISGUISES))
def test_a_token_hidden_only_by_its_disguise_is_counted_once_as_disguised(redactor: Redactor, name: str) -> None:
    out, counts = redactor.redact("x " + DISGUISES[name](TOKENS["github"]) + " y\n")
    assert sum(counts.values()) == 1, counts
    assert not _leaks(out, TOKENS["github"])


@pytest.mark.parametrize("surrogate", ["\ud800", "\udfff", "\udc80\udcff"], ids=["d800", "dfff", "dc80-dcff"])
def test_lone_surrogates_beside_a_disguise_raise_nothing_and_stay(redactor: Redactor, surrogate: str) -> None:
    token = TOKENS["aws"]
    for text in [
        surrogate + "\x1b[31m" + token[:4] + "\x1b[0m" + token[4:] + surrogate,
        token[:3] + "\u200b" + token[3:] + " " + surrogate,
        surrogate + "\\n" + token,
        surrogate * 3 + "\x1b[0m plain",
    ]:
        out, _ = redactor.redact(text)
        assert surrogate in out or "\ufffd" * len(surrogate) in out  # kept, or U+FFFD once re-encoded
        assert not _leaks(out.replace(surrogate, ""), token) or "plain" in text
        stream = redactor.stream()  # the stream always emits UTF-8 text: U+FFFD for each surrogate
        got = "".join(stream.feed(c) for c in text) + stream.finish()
        assert got == clean(out)


def test_disguise_characters_make_a_text_a_candidate(redactor: Redactor) -> None:
    for disguise in DISGUISES.values():
        assert redactor.has_candidate("x " + disguise(TOKENS["stripe"]) + " y")
    assert not redactor.has_candidate("a clean line of output, nothing to see")


def test_the_disguise_pass_finds_nothing_in_shipped_clean_samples(redactor: Redactor) -> None:
    """No false positive of its own: every clean sample, coloured or escaped as commands
    print it, or with invisible characters beside its spaces, is redacted exactly as the
    plain patterns alone redact it (which keep their own verdicts on such text)."""
    import redaction_corpus as corpus

    for line in corpus.negatives():
        for text in [
            f"\x1b[01;31m\x1b[K{line}\x1b[m\x1b[K",
            "\x1b[0m".join(line),
            json.dumps({"log": "a\n" + line + "\n"}),
            repr(("x\n" + line).encode()),
            line.replace(" ", " \u200b"),
            line.replace(" ", " \u00ad"),
            line.replace(" ", "\x00 "),
        ]:
            assert redactor.redact(text) == redactor._redact_plain(text), text
