"""``acp-session view``: a transcript that ``chat --record`` wrote (the reference agent's ``/all``, ``/permission``
and an ``/echo`` of hostile markup) becomes one self-contained page, checked in headless Chromium over the
DevTools protocol: every turn, tool call and permission is there, the search filters, nothing is logged as an
error (CSP violations included), and the agent's ``<script>`` and ``javascript:`` links stay text."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from acp_session.pages.html import embed_json
from tests.cli.support import run_cli
from tests.helpers.chromium import Chromium, chromium_binary

HOSTILE = (
    '/echo <script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'
    ' [click](javascript:window.pwned=3) <a href="javascript:window.pwned=4">link</a>'
    " <style>body{display:none}</style></script><!--"
)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A transcript of three turns, one chat process each (``-c`` continues the session), and its page."""
    state = tmp_path_factory.mktemp("view")
    transcript = state / "session.jsonl"
    for args in (("/all",), ("-c", "--yes", "/permission"), ("-c", HOSTILE)):
        done = run_cli(state, "chat", "--record", str(transcript), *args, timeout=60)
        assert done.returncode == 0, done.stderr
    page = state / "page.html"
    done = run_cli(state, "view", str(transcript), "--out", str(page))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(page)
    return transcript, page


def wire(transcript: Path) -> list[dict[str, Any]]:
    return [json.loads(line)["msg"] for line in transcript.read_text().splitlines()]


def live_tool_calls(messages: list[dict[str, Any]]) -> set[tuple[int, str]]:
    """(turn, tool call id) of every tool call reported during a turn (not in a resume's replay)."""
    turn, found = 0, set()
    live = False
    for message in messages:
        if message.get("method") == "session/prompt":
            turn, live = turn + 1, True
        elif message.get("method") == "session/resume":
            live = False
        elif message.get("method") == "session/update" and live:
            tool_call_id = message["params"]["update"].get("toolCallId")
            if tool_call_id is not None:
                found.add((turn, tool_call_id))
    return found


def test_embedded_json_cannot_end_its_script_element() -> None:
    text = embed_json({"x": "</script><!--\u2028&"})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"x": "</script><!--\u2028&"}


def test_the_page_is_self_contained_under_a_strict_policy(recorded: tuple[Path, Path]) -> None:
    _, page = recorded
    html = page.read_text()
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    assert policy is not None and "default-src 'none'" in policy.group(1) and "unsafe" not in policy.group(1)
    assert html.count("<script") == 2  # the inert data and the page's own script; the agent's never appears
    assert "window.pwned" in html and "<img" not in html  # the hostile text is in the data, escaped
    assert not re.search(r"(src|href)=\"(https?:)?//", html)  # nothing to fetch


def test_view_reports_a_missing_or_broken_transcript(tmp_path: Path) -> None:
    done = run_cli(tmp_path, "view", str(tmp_path / "nope.jsonl"))
    assert done.returncode == 1 and "cannot read" in done.stderr and "Traceback" not in done.stderr
    (tmp_path / "bad.jsonl").write_text("not json\n")
    done = run_cli(tmp_path, "view", str(tmp_path / "bad.jsonl"))
    assert done.returncode == 1 and "not a transcript" in done.stderr and "Traceback" not in done.stderr


def test_chromium_shows_every_turn_tool_call_and_permission(recorded: tuple[Path, Path]) -> None:
    transcript, page = recorded
    binary = chromium_binary()
    if binary is None:
        pytest.fail("this test needs Chromium: apt-get install -y chromium (.ci/run installs it)", pytrace=False)
    messages = wire(transcript)
    prompts = [m for m in messages if m.get("method") == "session/prompt"]
    tool_ids = live_tool_calls(messages)
    permissions = [m for m in messages if m.get("method") == "session/request_permission"]
    assert len(prompts) == 3 and len(tool_ids) >= 3 and len(permissions) == 1

    with Chromium(binary) as browser:
        browser.open(page)
        count = "(selector) => document.querySelectorAll(selector).length"
        assert browser.evaluate(f"({count})('.item.k-turn')") == len(prompts)
        assert browser.evaluate(f"({count})('.item.k-tool:not(.replayed)')") == len(tool_ids)
        assert browser.evaluate(f"({count})('.item.k-tool.replayed')") > 0  # each -c resumed and replayed history
        assert browser.evaluate(f"({count})('.item.k-permission')") == 1
        permission = browser.evaluate("document.querySelector('.k-permission').textContent")
        assert "Run `rm -rf build/`?" in permission and "answer: Allow once" in permission and "waited" in permission
        terminal = browser.evaluate("document.querySelector('.k-terminal').textContent")
        assert terminal.strip()
        diff = browser.evaluate("[...document.querySelectorAll('.k-tool pre')].map(p => p.textContent).join('')")
        assert "+++" in diff  # the /tool edit's patch

        # The search filters: only items holding the needle stay visible.
        total = browser.evaluate(f"({count})('.item')")
        visible = browser.evaluate(
            "(() => { const s = document.getElementById('search'); s.value = 'example.txt';"
            " s.dispatchEvent(new Event('input'));"
            " return [...document.querySelectorAll('.item:not(.hidden)')].map(e => e.textContent); })()"
        )
        assert 0 < len(visible) < total and all("example.txt" in text.lower() for text in visible)
        # A kind filter hides that kind.
        browser.evaluate(
            "(() => { const s = document.getElementById('search'); s.value = ''; s.dispatchEvent(new Event('input'));"
            " const box = document.querySelector('input[data-kind=\"text\"]'); box.click(); })()"
        )
        assert browser.evaluate(f"({count})('.item.k-text:not(.hidden)')") == 0
        # The raw-wire pane shows the JSON of a selected item's messages.
        browser.evaluate("document.querySelector('.k-permission').click()")
        raw = browser.evaluate("document.getElementById('raw').textContent")
        assert '"method": "session/request_permission"' in raw and '"optionId": "allow-once"' in raw

        # The hostile echo is text: nothing ran, no element or link came from it.
        assert browser.evaluate("typeof window.pwned") == "undefined"
        assert browser.evaluate(f"({count})('script')") == 2
        assert browser.evaluate(f"({count})('img, a, iframe, object, embed, link, style')") == 1  # our <style>
        echoed = browser.evaluate(
            "[...document.querySelectorAll('.k-text pre')].map(p => p.textContent).find(t => t.includes('pwned'))"
        )
        assert "<script>window.pwned = 1</script>" in echoed and "javascript:window.pwned=4" in echoed
        assert browser.evaluate("getComputedStyle(document.body).display") != "none"
        assert browser.problems() == []
