"""Which transcript line a failure is about (``runner.excerpt``): the line a check names, wherever it is, or the
subject's line the message quotes most; the reports open the wire excerpt there."""

from __future__ import annotations

from acp_conformance.runner.excerpt import focus, transcript_for
from acp_conformance.runner.frames import WireLine

SESSION_NEW = '{"jsonrpc":"2.0","id":3,"result":{"sessionId":"sess-2","configOptions":[' + "x" * 4000 + "]}}"
LINES = [
    ("sent", '{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":"/tmp/x"}}'),
    ("received", SESSION_NEW),
    ("sent", '{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"sess-2","prompt":[]}}'),
    ("received", '{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"plan"}}}'),
    ("received", '{"jsonrpc":"2.0","id":4,"result":{"stopReason":"end_turnx"}}'),
]


def test_the_quoted_line_is_found_whatever_the_quoting() -> None:
    # A Python repr of the parsed answer, spaced and single-quoted, still points at the raw JSON line.
    message = "ACP1-017: the prompt ended with {'stopReason': 'end_turnx'}, not a stop reason of the schema"
    assert focus(message, LINES, "received") == 4
    # Only the subject's lines count: the runner's own session/prompt request is not the agent's fault.
    assert focus("the answer to session/prompt is late", LINES, "received") == 4
    assert focus('approved: {"sessionId":"sess-2","prompt":[]}', LINES, "sent") == 2


def test_without_anything_in_common_the_subjects_last_line() -> None:
    assert focus("ACP2-093: no idle within 10s", LINES, "received") == 4
    assert focus("no answer", LINES, "sent") == 2
    assert focus("anything", [], "received") is None


def test_a_named_line_written_before_the_check_began_opens_its_transcript() -> None:
    wire = [WireLine("received", 0.1, "banner, not JSON")] + [WireLine(d, 1.0, t) for d, t in LINES]
    lines, at = transcript_for(wire, 1, 200, "stdout line 1 is not JSON", named=b"banner, not JSON\n")
    assert at == 0 and lines[0].line == "banner, not JSON" and lines[1:] == wire[1:]
    # Named and within the check's own traffic: its place there.
    lines, at = transcript_for(wire, 1, 200, "whatever", named=LINES[3][1])
    assert lines == wire[1:] and at == 3
    # Not named: the message decides (here: nothing in common, the agent's last line).
    lines, at = transcript_for(wire, 1, 200, "ACP2-093: no idle within 10s")
    assert at == len(lines) - 1
