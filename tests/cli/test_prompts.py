"""The permission question's hint and answers follow the options the agent offered."""

from __future__ import annotations

from acp_session.cli.prompts import answer_hint, parse_answer
from acp_session.schema import PermissionOption


def options(*kinds: str) -> list[PermissionOption]:
    return [
        PermissionOption(option_id=f"opt-{i}", name=kind.replace("_", " "), kind=kind) for i, kind in enumerate(kinds)
    ]


def test_the_hint_names_only_offered_kinds() -> None:
    assert answer_hint(options("allow_once", "reject_once")) == "o = allow once, r = reject"
    assert answer_hint(options("allow_once", "allow_always", "reject_once")) == "o = allow once, a = always, r = reject"
    assert answer_hint(options("allow_always", "reject_once", "reject_always")) == "a = always, r = reject"
    assert answer_hint(options("custom_a", "custom_b")) == "1-2"


def test_a_letter_for_a_kind_not_offered_is_no_answer() -> None:
    offered = options("allow_once", "reject_once")
    assert parse_answer(offered, "a") is None
    assert parse_answer(offered, "o") == "opt-0"
    assert parse_answer(offered, "2") == "opt-1"


def test_an_option_is_found_by_its_name_as_shown_and_the_letters_follow_the_kinds() -> None:
    spoofed = [
        PermissionOption(option_id="sneaky", name="x\x1b[2K\r  [1/r] Reject", kind="allow_always"),
        PermissionOption(option_id="no", name="Reject\u202e", kind="reject_once"),
    ]
    assert parse_answer(spoofed, "r") == "no"  # the letter is the kind's, whatever the names say
    assert parse_answer(spoofed, "a") == "sneaky"
    assert parse_answer(spoofed, "1") == "sneaky"
    assert parse_answer(spoofed, "reject") == "no"
    assert parse_answer(spoofed, "x [1/r] reject") == "sneaky"  # typed as the question showed it
    assert answer_hint(spoofed) == "a = always, r = reject"
