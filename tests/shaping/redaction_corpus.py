"""A corpus for the shipped `secrets` profile: secrets in many families and contexts
(positives) and text that must come out unchanged (negatives, many of them look-alikes).

Run as a script to print the measured recall and false-positive rate (the README quotes
them): ``python tests/shaping/redaction_corpus.py``.
"""

from __future__ import annotations

import json
import random
import string
import sys
from pathlib import Path

_RNG = random.Random(2026)
AL = string.ascii_letters + string.digits
B64 = AL + "+/"
HEX = "0123456789abcdef"


def tok(n: int, alphabet: str = AL) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


def _families() -> list[str]:
    """One freshly generated secret per call of each family."""
    return [
        "AKIA" + tok(16, string.ascii_uppercase + string.digits),
        "ASIA" + tok(16, string.ascii_uppercase + string.digits),
        "ghp_" + tok(36),
        "gho_" + tok(36),
        "ghs_" + tok(36),
        "github_pat_11" + tok(20) + "_" + tok(59),
        "glpat-" + tok(20),
        "glptt-" + tok(24),
        "xoxb-" + tok(12, string.digits) + "-" + tok(13, string.digits) + "-" + tok(24),
        "xoxp-" + tok(12, string.digits) + "-" + tok(24),
        "https://hooks.slack.com/services/T"
        + tok(8, string.ascii_uppercase)
        + "/B"
        + tok(8, string.ascii_uppercase)
        + "/"
        + tok(24),
        "https://discord.com/api/webhooks/" + tok(18, string.digits) + "/" + tok(68, AL + "_-"),
        "sk_live_" + tok(24),
        "rk_live_" + tok(24),
        "sk_test_" + tok(24),
        "AIza" + tok(35, AL + "_-"),
        "ya29." + tok(80, AL + "_-"),
        "sk-ant-api03-" + tok(90, AL + "_-"),
        "sk-proj-" + tok(48),
        "sk-" + tok(48),
        "npm_" + tok(36),
        "pypi-AgEIcHlwaS5vcmc" + tok(70, AL + "_-"),
        "SG." + tok(22, AL + "_-") + "." + tok(43, AL + "_-"),
        "hf_" + tok(34),
        "shpat_" + tok(32, HEX),
        "hvs." + tok(90, AL + "_-"),
        "dop_v1_" + tok(64, HEX),
        "dckr_pat_" + tok(27, AL + "_-"),
        "gsk_" + tok(52),
        "r8_" + tok(37),
        "AGE-SECRET-KEY-1" + tok(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"),
        "eyJ" + tok(30, AL + "_-") + ".eyJ" + tok(40, AL + "_-") + "." + tok(43, AL + "_-"),
        "postgres://app:" + tok(16) + "@db.internal:5432/app",
        "redis://:" + tok(20) + "@cache:6379/0",
        "mongodb+srv://admin:" + tok(12) + "@cluster0.example.net/db",
    ]


def _assignments() -> list[str]:
    value = tok(14, AL + "!@#%^*")
    return [
        f"password={value}",
        f"PASSWORD: {value}",
        f"DB_PASSWORD={value}",
        f"PGPASSWORD={value}",
        f"SMTP_PASS={value}",
        f"export MYSQL_PWD='{value}'",
        f'"password": "{value}"',
        f'{{\\"client_secret\\": \\"{value}\\"}}',
        f"api_key = '{value}'",
        f"apiKey: {value}",
        f"X-Api-Key: {value}",
        f"secret_key={value}",
        f"token: {value}",
        f"auth_token => '{value}'",
        f"spring.datasource.password={value}",
        f"Authorization: Basic {tok(24, B64)}=",
        f"--password={value}",
        f"?access_token={value}&v=2",
        f'credentials = "{value}"',
        f"private_key: '{value}'",
    ]


def _key_material() -> list[str]:
    body = tok(1600, B64)
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    pem = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END RSA PRIVATE KEY-----"
    return [
        pem,
        pem[: len(pem) // 2],  # BEGIN without END
        "\n".join(lines[3:9]),  # a window inside the key
        "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines[5:12], start=6)),  # file_read numbering
        "\n".join(f"key.pem:{n}:{line}" for n, line in enumerate(lines[:6], start=2)),  # grep -n
        json.dumps({"private_key": pem + "\n"}),
        json.dumps({"private_key": pem})[:700],  # a JSON one-liner cut at a line limit
    ]


def positives() -> list[tuple[str, str]]:
    """(text, the secret part that must not survive) pairs."""
    contexts = [
        "{}",
        "value {} end",
        "export TOKEN_VALUE={}",
        '{{"data": "{}"}}',
        "  - {}\r\n",
        "log: got {}; retrying",
    ]
    out: list[tuple[str, str]] = []
    for _ in range(4):
        for secret in _families():
            for context in contexts:
                out.append((context.format(secret), secret))
    for _ in range(10):
        for text in _assignments():
            value = (
                text.split("=", 1)[-1] if "=" in text and ":" not in text.split("=", 1)[0] else text.split(":", 1)[-1]
            )
            secret = value.strip(" '\"\\{}>").split("&")[0].replace("Basic ", "").strip("\\\"'")
            out.append((text, secret))
    for _ in range(5):
        for text in _key_material():
            lines = [line for line in text.replace("\\n", "\n").split("\n") if len(line) >= 40 and "-----" not in line]
            for line in lines:
                out.append((text, line[-40:]))
    return out


NEGATIVES_FIXED = [
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 (HEAD -> main)",
    "9fceb02d0ae598e95dc970b74767f19372d61af8",
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  dist/app.tar.gz",
    "request 123e4567-e89b-12d3-a456-426614174000 done",
    "trace_id=4bf92f3577b34da6a3ce929d0e0e4736",
    "2024-05-01T12:34:56.789Z INFO started in 1.5s",
    "version 1.2.3-beta.1+build.5",
    "price +5.00, offset +3600000 ms",
    '    "integrity": '
    '"sha512-Jv9yN6Rb8E7l3n0zKq0UcdgtdKdLxaOsKzH1dBGhvXtvJzGzKxOgE+uZtbyR6N/RZ6ONf1YcgImD3zJHnTh8Nw==",',
    "github.com/stretchr/testify v1.8.4 h1:CcVxjf3Q8PM0mHUKJCdn+eZZtm5yQwehR5yeSVQQcUk=",
    "password: ${DB_PASSWORD}",
    "${DB_PASSWORD}",
    'api_key = os.environ["API_KEY"]',
    "password = getpass()",
    "password: null",
    "      secretName: my-tls",
    "          secretKeyRef: {name: db, key: password}",
    "token: ${{ secrets.GITHUB_TOKEN }}",
    "max_tokens=4096",
    '"prompt_tokens": 57,',
    "password: <your-password>",
    "PASSWORD=***",
    "the password field is required",
    "password reset link sent",
    "token_type: Bearer",
    "if password == expected:",
    "token = settings.API_TOKEN",
    "secret = process.env.SECRET",
    "password: {{ .Values.db.password }}",
    "%DB_PASSWORD%",
    "DB_PASSWORD=$DB_PASSWORD",
    "-----BEGIN CERTIFICATE-----",
    "-----BEGIN PUBLIC KEY-----",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIH0cwHkqKmSe8Dr0u5zH alice@host",
    "git clone git@github.com:org/repo.git",
    "https://github.com/org/repo/blob/main/README.md",
    "pk_live is the prefix of a publishable key",
    "use Bearer auth (see docs)",
    "x-github-token-header and ghp_short",
    "AKIAIOSFODNN7EXAMPLEX is 21 characters",
    "/home/user/projects/src/main/java/com/example/app/Controller",
    "ThisIsAVeryLongCamelCaseIdentifierNameForTestingPurposes",
]


def negatives() -> list[str]:
    """Ordinary output and look-alikes: each must come out unchanged."""
    rng = random.Random(7)
    out = list(NEGATIVES_FIXED)
    words = [
        "build",
        "test",
        "passed",
        "failed",
        "module",
        "import",
        "return",
        "value",
        "config",
        "server",
        "request",
        "tokenizer",
        "secretary",
        "password_policy",
        "passage",
        "compass",
    ]
    for i in range(400):
        kind = i % 8
        if kind == 0:
            out.append(
                f"2024-05-{rng.randint(1, 28):02d}T10:{rng.randint(0, 59):02d}:00Z INFO "
                f"{' '.join(rng.choices(words, k=6))} in {rng.randint(1, 999)} ms"
            )
        elif kind == 1:
            out.append(f"{''.join(rng.choices(HEX, k=40))}")
        elif kind == 2:
            out.append(f"def {'_'.join(rng.choices(words, k=3))}(self, value: int) -> str:")
        elif kind == 3:
            out.append(f'  File "/srv/app/{rng.choice(words)}.py", line {rng.randint(1, 900)}, in {rng.choice(words)}')
        elif kind == 4:
            out.append(
                f"{rng.choice(words)}_id={rng.randint(1, 10**9)} user=u{rng.randint(1, 9999)} took={rng.random():.3f}s"
            )
        elif kind == 5:
            out.append(f"SELECT * FROM {rng.choice(words)} WHERE id = {rng.randint(1, 99999)} AND status = 'ok';")
        elif kind == 6:
            out.append(
                f"https://example.com/{rng.choice(words)}/{rng.randint(1, 999)}?page={rng.randint(1, 9)}&sort=asc"
            )
        else:
            out.append(f"{rng.choice(words)}: {rng.choice(words)}  # {' '.join(rng.choices(words, k=4))}")
    return out


def measure(redactor) -> dict[str, float]:  # noqa: ANN001 - a runtime.shaping.redact.Redactor
    pos = positives()
    caught = sum(1 for text, secret in pos if secret not in redactor.redact(text)[0])
    neg = negatives()
    false = [text for text in neg if redactor.redact(text)[1]]
    return {
        "positives": len(pos),
        "recall": caught / len(pos),
        "negatives": len(neg),
        "false_positive_rate": len(false) / len(neg),
        "false_positives": false,
    }  # type: ignore[dict-item]


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from runtime import load_snapshot
    from runtime.shaping.redact import Redactor

    snapshot = load_snapshot([Path(__file__).resolve().parents[2] / "policies"])
    figures = measure(Redactor((snapshot.redaction_profiles["secrets"],)))
    print(
        f"positives {figures['positives']}, recall {figures['recall']:.2%}; negatives {figures['negatives']}, false "
        f"positives {figures['false_positive_rate']:.2%}"
    )
    for text in figures["false_positives"]:  # type: ignore[union-attr]
        print("  false positive:", text)
