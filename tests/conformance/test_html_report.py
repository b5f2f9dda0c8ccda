"""``--html FILE``: the report as one self-contained page, opened in headless Chromium: the verdict and a tier
table at the top, the failures before every other check, each failure's wire excerpt opening on the line it is
about (highlighted), sent and received lines told apart, the rerun line only where it helps, a working filter,
and no console error (the strict CSP holds)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.chromium import Chromium, chromium_binary

AGENT = f"{sys.executable} -m acp_conformance.agent --broken junk-stdout"
RUNNER = [sys.executable, "-m", "acp_conformance.runner"]


def _browser() -> Chromium:
    binary = chromium_binary()
    if binary is None:
        pytest.fail("this test needs Chromium: apt-get install -y chromium (.ci/run installs it)", pytrace=False)
    return Chromium(binary)


def _statuses_in_page_order(browser: Chromium) -> list[str]:
    return list(browser.evaluate("[...document.querySelectorAll('.check')].map(c => c.className.split(' ')[1])"))


def _assert_wire_reads_well(browser: Chromium, quoted: str, subject: str) -> None:
    """In the first failure: sent and received lines differ (arrow and colour); the offending line, one of the
    subject's, is highlighted and holds ``quoted``; the excerpt opens near it, not on a long line."""
    first = "document.querySelector('.check.s-FAIL')"
    arrows = browser.evaluate(
        f"['sent', 'received'].map(d => [...{first}.querySelectorAll('.excerpt .line.' + d + ' .arrow')]"
        ".map(a => a.textContent + '|' + getComputedStyle(a).color))"
    )
    sent, received = ({*a} for a in arrows)
    assert len(sent) == 1 and len(received) == 1, arrows  # one look per direction ...
    assert sent != received and {s.split("|")[0] for s in sent | received} == {"\u2192", "\u2190"}  # ... unlike
    offending = browser.evaluate(
        f"[...{first}.querySelectorAll('.excerpt .line.offending')].map(l => [l.className, l.textContent,"
        " getComputedStyle(l).backgroundColor])"
    )
    assert len(offending) == 1, offending
    classes, text, background = offending[0]
    assert subject in classes.split() and quoted in text and "the failure" in text
    others = browser.evaluate(
        f"[...{first}.querySelectorAll('.excerpt .line:not(.offending)')].map(l => getComputedStyle(l).backgroundColor)"
    )
    assert background not in others
    lengths = browser.evaluate(
        f"[...{first}.querySelectorAll('.excerpt .line:not(.offending) .text')].map(t => t.textContent.length)"
    )
    assert all(n < 400 for n in lengths), lengths  # long lines are trimmed in the excerpt


def test_the_agent_report_puts_failures_first_and_shows_the_offending_line(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    done = subprocess.run(
        [*RUNNER, "--agent", AGENT, "--timeout", "3", "--json", "--html", str(page)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    failed = [c for c in data["checks"] if c["status"] == "FAIL"]
    assert [c["id"] for c in failed] == ["framing"] and failed[0]["transcript"]
    # framing names the line it fails on: the agent wrote it while starting, before the check's own traffic.
    assert failed[0]["offendingLine"] == 0 and failed[0]["transcript"][0]["line"] == "reference agent starting up"
    assert "--html" not in (failed[0]["rerun"] or "")  # a rerun command does not rewrite the page
    with _browser() as browser:
        browser.open(page)
        assert browser.evaluate("document.querySelector('.verdict').textContent") == "Verdict: NON_CONFORMANT"
        assert browser.evaluate("document.querySelectorAll('.check').length") == len(data["checks"])
        # The failures first: the deciding one under its heading, every other check after it, by tier.
        statuses = _statuses_in_page_order(browser)
        assert statuses[0] == "s-FAIL" and "s-FAIL" not in statuses[1:], statuses
        headings = browser.evaluate("[...document.querySelectorAll('h2')].map(h => h.textContent)")
        assert headings[0] == "Deciding the verdict: failures"
        tiers = ["MANDATORY", "CAPABILITY", "ADVISORY", "INFORMATIONAL"]
        assert headings[1:] == [f"Tier: {t}" for t in tiers if any(c["tier"] == t for c in data["checks"])]
        # The tier table: the counts of the verdict, a deciding count marked.
        table = browser.evaluate(
            "[...document.querySelectorAll('table.tiers tr')].map(r => [...r.children].map(c => c.textContent))"
        )
        assert table[0] == ["tier", "meaning", "PASS", "FAIL", "SKIPPED", "NOT_TESTED"]
        counts = {row[0]: dict(zip(table[0][2:], map(int, row[2:]), strict=True)) for row in table[1:]}
        assert counts == data["verdict"]["tier_counts"]
        assert browser.evaluate("document.querySelector('table.tiers td.hot').textContent") == "1"
        failure = browser.evaluate("document.querySelector('.check.s-FAIL').textContent")
        assert failed[0]["title"] in failure and failed[0]["message"] in failure
        _assert_wire_reads_well(browser, "reference agent starting up", "received")
        # The whole transcript is one click away; the rerun line is the failure's only.
        assert browser.evaluate("document.querySelector('.check.s-FAIL details .wire.full').children.length") == len(
            failed[0]["transcript"]
        )
        assert browser.evaluate("[...document.querySelectorAll('.rerun')].length") == 1
        shown = browser.evaluate(
            "(() => { document.getElementById('failed-only').click();"
            " return document.querySelectorAll('.check:not(.hidden)').length; })()"
        )
        assert shown == 1
        assert browser.problems() == []


def test_a_partial_run_says_so_on_the_page(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    agent = f"{sys.executable} -m acp_conformance.agent"
    done = subprocess.run(
        [*RUNNER, "--agent", agent, "--check", "initialize", "--html", str(page)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 4, done.stdout + done.stderr
    with _browser() as browser:
        browser.open(page)
        verdict = browser.evaluate("document.querySelector('.verdict').textContent")
        assert verdict.startswith("Verdict: PARTIAL: 1 of ") and verdict.endswith(" checks run (--check initialize)")
        assert "partial" in browser.evaluate("document.querySelector('.verdict').className")
        assert "not run (" in browser.evaluate("document.querySelector('header').textContent")
        assert browser.evaluate("document.querySelectorAll('.rerun').length") == 0
        assert browser.problems() == []


def test_the_client_report_has_the_same_page_with_the_clients_lines_marked(tmp_path: Path) -> None:
    """``acp-conformance client --html``: a client that approves a permission after its cancel; its approval
    (a line the client sent) is the highlighted one."""
    page = tmp_path / "client.html"
    client = [sys.executable, str(Path(__file__).parent / "broken_client.py"), "--defect", "approve-after-cancel"]
    options = ["--scenario", "basic", "--scenario", "cancel", "--json", "--html", str(page)]
    done = subprocess.run(
        [*RUNNER, "client", *options, "--", *client], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 1, done.stdout + done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    failed = [c for c in data["checks"] if c["status"] == "FAIL"]
    assert [c["id"] for c in failed] == ["client-no-approval-after-cancel"]
    approval = failed[0]["transcript"][failed[0]["offendingLine"]]
    assert approval["direction"] == "sent" and '"optionId": "allow"' in approval["line"]
    with _browser() as browser:
        browser.open(page)
        assert browser.evaluate("document.querySelector('h1').textContent") == "ACP client conformance report"
        verdict = browser.evaluate("document.querySelector('.verdict').textContent")
        assert verdict.startswith("Verdict: NON_CONFORMANT (4 of ") and "runs played" in verdict
        statuses = _statuses_in_page_order(browser)
        assert statuses[0] == "s-FAIL" and "s-FAIL" not in statuses[1:], statuses
        _assert_wire_reads_well(browser, '"optionId": "allow"', "sent")
        legend = browser.evaluate("document.querySelector('.check.s-FAIL .legend').textContent")
        assert "sent by the client" in legend and "sent by the scripted agent" in legend
        assert browser.problems() == []
