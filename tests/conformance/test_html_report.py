"""``acp-conformance --html FILE``: the report as one self-contained page, opened in headless Chromium: the
verdict, every check under its tier, the failing check with its message and wire excerpt, a working filter, and
no console error (the strict CSP holds)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.chromium import Chromium, chromium_binary

AGENT = f"{sys.executable} -m acp_conformance.agent --broken junk-stdout"


def test_the_html_report_shows_the_verdict_tiers_and_each_failure_with_its_wire(tmp_path: Path) -> None:
    page, report = tmp_path / "report.html", tmp_path / "report.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "acp_conformance.runner",
            "--agent",
            AGENT,
            "--timeout",
            "3",
            "--json",
            "--html",
            str(page),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    report.write_text(done.stdout)
    data = json.loads(done.stdout)
    failed = [c for c in data["checks"] if c["status"] == "FAIL"]
    assert [c["id"] for c in failed] == ["framing"] and failed[0]["transcript"]
    assert "--html" not in (failed[0]["rerun"] or "")  # a rerun command does not rewrite the page
    binary = chromium_binary()
    if binary is None:
        pytest.fail("this test needs Chromium: apt-get install -y chromium (.ci/run installs it)", pytrace=False)
    with Chromium(binary) as browser:
        browser.open(page)
        assert browser.evaluate("document.querySelector('.verdict').textContent") == "Verdict: NON_CONFORMANT"
        assert browser.evaluate("document.querySelectorAll('.check').length") == len(data["checks"])
        tiers = browser.evaluate("[...document.querySelectorAll('h2')].map(h => h.textContent)")
        assert tiers == [f"Tier: {t}" for t in dict.fromkeys(c["tier"] for c in data["checks"])]
        failure = browser.evaluate("document.querySelector('.check.s-FAIL').textContent")
        assert failed[0]["title"] in failure and failed[0]["message"] in failure
        wire = browser.evaluate("document.querySelector('.check.s-FAIL pre.wire').textContent")
        assert failed[0]["transcript"][-1]["line"] in wire
        shown = browser.evaluate(
            "(() => { document.getElementById('failed-only').click();"
            " return document.querySelectorAll('.check:not(.hidden)').length; })()"
        )
        assert shown == 1
        assert browser.problems() == []
