"""Checksums that tell a real card number, IBAN or Chinese resident ID from a look-alike.

A redaction pattern such as "13 to 19 digits" also matches order ids, timestamps and
counters. A pattern with a ``validator`` only redacts candidates whose check digits
are right, so about 9 in 10 ordinary numbers survive the Luhn check, and nearly every
ordinary number survives the IBAN (mod 97) and resident-ID (mod 11 + birth date) checks.

Every function ignores spaces and dashes (how people write these numbers), takes the
matched text, and returns a bool; none raises.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable

from runtime.shaping.compiled import Validator
from runtime.shaping.secret_checks import assigned_secret, key_body, phone_digits

_SEPARATORS = str.maketrans("", "", " -\t\u00a0")


def _compact(text: str) -> str:
    return text.translate(_SEPARATORS)


# Luhn doubles every second digit from the right and subtracts 9 when the result is
# above 9 (0123456789 -> 0246813579). As a byte translation table it runs in C.
_LUHN_DOUBLED = bytes.maketrans(b"0123456789", b"0246813579")


def luhn(digits: str) -> bool:
    """True when ``digits`` (spaces and dashes ignored) pass the Luhn mod-10 check.

    Used by payment card numbers (ISO/IEC 7812). At least two digits are required:
    a single ``0`` passing the check says nothing.
    """
    number = digits if digits.isdigit() else _compact(digits)
    if len(number) < 2 or not number.isascii() or not number.isdigit() or not number.strip("0"):
        return False  # all zeros pass the arithmetic but are never a card number
    # Called for every card-shaped candidate in the output (order ids, timestamps), so
    # it is a few C-level passes over bytes instead of a Python loop per digit: the
    # sum of ASCII codes minus 48 per digit is the sum of the digits.
    data = number.encode("ascii")
    total = sum(data[-1::-2]) + sum(data[-2::-2].translate(_LUHN_DOUBLED)) - 48 * len(data)
    return total % 10 == 0


# ISO 13616 IBAN lengths by country (SWIFT IBAN registry). A wrong length for a known
# country is rejected; unknown country codes are accepted on the checksum alone, so
# that a country added to the registry later is still redacted.
_IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BI": 27,
    "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27, "DK": 18, "DO": 28,
    "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23,
    "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27,
    "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25,
    "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20, "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18,
    "NO": 15, "OM": 23, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33,
    "SA": 24, "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25, "SV": 28,
    "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
}  # fmt: skip


def iban(text: str) -> bool:
    """True when ``text`` (spaces and dashes ignored, any case) is a valid IBAN.

    Checks the shape (2 letters, 2 check digits, up to 30 letters/digits), the
    length for the country when it is known, and the ISO 7064 mod-97 checksum.
    """
    value = _compact(text).upper()
    if not 15 <= len(value) <= 34 or not value.isascii() or not value.isalnum():
        return False
    country, check = value[:2], value[2:4]
    if not country.isalpha() or not check.isdigit():
        return False
    expected = _IBAN_LENGTHS.get(country)
    if expected is not None and len(value) != expected:
        return False
    rearranged = value[4:] + value[:4]
    # Letters count as two digits (A=10 ... Z=35); int(char, 36) does exactly that.
    remainder = 0
    for char in rearranged:
        digit = int(char, 36)
        remainder = (remainder * (100 if digit > 9 else 10) + digit) % 97
    return remainder == 1


_CN_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_CN_CHECK = "10X98765432"


def cn_resident_id(text: str) -> bool:
    """True when ``text`` is a valid 18-character PRC resident identity number (GB 11643).

    Checks the ISO 7064 mod 11-2 check character (``X`` for 10, either case) and that
    characters 7-14 are a real birth date (1800-01-01 or later, not in the far
    future): real IDs always have one, and it rejects most 18-digit counters that
    happen to pass the checksum.
    """
    value = _compact(text).upper()
    if len(value) != 18 or not value.isascii() or not value[:17].isdigit() or value[17] not in _CN_CHECK:
        return False
    total = sum(int(char) * weight for char, weight in zip(value[:17], _CN_WEIGHTS, strict=True))
    if _CN_CHECK[total % 11] != value[17]:
        return False
    try:
        born = _dt.date(int(value[6:10]), int(value[10:12]), int(value[12:14]))
    except ValueError:
        return False
    return _dt.date(1800, 1, 1) <= born <= _dt.date.today() + _dt.timedelta(days=366)


VALIDATORS: dict[Validator, Callable[[str], bool]] = {
    Validator.luhn: luhn,
    Validator.iban: iban,
    Validator.cn_resident_id: cn_resident_id,
    Validator.assigned_secret: assigned_secret,
    Validator.key_body: key_body,
    Validator.phone_digits: phone_digits,
}
"""Each config :class:`~runtime.config.models.Validator` and its function."""
