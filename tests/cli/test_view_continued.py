"""The page of a continued session (``chat -c --record``, three runs in one transcript): each run's resume replays the
history the page already shows, so the replay is hidden until a box shows it; replayed agent messages stay
apart (each its own ``messageId``); a compaction is one item with its summary; a diff's lines are coloured. A diff
sent as old and new text (protocol version 1) becomes a patch too. Checked in headless Chromium."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.cli.support import run_cli
from tests.helpers.chromium import Chromium, chromium_binary


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    state = tmp_path_factory.mktemp("continued")
    transcript = state / "session.jsonl"
    for number, args in enumerate((("/all",), ("-c", "/echo second"), ("-c", "/echo third"))):
        run = state / f"run-{number}.jsonl"  # one file a run, put together: what --append writes
        done = run_cli(state, "chat", "--record", str(run), *args, timeout=60)
        assert done.returncode == 0, done.stderr
        with transcript.open("ab") as whole:
            whole.write(run.read_bytes())
    out = state / "page.html"
    done = run_cli(state, "view", str(transcript), "--out", str(out))
    assert done.returncode == 0, done.stderr
    return out


def page_items(page: Path) -> list[dict[str, Any]]:
    match = re.search(r'<script type="application/json" id="data">(.*?)</script>', page.read_text(), re.S)
    assert match is not None
    items: list[dict[str, Any]] = json.loads(match.group(1))["items"]
    return items


def test_replayed_messages_stay_apart_and_a_compaction_is_one_item(page: Path) -> None:
    items = page_items(page)
    replayed = [i["text"] for i in items if i["kind"] == "text" and i.get("replayed")]
    assert replayed.count("4 tests passed.") == 2 and replayed.count("Usage reported.") == 2  # not glued together
    assert not any("passed.Usage" in text for text in replayed)
    compactions = [i for i in items if i["kind"] == "compaction"]
    assert len(compactions) == 3  # the live one and two replays
    assert {(c["title"], c["text"]) for c in compactions} == {
        ("Context compacted", "Earlier, the user greeted the agent. Nothing else happened.")
    }
    assert not [i for i in items if i["kind"] == "update" and i["title"].startswith("compaction")]
    resumes = [i for i in items if i["kind"] == "request" and i["title"] == "session/resume"]
    assert len(resumes) == 2 and all(r["replays"] > 10 for r in resumes)


def test_chromium_hides_the_replays_and_colours_the_diff(page: Path) -> None:
    binary = chromium_binary()
    if binary is None:
        pytest.fail("this test needs Chromium: apt-get install -y chromium (.ci/run installs it)", pytrace=False)
    count = "((selector) => document.querySelectorAll(selector).length)"
    with Chromium(binary) as browser:
        browser.open(page)
        replayed = browser.evaluate(f"{count}('.item.replayed')")
        assert replayed > 20
        assert browser.evaluate(f"{count}('.item.replayed:not(.hidden)')") == 0  # the page already shows them
        assert browser.evaluate(f"{count}('.item.k-turn:not(.hidden)')") == 3
        resume = browser.evaluate(
            "[...document.querySelectorAll('.k-request')].map(e => e.textContent).find(t => t.includes('resume'))"
        )
        assert re.search(r"replayed \d+ items", resume)
        browser.evaluate("document.getElementById('replayed').click()")
        assert browser.evaluate(f"{count}('.item.replayed:not(.hidden)')") == replayed
        browser.evaluate("document.getElementById('replayed').click()")
        assert browser.evaluate(f"{count}('.item.replayed:not(.hidden)')") == 0

        added = browser.evaluate("[...document.querySelectorAll('.k-tool pre.diff .add')].map(e => e.textContent)")
        assert "+new" in added
        colours = browser.evaluate(
            "(() => { const s = (q) => getComputedStyle(document.querySelector(q)).backgroundColor;"
            " return [s('.k-tool pre.diff .add'), s('.k-tool pre.diff .hunk'), s('.k-tool pre.diff .meta')]; })()"
        )
        assert len(set(colours)) == 3, colours  # added lines, hunks and headers each look their own
        compaction = browser.evaluate("document.querySelector('.k-compaction').textContent")
        assert "Context compacted" in compaction and "Nothing else happened." in compaction
        assert browser.problems() == []


def test_a_diff_of_old_and_new_text_is_shown_as_a_patch(tmp_path: Path) -> None:
    """A protocol version 1 diff carries the old and new text, no patch: the page makes one."""
    update = {
        "sessionUpdate": "tool_call",
        "toolCallId": "call-1",
        "title": "Edit a.py",
        "kind": "edit",
        "status": "completed",
        "content": [{"type": "diff", "path": "/w/a.py", "oldText": "one\ntwo\n", "newText": "one\n2\n"}],
    }
    lines = [
        {"t": 1.0, "dir": "out", "msg": {"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": {}}},
        {"t": 1.1, "dir": "in", "msg": {"jsonrpc": "2.0", "method": "session/update", "params": {"update": update}}},
        {"t": 1.2, "dir": "in", "msg": {"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}}},
    ]
    transcript = tmp_path / "v1.jsonl"
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    done = run_cli(tmp_path, "view", str(transcript), "--out", str(tmp_path / "v1.html"))
    assert done.returncode == 0, done.stderr
    [tool] = [i for i in page_items(tmp_path / "v1.html") if i["kind"] == "tool"]
    assert tool["diff"] == "--- /w/a.py\n+++ /w/a.py\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n"
    assert tool["text"] == ""
