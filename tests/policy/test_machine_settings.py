"""Programs people allow to read the machine's state (`date`, `hostname`) can also set it:
`date -s`, `date MMDDhhmm`, `hostname NAME`, `hostname -F FILE`. A wildcard rule such as
`date *` is written to read the clock, so setting it is guarded like a write option: a
rule must spell the option (or the operand) out, and a session grant never stretches to it.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from command_support import Place, build_snapshot, judge, make_place, validated

from runtime.policy.grants import SessionGrants
from runtime.policy.programs import SYSTEM, accesses
from runtime.records import Decision
from runtime.snapshot import Snapshot

ASKED = ("ask", "deny")
SETTERS = ("date", "hostname", "domainname", "nisdomainname", "ypdomainname")
WRAPPERS = ("env", "sudo", "command", "nice", "timeout", "time", "xargs", "bash", "sh", "echo", "cat")

Judge = Callable[..., Decision]


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Place:
    return make_place(tmp_path_factory.mktemp("settings"))


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Snapshot]:
    base = tmp_path_factory.mktemp("settings-snapshots")
    wide = tuple(f"{name} *" for name in (*SETTERS, *WRAPPERS))
    spelled = (*wide, "date -s *", "hostname -F *", "hostname -b evil")
    return {
        "wide": build_snapshot(base / "wide", wide),
        "spelled": build_snapshot(base / "spelled", spelled),
        "none": build_snapshot(base / "none", ()),
    }


@pytest.fixture(scope="module")
def decided(snapshots: dict[str, Snapshot], place: Place) -> Judge:
    def decided(line: str, *, rules: str = "wide") -> Decision:
        return judge(snapshots[rules], line, where=place.where())

    return decided


SETTING_LINES = [
    # date: -s / --set in every spelling, and an operand that is not +FORMAT
    "date -s 2020-01-01",
    "date -s '2020-01-01 00:00'",
    "date -s2020-01-01",
    "date -us 2020-01-01",
    "date -u -s 2020-01-01",
    "date -Rs 2020-01-01",
    "date --set 2020-01-01",
    "date --set=2020-01-01",
    "date --se=2020-01-01",
    "date --set='@0'",
    "date 010112002020",
    "date 0101",
    "date -u 010112002020",
    "date --utc 0101",
    "date -- 0101",
    "date +%s 0101",
    "date 0101 +%s",
    "date -d now -s 2020-01-01",
    "/bin/date -s 2020-01-01",
    "/usr/bin/date 0101",
    "./date 0101",
    # hostname and its siblings: a name operand, -F FILE, -b
    "hostname evil",
    "hostname -- evil",
    "hostname -b evil",
    "hostname -b",
    "hostname --boot evil",
    "hostname -F a.txt",
    "hostname -Fa.txt",
    "hostname --file a.txt",
    "hostname --file=a.txt",
    "hostname -bF a.txt",
    "/bin/hostname evil",
    "domainname evil",
    "nisdomainname evil",
    "ypdomainname evil",
    # the same behind wrappers, expansions and compound commands
    "env date -s 2020-01-01",
    "env TZ=UTC date 0101",
    "sudo date -s 2020-01-01",
    "sudo -u root hostname evil",
    "command date -s 2020-01-01",
    "nice -n 5 date 0101",
    "timeout 5 hostname evil",
    "time date -s 2020-01-01",
    "xargs date -s < a.txt",
    "echo 2020 | xargs date -s",
    "bash -c 'date -s 2020-01-01'",
    "sh -c 'hostname evil'",
    "date; date -s 2020-01-01",
    "date && hostname evil",
    "date || date 0101",
    "(date -s 2020-01-01)",
    "{ hostname evil; }",
    "x=-s; date $x 2020-01-01",
    "date $(echo -s) 2020-01-01",
    "date $X",
    "hostname $NAME",
    'hostname "$(cat a.txt)"',
    "for n in a b; do hostname $n; done",
    "if true; then date 0101; fi",
]


@pytest.mark.parametrize("line", SETTING_LINES)
def test_setting_the_clock_or_host_name_is_not_covered_by_a_wildcard(decided: Judge, line: str) -> None:
    decision = decided(line)
    assert decision.effect in ASKED, (line, decision.reason)


READING_LINES = [
    "date",
    "date +%s",
    "date '+%Y-%m-%d %H:%M'",
    "date -u",
    "date -u +%s",
    "date --utc +%F",
    "date -R",
    "date -I",
    "date -Iseconds",
    "date --iso-8601=seconds",
    "date --rfc-3339=ns",
    "date -d yesterday",
    "date -d @0 +%s",
    "date --date='next monday' +%F",
    "date -r a.txt",
    "date -f a.txt",
    "date --debug -d now",
    "TZ=UTC date",
    "env TZ=UTC date +%s",
    "hostname",
    "hostname -f",
    "hostname --fqdn",
    "hostname -s",
    "hostname -i",
    "hostname -I",
    "hostname -A",
    "hostname -d",
    "domainname",
    "date; hostname",
]


@pytest.mark.parametrize("line", READING_LINES)
def test_reading_the_clock_or_host_name_stays_allowed(decided: Judge, line: str) -> None:
    decision = decided(line)
    assert decision.effect == "allow", (line, decision.reason)


@pytest.mark.parametrize("line", ["date -s 2020-01-01", "hostname -F a.txt", "hostname -b evil"])
def test_a_rule_that_spells_the_option_out_covers_it(decided: Judge, line: str) -> None:
    decision = decided(line, rules="spelled")
    assert decision.effect == "allow", (line, decision.reason)


@pytest.mark.parametrize(
    "line",
    [
        "date --set=2020-01-01",  # another spelling than the rule's
        "date 0101",  # the operand form is not the option the rule spells
        "date -s 2020 0101",
        "hostname evil",
        "hostname -F .env",  # a secret file is still a secret file
        "hostname -F toolrt.d/x.yaml",  # and toolrt's own files are still off limits
    ],
)
def test_a_rule_that_spells_one_option_covers_nothing_more(decided: Judge, line: str) -> None:
    decision = decided(line, rules="spelled")
    assert decision.effect in ASKED, (line, decision.reason)


def test_the_ask_says_what_the_command_changes(decided: Judge) -> None:
    decision = decided("date -s 2020-01-01")
    assert decision.effect == "ask"
    assert "clock" in decision.reason


@pytest.mark.parametrize(
    "argv",
    [
        ["date", "-s", "x"],
        ["date", "-us", "x"],
        ["date", "--set=x"],
        ["date", "--se", "x"],
        ["date", "0101"],
        ["date", "-u", "--", "0101"],
        ["hostname", "x"],
        ["hostname", "-b"],
        ["hostname", "-F", "f"],
        ["hostname", "--file=f"],
        ["domainname", "x"],
    ],
)
def test_the_scanner_finds_the_setting(argv: list[str]) -> None:
    assert SYSTEM in {a.kind for a in accesses(argv)}


@pytest.mark.parametrize(
    "argv",
    [["date"], ["date", "+%s"], ["date", "-d", "x", "+%F"], ["date", "-r", "f"], ["hostname", "-f"], ["hostname"]],
)
def test_the_scanner_finds_no_setting_in_a_read(argv: list[str]) -> None:
    assert SYSTEM not in {a.kind for a in accesses(argv)}


@pytest.mark.parametrize(
    ("made", "later"),
    [
        ("date +%s", "date -s 2020-01-01"),
        ("date -u", "date -us 2020-01-01"),
        ("hostname -f", "hostname -F a.txt"),
        ("hostname -f", "hostname -b evil"),
    ],
)
def test_a_grant_does_not_stretch_to_setting_the_machine(snapshots: dict[str, Snapshot], made: str, later: str) -> None:
    grants = SessionGrants()
    assert grants.add("s1", validated(snapshots["none"], made)) is not None
    assert grants.covering("s1", validated(snapshots["none"], later)) is None
