"""Refused means refused (issue 50): ``permission-refused`` fails an agent that acts after the runner refused its
permission request, ``permission-asked`` reports one that edits without asking; both protocol versions, against
the reference agent's broken variants (real subprocesses, the runner in process)."""

from __future__ import annotations

import sys

import anyio
import pytest

from acp_conformance.runner.run import RunOptions, RunReport, run

AGENT = [sys.executable, "-m", "acp_conformance.agent"]
CHECKS = ["permission-refused", "permission-asked"]


def _run(*broken: str, offer: int = 2, only: list[str] | None = None) -> RunReport:
    argv = [*AGENT, *(f"--broken={mode}" for mode in broken)]
    options = RunOptions(argv, offer=offer, only=only or (), wait=2.0)
    return anyio.run(run, options)


def _statuses(report: RunReport) -> dict[str, str]:
    return {r.id: r.status for r in report.results}


@pytest.mark.parametrize("offer", [2, 1])
def test_the_reference_agent_does_nothing_it_was_refused_and_asks_before_editing(offer: int) -> None:
    report = _run(offer=offer, only=CHECKS)
    assert report.version == offer
    by_id = {r.id: r for r in report.results}
    assert _statuses(report) == {"permission-refused": "pass", "permission-asked": "pass"}
    refused = by_id["permission-refused"].message
    assert refused.startswith("refused with option 'reject-once' (reject_once)") and "nothing was done" in refused
    if offer == 2:  # v2 also refuses with the cancelled outcome (ACP2-086)
        assert "then the cancelled outcome" in refused
    assert by_id["permission-refused"].scenarios == ["edit_permission: '/edit ask'"]


def test_v2_agent_that_acts_after_a_reject_fails_naming_what_it_did() -> None:
    report = _run("act-after-reject", only=CHECKS)
    by_id = {r.id: r for r in report.results}
    assert by_id["permission-asked"].status == "pass"
    failure = by_id["permission-refused"]
    assert failure.status == "fail"
    assert failure.message.startswith("tool-calls.mdx#permission-options: refused with option 'reject-once'")
    assert "tool call 'tc-1' was reported completed" in failure.message
    assert "the sandbox changed: acp-reference-edit/ (new)" in failure.message  # the files it wrote on disk


def test_v1_agent_that_acts_after_a_reject_fails_naming_what_it_did() -> None:
    """Through the client: the v1 front writes with fs/write_text_file (the runner offers it), which the runner
    answers in the sandbox. That every other v1 check stays as documented is test_v1_mutants.py's to assert (the
    mode is in its table)."""
    report = _run("act-after-reject", offer=1, only=CHECKS)
    assert report.version == 1
    by_id = {r.id: r for r in report.results}
    assert by_id["permission-asked"].status == "pass"
    failure = by_id["permission-refused"]
    assert failure.status == "fail"
    assert failure.message.startswith("tool-calls.mdx#permission-options: refused with option 'reject-once'")
    assert "it sent fs/write_text_file" in failure.message and "acp-reference-edit/greeting.txt" in failure.message
    assert "the sandbox changed" in failure.message


@pytest.mark.parametrize("offer", [2, 1])
def test_an_edit_that_never_asks_is_reported_and_leaves_nothing_to_refuse(offer: int) -> None:
    report = _run("edit-unasked", offer=offer, only=CHECKS)
    by_id = {r.id: r for r in report.results}
    assert by_id["permission-asked"].status == "fail"
    assert by_id["permission-asked"].message == (
        "tool-calls.mdx#requesting-permission: tool call 'tc-1' (edit) completed without a permission request"
    )
    # Nothing was asked, so there was nothing to refuse: not applicable, saying why.
    assert by_id["permission-refused"].status == "n/a"
    assert "no session/request_permission" in by_id["permission-refused"].message
