"""The classes of secrets the default `secrets` profile must catch wherever they appear,
and the references to secrets it must leave alone.

- private keys without their armor: body lines alone, with line numbers, grep and diff
  prefixes, CRLF, a key cut at every line, BEGIN without END, END without BEGIN, a JSON
  one-liner (escaped newlines) cut anywhere after BEGIN, PGP blocks;
- secret-looking keys: `key: value` in env, YAML, JSON, escaped JSON, INI, headers and
  code, and values under such keys in structured data, whatever they look like;
- references that only name a secret stay: ${VAR}, os.environ["X"], getpass(), null.
"""

from __future__ import annotations

import json
import random
import string

import pytest

from runtime.shaping.redact import Redactor
from runtime.snapshot import CompiledRedaction

_RNG = random.Random(1313)
B64 = string.ascii_letters + string.digits + "+/"


def b64(n: int) -> str:
    return "".join(_RNG.choice(B64) for _ in range(n))


def key_block(
    kind: str = "RSA PRIVATE KEY", body_chars: int = 1600, width: int = 64, newline: str = "\n"
) -> tuple[str, list[str]]:
    body = b64(body_chars) + "=="
    lines = [body[i : i + width] for i in range(0, len(body), width)]
    return newline.join([f"-----BEGIN {kind}-----", *lines, f"-----END {kind}-----"]), lines


def pgp_block() -> tuple[str, list[str]]:
    body = b64(1500)
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    text = "\n".join(
        [
            "-----BEGIN PGP PRIVATE KEY BLOCK-----",
            "Version: GnuPG v2",
            "Comment: Alice <alice@example.com>",
            "",
            *lines,
            "=" + b64(4),
            "-----END PGP PRIVATE KEY BLOCK-----",
        ]
    )
    return text, lines


@pytest.fixture(scope="module")
def secrets(default_profiles: tuple[CompiledRedaction, ...]) -> Redactor:
    """The `secrets` profile alone: what a tool that names no profile gets."""
    return Redactor(default_profiles[:1])


def leaked_lines(out: str, lines: list[str], min_chars: int = 16) -> list[str]:
    """Key body lines (or their first min_chars characters) still in ``out``."""
    return [line for line in lines if len(line) >= min_chars and line[:min_chars] in out]


KINDS = [
    "RSA PRIVATE KEY",
    "PRIVATE KEY",
    "EC PRIVATE KEY",
    "OPENSSH PRIVATE KEY",
    "DSA PRIVATE KEY",
    "ENCRYPTED PRIVATE KEY",
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_every_window_of_a_key_file_is_redacted_with_or_without_armor(
    secrets: Redactor, kind: str, newline: str
) -> None:
    text, lines = key_block(kind, width=70 if "OPENSSH" in kind else 64, newline=newline)
    all_lines = text.split(newline)
    for start in range(len(all_lines)):
        for size in (1, 2, 3, 7):
            window = newline.join(all_lines[start : start + size])
            out, _ = secrets.redact(window)
            assert not leaked_lines(out, lines), (start, size)


@pytest.mark.parametrize("prefix", ["{n:>6}\t", "key.pem:{n}:", "{n}:", "{n}-", "+", "-", " ", "key.pem-{n}-", "    "])
def test_key_body_lines_after_a_line_number_grep_or_diff_prefix_are_redacted(secrets: Redactor, prefix: str) -> None:
    _, lines = key_block()
    shown = "\n".join(prefix.format(n=n) + line for n, line in enumerate(lines, start=2))
    out, counts = secrets.redact(shown)
    assert not leaked_lines(out, lines)
    assert counts.get("private_key_body")


def test_a_grep_for_long_base64_lines_returns_no_key_material(secrets: Redactor) -> None:
    _, lines = key_block()
    grep_output = "\n".join(line for line in lines if len(line) >= 40)
    out, _ = secrets.redact(grep_output)
    assert not leaked_lines(out, lines)


@pytest.mark.parametrize("cut", range(40, 1700, 37))
def test_a_json_one_liner_cut_anywhere_after_begin_leaks_no_key_body(secrets: Redactor, cut: int) -> None:
    text, lines = key_block(body_chars=1600)
    one_liner = json.dumps({"type": "service_account", "private_key": text + "\n", "client_email": "x@y.iam"})
    start = one_liner.index("-----BEGIN")
    out, _ = secrets.redact(one_liner[: start + cut] + "… [line cut: 2,400 characters in all]")
    assert not leaked_lines(out, lines)


def test_a_whole_json_one_liner_keeps_the_json_valid(secrets: Redactor) -> None:
    text, lines = key_block(body_chars=600)
    one_liner = json.dumps({"private_key": text + "\n", "client_email": "x@y.iam"})
    out, _ = secrets.redact(one_liner)
    assert json.loads(out)["client_email"] == "x@y.iam"
    assert not leaked_lines(out, lines)


def test_the_end_of_a_key_without_its_begin_line_is_redacted(secrets: Redactor) -> None:
    text, lines = key_block(body_chars=1630)
    tail = "\n".join(text.split("\n")[-2:])  # the short last body line and END
    out, counts = secrets.redact(tail)
    assert lines[-1] not in out
    assert counts


@pytest.mark.parametrize("cut", [0, 40, 200, 700, 1200])
def test_pgp_private_key_blocks_are_redacted_whole_or_cut(secrets: Redactor, cut: int) -> None:
    text, lines = pgp_block()
    out, _ = secrets.redact(text[cut:])
    assert not leaked_lines(out, lines)


def test_a_cut_key_does_not_swallow_unrelated_output_up_to_a_later_end_line(secrets: Redactor) -> None:
    text, _ = key_block(body_chars=300)
    cut = text[:200]
    later = "\nbuild ok: 12 tests passed, see report.html\n" + key_block(body_chars=300)[0]
    out, _ = secrets.redact(cut + '", "next": "value"' + later)
    assert "12 tests passed" in out


BASE64_LOOK_ALIKES = [
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",  # sha256 hex on its own line
    "9fceb02d0ae598e95dc970b74767f19372d61af8",
    "/home/user/projects/src/main/java/com/example/app/Controller",
    "ThisIsAVeryLongCamelCaseIdentifierNameForTestingPurposes",
    '    "integrity": '
    '"sha512-Jv9yN6Rb8E7l3n0zKq0UcdgtdKdLxaOsKzH1dBGhvXtvJzGzKxOgE+uZtbyR6N/RZ6ONf1YcgImD3zJHnTh8Nw==",',
    "github.com/stretchr/testify v1.8.4 h1:CcVxjf3Q8PM0mHUKJCdn+eZZtm5yQwehR5yeSVQQcUk=",
    "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz",
    "0123456789012345678901234567890123456789012345",
]


@pytest.mark.parametrize("line", BASE64_LOOK_ALIKES)
def test_lines_that_only_look_like_base64_stay(secrets: Redactor, line: str) -> None:
    assert secrets.redact(line + "\n")[0] == line + "\n"


# -- secret-looking keys ---------------------------------------------------------------

ASSIGNMENTS = [
    ("PGPASSWORD={v} psql -h db", "s3cr3t-pw"),
    ("SMTP_PASS={v}", "p4ss!word"),
    ("MAIL_PASS='{v}'", "x y z"),
    ('export DB_PASSWORD="{v}"', "hunter2"),
    ("password: {v}", "correct-horse"),
    ("  password: '{v}'", "c0rrect"),
    ('{{"password": "{v}"}}', "pw"),
    ('{{"password":"{v}","user":"bob"}}', "hunter2"),
    ('{{\\"password\\": \\"{v}\\", \\"user\\": \\"bob\\"}}', "hunter2"),
    ('{{\\"client_secret\\":\\"{v}\\"}}', "abc123def"),
    ("api_key={v}", "abcd1234"),
    ("apiKey: {v}", "abcd1234"),
    ("x-api-key: {v}", "abcd1234efgh"),
    ("private_key = '{v}'", "abcdef"),
    ("clientSecret: {v}", "zzz999"),
    ("db.password={v}", "hunter2"),
    ("spring.datasource.password={v}", "hunter2"),
    ("--password={v}", "hunter2"),
    ("?token={v}&page=2", "abc123"),
    ("auth_token => '{v}'", "tok123"),
    ("credentials: {v}", "user:pass"),
    ("Authorization: Basic {v}", "dXNlcjpwYXNzd29yZA=="),
    ('secret := "{v}"', "gosecret"),
    ('PASSWORD="{v}"\r\n', "crlf-pass"),
    ("refresh_token: {v}", "rt-123456"),
]


@pytest.mark.parametrize(("template", "value"), ASSIGNMENTS, ids=[t for t, _ in ASSIGNMENTS])
def test_values_assigned_to_secret_looking_names_are_redacted_and_the_name_stays(
    secrets: Redactor, template: str, value: str
) -> None:
    text = template.format(v=value)
    out, counts = secrets.redact(text)
    assert value not in out, out
    assert counts
    name = (
        text.split("=")[0].split(":")[0].strip(" {\"\\-?'").split()[-1]
        if not text.startswith("Authorization")
        else "Authorization"
    )
    assert name in out


REFERENCES = [
    "${DB_PASSWORD}",
    "password: ${DB_PASSWORD}",
    'password: "${DB_PASSWORD}"',
    "DB_PASSWORD=$DB_PASSWORD",
    'api_key = os.environ["API_KEY"]',
    "api_key = os.getenv('API_KEY')",
    "password = getpass()",
    "password = getpass.getpass('Password: ')",
    "token = settings.API_TOKEN",
    "secret = process.env.SECRET",
    "password: null",
    '{"password": null}',
    "password = None",
    "password: ~",
    "      secretName: my-tls",
    "          secretKeyRef: {name: db, key: password}",
    "        secretKeyRef:",
    "token: ${{ secrets.GITHUB_TOKEN }}",
    "password: {{ .Values.db.password }}",
    "max_tokens=4096",
    '"prompt_tokens": 57,',
    "password: <your-password>",
    "PASSWORD=***",
    "password: '********'",
    "the password field is required",
    "password reset link sent",
    "token_type: Bearer",
    "password: [REDACTED]",
    "%DB_PASSWORD%",
    "if password == expected:",
]


@pytest.mark.parametrize("text", REFERENCES)
def test_references_to_secrets_are_kept(secrets: Redactor, text: str) -> None:
    assert secrets.redact(text) == (text, {})


# -- structured data -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "password",
        "Password",
        "PASSWORD",
        "passwd",
        "secret",
        "token",
        "api_key",
        "apikey",
        "apiKey",
        "API-KEY",
        "authorization",
        "Authorization",
        "private_key",
        "privateKey",
        "client_secret",
        "clientSecret",
        "credentials",
        "db_password",
        "smtp_pass",
        "github_token",
        "access_token",
        "webhook_secret",
        "x-api-key",
        "Cookie",
        "set-cookie",
        "session_token",
        "userPassword",
    ],
)
@pytest.mark.parametrize("value", ["pw", "a", "hunter2 with spaces", 1234, 3.5, ["x", "y"], {"inner": "v"}])
def test_values_under_secret_keys_are_redacted_whatever_they_look_like(
    secrets: Redactor, key: str, value: object
) -> None:
    data = {"user": "bob", "nested": [{key: value}]}
    out, counts = secrets.redact_value(data)
    assert out["user"] == "bob"
    assert counts.get("secret_field")
    dumped = json.dumps(out)
    for leaf in ("pw", "hunter2", "1234", "3.5", '"x"', '"v"'):
        if leaf in json.dumps(value):
            assert leaf not in dumped


@pytest.mark.parametrize(
    "key",
    [
        "username",
        "token_type",
        "max_tokens",
        "secretName",
        "secretKeyRef",
        "password_policy_url",
        "keys",
        "id",
        "passage",
    ],
)
def test_values_under_ordinary_keys_stay(secrets: Redactor, key: str) -> None:
    data = {key: "plain value 42"}
    assert secrets.redact_value(data) == (data, {})


@pytest.mark.parametrize("value", [None, True, False, "", "${DB_PASSWORD}", "<password>", "[REDACTED:x]"])
def test_null_empty_and_references_under_secret_keys_stay(secrets: Redactor, value: object) -> None:
    data = {"password": value}
    assert secrets.redact_value(data)[0] == data


def test_a_known_token_under_a_secret_key_keeps_its_own_name(secrets: Redactor) -> None:
    out, counts = secrets.redact_value({"token": "ghp_" + "a1B2" * 9})
    assert out == {"token": "[REDACTED:github_token]"}
    assert counts == {"github_token": 1}


def test_escaped_json_inside_a_string_value_is_redacted(secrets: Redactor) -> None:
    payload = json.dumps({"password": "hunter2", "user": "bob"})
    out, _ = secrets.redact_value({"body": payload, "raw": json.dumps(payload)})
    assert "hunter2" not in json.dumps(out)
    assert json.loads(out["body"])["user"] == "bob"


# -- recall of other token families -------------------------------------------------------

FAMILIES = [
    "https://hooks.slack.com/services/T0ABCDEFG/B0HIJKLMN/abcdefghijklmnopqrstuvwx",
    "https://discord.com/api/webhooks/123456789012345678/abcdefghijklmnopqrstuvwxyzABCDEF",
    "redis://:s3cretpw@cache.internal:6379/0",
    "amqp://guest:guest@rabbit:5672/",
    "mongodb+srv://admin:pa55w0rd@cluster0.example.mongodb.net/db",
    "npm_" + "a" * 18 + "B1" * 9,
    "xoxe-1-abcdefghijklmnop",
    "xapp-1-A0123456789-1234567890123-abcdef0123456789",
    "glptt-abcdefghijklmnopqrst1234",
    "ya29.a0AfH6SMBx1234567890abcdefghijklmn",
    "hvs.CAESIJlWhbHVzdGVyLWxvY2FsLXRva2VuLXNlY3JldA",
    "dckr_pat_abcdefghijklmnopqrstuvwxyz1",
    "AccountKey=" + b64(86) + "==",
    "sk-admin-abcdefghijklmnopqrstuvwxyz123456",
]


@pytest.mark.parametrize("secret", FAMILIES)
def test_other_token_families_are_redacted(secrets: Redactor, secret: str) -> None:
    out, counts = secrets.redact(f"value: x {secret} end")
    assert counts, secret
    core = secret.split("://")[-1]
    assert core[:20] not in out or "@" in secret
