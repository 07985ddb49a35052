"""Secrets, personal data and their look-alikes, shared by the redaction tests and benchmark.

Every value is fake but shaped like the real thing. Generated strings (tokens of an
exact length) are built from a fixed seed so failures are reproducible.
"""

from __future__ import annotations

import random
import string

_RNG = random.Random(20240501)
_ALNUM = string.ascii_letters + string.digits


def _token(length: int, alphabet: str = _ALNUM) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(length))


def pem_key(body_chars: int = 3200, kind: str = "RSA PRIVATE KEY") -> str:
    """A PEM block whose base64 body is ``body_chars`` long, in 64-character lines."""
    body = _token(body_chars, _ALNUM + "+/")
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return f"-----BEGIN {kind}-----\n" + "\n".join(lines) + f"\n-----END {kind}-----"


# (pattern name, the text around it, the exact part that must disappear)
SECRETS: list[tuple[str, str, str]] = [
    ("pem_private_key", "key:\n{}\nend", pem_key(200)),
    ("pem_private_key", "{}", pem_key(300, "OPENSSH PRIVATE KEY")),
    ("pem_private_key", "{}", pem_key(120, "PRIVATE KEY")),
    ("pem_private_key", "{}", pem_key(120, "EC PRIVATE KEY")),
    ("aws_access_key", "export AWS_ACCESS_KEY_ID={}", "AKIAIOSFODNN7EXAMPLE"),
    ("aws_access_key", "sts creds {} ok", "ASIAY34FZKBOKMUTVV7A"),
    ("aws_secret_key", "{}\n", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("aws_secret_key", "{}\n", 'AWS_SECRET_ACCESS_KEY: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'),
    ("github_token", "token {} used", "ghp_" + _token(36)),
    ("github_token", "token {} used", "gho_" + _token(36)),
    ("github_token", "token {} used", "ghs_" + _token(40)),
    ("github_token", "token {} used", "github_pat_11" + _token(20) + "_" + _token(59)),
    ("gitlab_token", "PRIVATE-TOKEN: {}", "glpat-" + _token(20)),
    ("slack_token", "slack {}", "xoxb-123456789012-1234567890123-" + _token(24)),
    ("stripe_key", "stripe key '{}'", "sk_live_" + _token(24)),
    ("stripe_key", "{}", "rk_test_" + _token(24)),
    ("google_api_key", "?key={}&q=1", "AIza" + _token(35, _ALNUM + "_-")),
    ("anthropic_key", "ANTHROPIC_API_KEY={}", "sk-ant-api03-" + _token(80, _ALNUM + "_-")),
    ("openai_key", "OPENAI_API_KEY={}", "sk-proj-" + _token(48)),
    ("openai_key", "key {} end", "sk-" + _token(48)),
    (
        "jwt",
        "session={}; Path=/",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    ),
    ("bearer_token", "Authorization: {}\n", "Bearer " + _token(40)),
    ("bearer_token", "authorization: {}\n", "bearer " + _token(24) + "=="),
    ("url_password", "DATABASE_URL={}db.internal:5432/app", "postgres://admin:s3cr3t-P4ss@"),
    ("url_password", "git clone {}github.com/org/repo.git", "https://oauth2:tok3n@"),
    ("secret_assignment", "password={} retrying", "hunter2xyz"),
    ("secret_assignment", 'PASSWORD: "{}\n', "correct-horse-battery"),
    ("secret_assignment", "config api_key={}", "abcd1234efgh"),
    ("secret_assignment", "PGPASSWORD={} psql -h db", "s3cr3t"),
    ("secret_assignment", "SMTP_PASS={}\n", "abc123!"),
    ("secret_assignment", '{{"password": "{}"}}', "pw"),
    ("secret_assignment", '{{\\"client_secret\\": \\"{}\\"}}', "abc"),
    (
        "pem_private_key",
        '{{"key": "{}", "x": 1}}',
        "-----BEGIN RSA PRIVATE KEY-----\\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi6Z2kcQ5WNk8WG4v7Ub3q1jQ8d",
    ),
    ("pem_private_key", "{}", pem_key(400, "PGP PRIVATE KEY BLOCK")),
    ("pem_private_key_end", "tail:\n{}\n", "Gx1wQ==\n-----END RSA PRIVATE KEY-----"),
    ("private_key_body", "{}\n", "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi6Z2kcQ5WNk8WG4v7Ub3q1jQ8d"),
    ("private_key_body", "{}\n", "key.pem:12:MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi6Z2kcQ5WNk8WG4v7Ub3q1jQ8d"),
    ("webhook_url", "post to {} now", "https://hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/" + _token(24)),
    ("google_oauth_token", "token {} ok", "ya29." + _token(60, _ALNUM + "_-")),
    ("saas_token", "NPM_TOKEN {}", "npm_" + _token(36)),
    ("saas_token", "pypi {}", "pypi-AgEIcHlwaS5vcmc" + _token(60, _ALNUM + "_-")),
    (
        "azure_storage_key",
        "DefaultEndpointsProtocol=https;AccountName=x;{};EndpointSuffix=core.windows.net",
        "AccountKey=" + _token(86, _ALNUM + "+/") + "==",
    ),
    ("cookie_header", "Cookie: {}\n", "session=" + _token(24) + "; theme=dark"),
]

PII: list[tuple[str, str, str]] = [
    ("email", "contact {} today", "alice.smith+tag@example.co.uk"),
    ("email", "<{}>", "BOB_99@mail.example.com"),
    ("card_number", "card {} exp 12/29", "4111 1111 1111 1111"),
    ("card_number", "card {}.", "5500-0000-0000-0004"),
    ("card_number", "amex {}", "378282246310005"),
    ("iban", "pay to {} now", "GB82 WEST 1234 5698 7654 32"),
    ("iban", "iban={};", "DE89370400440532013000"),
    ("cn_resident_id", "身份证 {} 已验证", "11010519491231002X"),
    # All digits, valid resident ID, fails Luhn: the card pattern sees it first and
    # rejects it; the resident-ID pattern must still get its turn at that position.
    ("cn_resident_id", "id {} ok", "440305199211304524"),
    ("cn_mobile", "手机 {} 联系", "13812345678"),
    ("phone_international", "call {} now", "+1 415 555 2671"),
    ("phone_international", "tel: {}", "+44 20 7946 0958"),
    ("phone_international", "appelez le {} svp", "+33 6 12 34 56 78"),
    ("phone_international", "ligue {} agora", "+55 11 91234-5678"),
    ("cn_mobile", "手机 {} 联系", "138 1234 5678"),
    ("cn_mobile", "手机 {} 联系", "138-1234-5678"),
]

# Text that looks a bit like the above and must come out unchanged.
LOOK_ALIKES: list[str] = [
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 (HEAD -> main)",
    "merge 3f2a9c1e7b4d5a6f8e9d0c1b2a3f4e5d6c7b8a90",
    "request 123e4567-e89b-12d3-a456-426614174000 done",
    "trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id=00f067aa0ba902b7",
    "upgraded to v1.2.3-beta.1+build.5 from 10.20.30",
    "2024-05-01T12:34:56.789Z INFO started in 1.5s",
    "2024-05-01 12:34:56,789 WARN slow query (1234 ms)",
    "ts=1714567890123 epoch_s=1714567890",
    "order 1234567890123456 shipped",  # 16 digits, fails Luhn
    "invoice 4000123456789010 paid",  # 16 digits, fails Luhn
    "batch 20240501123456 done",  # 14 digits, fails Luhn
    "order id ORD-2024-000123-XYZ",
    "ticket #4111111111111112",  # a card number with a wrong check digit
    "account GB82 WEST 1234 5698 7654 33",  # IBAN with a wrong checksum
    "serial 202405011234567890 (18 digits, not an ID)",
    "phone 12345678901 (not a mobile prefix)",
    "value 138123456789 (12 digits)",
    "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    "AKIAIOSFODNN7EXAMPLEX is 21 characters",
    "the password field is required",
    "password reset link sent",
    "see https://example.com/docs/path?x=1 and https://github.com/org/repo.git",
    "task-manager-abcdefghijklmnopqrstuvwxyz disk-usage",
    "eyJhbGciOiJIUzI1NiJ9 is only a JWT header",
    "use Bearer auth (see docs)",
    "pk_live is the prefix of a publishable key",
    "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "x-github-token-header and ghp_short",
    "price +5.00 and offset +3600000 ms",
    "git clone git@github.com:org/repo.git",  # an SSH remote, not an address (kept by `ssh_remote`)
    "http://user@host.example.com/ has no password",  # URL user info (kept by `url_user_without_password`)
]

# Secrets the shipped patterns miss (gaps to close in policies/redaction-default.yaml).
KNOWN_MISSES: list[tuple[str, str]] = []

# References to secrets that are not secrets: must stay as they are.
REFERENCES: list[str] = [
    "password: ${DB_PASSWORD}",
    "${DB_PASSWORD}",
    'api_key = os.environ["API_KEY"]',
    "password = getpass()",
    "password = getpass.getpass('Password: ')",
    "password: null",
    '{"password": null}',
    "      secretName: my-tls",
    "          secretKeyRef: {name: db, key: password}",
    "token: ${{ secrets.GITHUB_TOKEN }}",
    "max_tokens=4096",
    "password: <your-password>",
    "PASSWORD=***",
    "token = settings.API_TOKEN",
    "secret = process.env.SECRET",
]

# Once gaps, now closed: prefixed names and the all-zero "card".
PREFIXED_ASSIGNMENTS = ["DB_PASSWORD=hunter2xyz", "SECRET_KEY=django-insecure-abc123", "export SMTP_PASSWD='s3cr3t!!'"]
ALL_ZERO_CARD = "null card 0000 0000 0000 0000"
