"""``PermissionPolicy`` (issue 38): permission requests answered by rules of tool kind and path, in the library.

The rules are checked on their own (parse, glob matching, order) and against the reference agent's
``/permission`` scenario over a real pipe: what the agent did with the answer, what the handler was still asked,
and what the ``on_decision`` listener heard.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from acp_session import ClientBuilder, PermissionDecision, PermissionPolicy, PermissionRule, ToolFacts
from acp_session.schema import (
    PermissionOption,
    RequestPermissionRequest,
    ToolCallLocation,
    ToolCallPermissionSubject,
    ToolCallUpdate,
)

AGENT = [sys.executable, "-m", "acp_conformance.agent"]
OPTIONS = [
    PermissionOption(option_id="ok", name="Allow once", kind="allow_once"),
    PermissionOption(option_id="always", name="Always", kind="allow_always"),
    PermissionOption(option_id="no", name="Reject", kind="reject_once"),
]


def request(
    kind: str | None = None, *paths: str, options: list[PermissionOption] = OPTIONS
) -> RequestPermissionRequest:
    """A request whose subject names the tool call's kind and paths (None, none: only its id)."""
    fields: dict[str, Any] = {}
    if kind is not None:
        fields["kind"] = kind
    if paths:
        fields["locations"] = [ToolCallLocation(path=path) for path in paths]
    call = ToolCallUpdate(tool_call_id="tc-1", **fields)
    return RequestPermissionRequest(
        session_id="s", title="t", options=options, subject=ToolCallPermissionSubject(tool_call=call)
    )


def test_presets_decide_by_kind() -> None:
    assert PermissionPolicy.approve_all().decide(request("execute")).option_id == "ok"  # once, not always
    assert PermissionPolicy.deny_all().decide(request("read")).option_id == "no"
    reads = PermissionPolicy.approve_reads()
    assert reads.decide(request("read")).action == "allow"
    assert reads.decide(request("search")).action == "allow"
    for kind in ("edit", "execute", "delete", None):
        decision = reads.decide(request(kind))
        assert (decision.action, decision.option_id, decision.reason) == ("ask", None, "approve-reads")


def test_a_decision_without_the_option_kind_it_needs_picks_none() -> None:
    only_allow = [PermissionOption(option_id="ok", name="Allow", kind="allow_once")]
    decision = PermissionPolicy.deny_all().decide(request("edit", options=only_allow))
    assert (decision.action, decision.option_id) == ("deny", None)  # sent as the cancelled outcome


def test_rules_match_kind_and_every_path_under_the_root(tmp_path: Path) -> None:
    root = str(tmp_path)
    policy = PermissionPolicy.ask().with_rules(PermissionRule.parse("allow", "edit:src/**")).with_root(root)
    inside = os.path.join(root, "src", "pkg", "app.py")
    assert policy.decide(request("edit", inside)).reason == "rule allow edit:src/**"
    assert policy.decide(request("edit", os.path.join(root, "src"))).action == "ask"  # src itself is not under it
    assert policy.decide(request("edit", inside, os.path.join(root, "README.md"))).action == "ask"  # every path
    assert policy.decide(request("read", inside)).action == "ask"  # another kind
    assert policy.decide(request("edit")).action == "ask"  # no path: a path rule says nothing
    outside = os.path.join(os.path.dirname(root), "src", "x.py")
    assert policy.decide(request("edit", outside)).action == "ask"


def test_single_star_stays_in_one_folder_and_the_first_rule_wins(tmp_path: Path) -> None:
    root = str(tmp_path)
    policy = PermissionPolicy.approve_all().with_root(root)
    policy = policy.with_rules(PermissionRule.parse("deny", "*:secret/*"), PermissionRule.parse("allow", "*:secret/ok"))
    assert policy.decide(request("read", f"{root}/secret/ok")).action == "deny"  # the deny came first
    assert policy.decide(request("read", f"{root}/secret/a/b")).reason == "approve-all"  # * is one name only
    assert str(policy.rules[0]) == "deny *:secret/*"


@pytest.mark.parametrize("text", ["bogus", "edit:", "run:src/**"])
def test_a_bad_rule_is_a_value_error_naming_it(text: str) -> None:
    with pytest.raises(ValueError, match=r"unknown tool kind|empty path"):
        PermissionRule.parse("allow", text)


def test_facts_named_earlier_fill_in_what_the_request_leaves_out() -> None:
    known = ToolFacts("tc-1", "edit", ("/w/src/a.py",))
    policy = PermissionPolicy.ask().with_rules(PermissionRule("allow", "edit", "src/*")).with_root("/w")
    assert policy.decide(request(), known).action == "allow"


def answering(asked: list[str], option_id: str) -> Callable[[RequestPermissionRequest], str]:
    """A handler that notes each question's title and answers ``option_id``."""

    def answer(request: RequestPermissionRequest) -> str:
        asked.append(request.title)
        return option_id

    return answer


async def _run(tmp_path: Path, builder: ClientBuilder, prompt: str) -> str:
    async with builder.spawn(AGENT) as client:
        conversation = await client.start_conversation(str(tmp_path))
        response = await conversation.chat_to_completion(prompt, timeout=30)
        return response.text


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("policy", "allowed"), [(PermissionPolicy.approve_all(), True), (PermissionPolicy.deny_all(), False)]
)
async def test_the_reference_agent_gets_the_policys_answer_and_no_one_is_asked(
    tmp_path: Path, policy: PermissionPolicy, allowed: bool
) -> None:
    asked: list[str] = []
    heard: list[PermissionDecision] = []
    builder = ClientBuilder().on_request_permission(answering(asked, "allow-once"))
    builder.permission_policy(policy, on_decision=lambda _r, d: heard.append(d))
    text = await _run(tmp_path, builder, "/permission")
    assert ("build/ was removed" in text) is allowed
    assert asked == []
    assert [(d.action, d.option_id, d.facts.kind) for d in heard] == [
        ("allow", "allow-once", "execute") if allowed else ("deny", "reject-once", "execute")
    ]


@pytest.mark.anyio
async def test_approve_reads_asks_about_a_command_and_approves_a_read(tmp_path: Path) -> None:
    """The agent's request names only the tool call's id: its kind and path come from the earlier update."""
    asked: list[str] = []
    heard: list[PermissionDecision] = []
    builder = ClientBuilder().on_request_permission(answering(asked, "reject-once"))
    builder.permission_policy(PermissionPolicy.approve_reads(), on_decision=lambda _r, d: heard.append(d))
    assert "not granted" in await _run(tmp_path, builder, "/permission")
    assert asked == ["Run `rm -rf build/`?"] and heard == []
    assert "Done: read notes.txt." in await _run(tmp_path, builder, "/permission read notes.txt")
    assert [(d.reason, d.facts.paths) for d in heard] == [("rule allow read", (str(tmp_path / "notes.txt"),))]


@pytest.mark.anyio
async def test_a_path_rule_approves_edits_under_src_only(tmp_path: Path) -> None:
    asked: list[str] = []
    policy = PermissionPolicy.ask().with_rules(PermissionRule.parse("allow", "edit:src/**")).with_root(str(tmp_path))
    builder = ClientBuilder().on_request_permission(answering(asked, "reject-once"))
    builder.permission_policy(policy)
    assert "Done: edit src/app.py." in await _run(tmp_path, builder, "/permission edit src/app.py")
    assert "not granted" in await _run(tmp_path, builder, "/permission edit docs/app.md")
    assert asked == ["edit docs/app.md?"]
