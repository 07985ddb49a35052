"""Checksum validators: real-looking valid numbers pass, look-alikes fail, separators are ignored."""

from __future__ import annotations

import pytest

from runtime.config.models import Validator
from runtime.shaping.validators import VALIDATORS, cn_resident_id, iban, luhn

# Published test card numbers (Visa, Mastercard, Amex, Discover, JCB) and the
# textbook Luhn example.
VALID_CARDS = [
    "4111111111111111",
    "4012888888881881",
    "5500000000000004",
    "5555555555554444",
    "378282246310005",
    "6011111111111117",
    "3530111333300000",
    "79927398713",
]


@pytest.mark.parametrize("number", VALID_CARDS)
def test_luhn_accepts_valid_card_numbers(number: str) -> None:
    assert luhn(number)


@pytest.mark.parametrize(
    "number", ["4111 1111 1111 1111", "4111-1111-1111-1111", "3782 822463 10005", " 4111111111111111 "]
)
def test_luhn_ignores_spaces_and_dashes(number: str) -> None:
    assert luhn(number)


@pytest.mark.parametrize(
    "number",
    [
        "4111111111111112",  # last digit off by one
        "4111111111111121",  # two digits swapped (Luhn catches adjacent transpositions)
        "1234567890123456",  # an ordinary counter
        "1234567812345678",
        "4000123456789010",  # an order id
        "20240501123456",  # a compact timestamp
        "79927398710",
    ],
)
def test_luhn_rejects_numbers_with_a_wrong_check_digit(number: str) -> None:
    assert not luhn(number)


@pytest.mark.parametrize(
    "text", ["", "0", "7", "4111a11111111111", "４１１１１１１１１１１１１１１１", "--", "4111_1111_1111_1111"]
)
def test_luhn_rejects_non_digits_and_too_short_input(text: str) -> None:
    assert not luhn(text)


def test_luhn_detects_every_single_digit_error() -> None:
    base = "4111111111111111"
    for index in range(len(base)):
        for digit in "0123456789":
            if digit == base[index]:
                continue
            assert not luhn(base[:index] + digit + base[index + 1 :]), (index, digit)


VALID_IBANS = [
    "GB82 WEST 1234 5698 7654 32",
    "DE89 3704 0044 0532 0130 00",
    "FR14 2004 1010 0505 0001 3M02 606",
    "NL91ABNA0417164300",
    "CH9300762011623852957",
    "BE68539007547034",
    "NO9386011117947",
]


@pytest.mark.parametrize("value", VALID_IBANS)
def test_iban_accepts_valid_ibans(value: str) -> None:
    assert iban(value)


def test_iban_ignores_case_spaces_and_dashes() -> None:
    assert iban("gb82 west 1234 5698 7654 32")
    assert iban("GB82-WEST-1234-5698-7654-32")


@pytest.mark.parametrize(
    "value",
    [
        "GB82 WEST 1234 5698 7654 33",  # wrong checksum
        "GB28 WEST 1234 5698 7654 32",  # check digits swapped
        "GB82 WEST 1234 5698 7654",  # wrong length for GB
        "DE89 3704 0044 0532 0130 0000",  # too long for DE
        "1282 WEST 1234 5698 7654 32",  # country is not letters
        "GBXX WEST 1234 5698 7654 32",  # check digits are not digits
        "GB82 WEST 1234 5698 7654 3!",
        "AB12 CDEF GHIJ KLMN",
        "",
    ],
)
def test_iban_rejects_look_alikes(value: str) -> None:
    assert not iban(value)


def test_iban_of_an_unlisted_country_is_checked_by_checksum_alone() -> None:
    # "ZZ" is not in the registry: a valid mod-97 checksum is enough.
    body = "123456789012345"
    check = 98 - int("".join(str(int(c, 36)) for c in body + "ZZ00")) % 97
    assert iban(f"ZZ{check:02d}{body}")
    assert not iban(f"ZZ{(check + 1) % 100:02d}{body}")


VALID_CN_IDS = [
    "11010519491231002X",  # the GB 11643 sample, check character X
    "11010519491231002x",  # lower-case x
    "440524188001010014",
    "440305199211304524",
    "31010419850612081X",
]


@pytest.mark.parametrize("value", VALID_CN_IDS)
def test_cn_resident_id_accepts_valid_ids(value: str) -> None:
    assert cn_resident_id(value)


@pytest.mark.parametrize(
    "value",
    [
        "110105194912310021",  # wrong check character
        "11010519491231002Y",
        "440305199213304529",  # month 13
        "202405011234567890",  # an 18-digit order id
        "11010519491231002",  # 17 characters
        "1101051949123100211",  # 19 characters
        "X10105194912310021",
        "",
    ],
)
def test_cn_resident_id_rejects_look_alikes(value: str) -> None:
    assert not cn_resident_id(value)


def test_cn_resident_id_with_a_valid_checksum_but_impossible_birth_date_is_rejected() -> None:
    weights = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    body = "44030519921330452"  # 1992-13-30
    check = "10X98765432"[sum(int(c) * w for c, w in zip(body, weights, strict=True)) % 11]
    assert not cn_resident_id(body + check)
    body = "11010820000229123"  # 2000-02-29: a leap day, valid
    check = "10X98765432"[sum(int(c) * w for c, w in zip(body, weights, strict=True)) % 11]
    assert cn_resident_id(body + check)


def test_cn_resident_id_ignores_spaces() -> None:
    assert cn_resident_id("110105 19491231 002X")


def test_every_config_validator_has_a_function() -> None:
    assert set(VALIDATORS) == set(Validator)
