"""``acp-session view`` of a large transcript (issue 51, 9): a million updates (about 280 MiB) made the page in
4.8 GiB and 48 s, 22 times the transcript; it is now written as the transcript is read, in memory under 3 times
its size (the peak RSS of the ``acp-session view`` process), with a progress line on a terminal. The timeline's
items wait in a store that spills to a temporary file: the page is the same whether it holds every item or one.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from tests.cli.support import CLI, cli_env, run_cli, run_cli_measured

SESSION = b"sess-0123456789abcdef"
UPDATE = b'{"t":%.6f,"dir":"in","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"' + SESSION
UPDATE += b'","update":'
KINDS = (  # one turn's updates repeat these ten: the text is joined, the rest are items of their own
    *[b'{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Words of the reply, chunk %d. "}}'] * 5,
    b'{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"thinking about %d"}}',
    b'{"sessionUpdate":"tool_call","toolCallId":"call-%d","title":"Read src/module.py","kind":"read"}',
    b'{"sessionUpdate":"tool_call_update","toolCallId":"call-%d","status":"completed","content":[{"type":"content",'
    b'"content":{"type":"text","text":"def f():\\n    return 1  # <b>&amp;</b> \\u2028 </script>\\n"}}]}',
    b'{"sessionUpdate":"usage_update","used":%d,"size":200000}',
    b'{"sessionUpdate":"plan_update","plan":{"entries":[{"content":"step %d","status":"pending","priority":"high"}]}}',
)
PROMPT = b'{"t":%.6f,"dir":"out","msg":{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"'
PROMPT += SESSION + b'","prompt":[{"type":"text","text":"turn %d"}]}}}\n'
IDLE = UPDATE + b'{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}}}}\n'
ANSWER = b'{"t":%.6f,"dir":"in","msg":{"jsonrpc":"2.0","id":%d,"result":{"messageId":"u%d"}}}\n'
PER_TURN = 1000


def write_transcript(path: Path, updates: int) -> None:
    """``updates`` session updates in turns of ``PER_TURN``, each turn a prompt, its answer (protocol version 2
    answers at once), the updates and the idle state that ends the turn."""
    t = 1_700_000_000.0
    with path.open("wb") as file:
        for turn in range(1, updates // PER_TURN + 1):
            lines = [PROMPT % (t, turn, turn), ANSWER % (t, turn, turn)]
            for n in range((turn - 1) * PER_TURN, turn * PER_TURN):
                kind = KINDS[n % 10]
                lines.append(UPDATE % t + kind % (n - 1 if n % 10 == 7 else n) + b"}}}\n")
                t += 0.001
            lines.append(IDLE % t)
            file.write(b"".join(lines))


def page_data(page: Path) -> dict[str, Any]:
    match = re.search(r'<script type="application/json" id="data">(.*?)</script>', page.read_text(), re.S)
    assert match is not None
    data: dict[str, Any] = json.loads(match.group(1))
    return data


def test_the_timeline_of_a_generated_transcript(tmp_path: Path) -> None:
    """The items the streamed page holds, checked one by one for two turns."""
    transcript = tmp_path / "two-turns.jsonl"
    write_transcript(transcript, 2 * PER_TURN)
    page = tmp_path / "page.html"
    done = run_cli(tmp_path, "view", str(transcript), "--out", str(page))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    html = page.read_text()
    assert html.count("</script>") == 2 and "<b>" not in html  # the agent's markup stays escaped data
    data = page_data(page)
    lines = transcript.read_bytes().splitlines()
    assert len(data["messages"]) == len(lines)
    assert [m["msg"] for m in data["messages"]] == [json.loads(line)["msg"] for line in lines]
    assert data["started"] == 1_700_000_000.0 and data["messages"][1]["t"] == 0.0
    kinds = [item["kind"] for item in data["items"]]
    per_turn = ["turn", *["text", "thought", "tool", "usage", "plan"] * (PER_TURN // 10), "done"]
    assert kinds == per_turn * 2
    first_text = data["items"][1]
    assert first_text["text"] == "".join(f"Words of the reply, chunk {n}. " for n in range(5))
    assert first_text["messages"] == [2, 3, 4, 5, 6]
    tool = data["items"][3]
    assert tool["id"] == "call-6" and tool["status"] == "completed" and tool["messages"] == [8, 9]
    assert tool["text"] == "def f():\n    return 1  # <b>&amp;</b> \u2028 </script>\n\n"
    assert data["items"][0]["duration"] == pytest.approx(1.0, abs=1e-3) and data["items"][-1]["turn"] == 2


def test_a_store_of_one_item_gives_the_same_page(tmp_path: Path) -> None:
    """Every item spilled and read back as soon as another is touched: the page does not change."""
    from acp_session.pages.session_view import write_transcript_page

    transcript = tmp_path / "t.jsonl"
    write_transcript(transcript, 3 * PER_TURN)
    pages = []
    for live in (1, 2, 1_000_000):
        page = tmp_path / f"page-{live}.html"
        with page.open("wb") as out:
            write_transcript_page(transcript, out, spill_dir=tmp_path, live_items=live)
        pages.append(page.read_bytes())
    assert pages[0] == pages[1] == pages[2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page-1.html", "page-1000000.html", "page-2.html", "t.jsonl"]


def test_a_million_updates_in_under_three_times_the_transcript(tmp_path: Path) -> None:
    transcript = tmp_path / "big.jsonl"
    write_transcript(transcript, 1_000_000)
    size = transcript.stat().st_size
    page = tmp_path / "big.html"
    done, peak = run_cli_measured(tmp_path, "view", str(transcript), "--out", str(page), timeout=240)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no progress line: stderr is not a terminal
    assert peak < 3 * size, f"peak RSS {peak >> 20} MiB for a transcript of {size >> 20} MiB"
    with page.open("rb") as file:
        assert file.read(15) == b"<!DOCTYPE html>"
        file.seek(-65536, os.SEEK_END)
        tail = file.read()
    assert b'"agent":"","protocol":null,"started":1700000000.0}</script>' in tail and tail.endswith(b"</html>\n")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left


def test_a_large_transcript_shows_progress_on_a_terminal(tmp_path: Path) -> None:
    pexpect = pytest.importorskip("pexpect")
    transcript = tmp_path / "big.jsonl"
    write_transcript(transcript, 80_000)  # over the 16 MiB a progress line needs
    assert transcript.stat().st_size > 16 << 20
    child = pexpect.spawn(
        CLI, ["view", str(transcript)], env=cli_env(tmp_path), cwd=str(tmp_path), encoding="utf-8", timeout=120
    )
    child.expect(r"acp-session view: reading big\.jsonl \d+% \(\d+ of \d+ MiB\)")
    child.expect(re.escape(f"{transcript}.html"))
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert (tmp_path / "big.jsonl.html").stat().st_size > transcript.stat().st_size


def test_a_transcript_broken_halfway_leaves_no_page(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    write_transcript(transcript, PER_TURN)
    with transcript.open("ab") as file:
        file.write(b'{"t": 1, "dir": "in", "msg": {"cut short\n')
    page = tmp_path / "page.html"
    page.write_text("the previous page\n")
    done = run_cli(tmp_path, "view", str(transcript), "--out", str(page))
    assert done.returncode == 1 and "is not a transcript" in done.stderr and "Traceback" not in done.stderr
    assert page.read_text() == "the previous page\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page.html", "t.jsonl"]
