"""Agent-owned terminals: terminal_update patches, terminal_output_chunk appends bytes in order; an update naming a
terminal the client does not know loses nothing else."""

from __future__ import annotations

import base64
import sys
from pathlib import Path

import anyio
import pytest

from acp_session import ClientBuilder, Conversation
from acp_session.conversation import Plan, SessionState, Terminal, TerminalChanged
from acp_session.schema import TerminalExitStatus

from .wire import fold, update


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def term(terminal_id: str = "term", **fields: object) -> object:
    return update({"sessionUpdate": "terminal_update", "terminalId": terminal_id, **fields})


def out(data: bytes, terminal_id: str = "term") -> object:
    return update({"sessionUpdate": "terminal_output_chunk", "terminalId": terminal_id, "data": b64(data)})


def terminal_of(session: SessionState, terminal_id: str = "term") -> Terminal:
    terminal = session.terminals.get(terminal_id)
    assert terminal is not None
    return terminal


def test_new_terminal_fields_start_unknown() -> None:
    terminal = terminal_of(fold([term()]))
    assert (terminal.command, terminal.cwd, terminal.output, terminal.exit_status) == (None, None, None, None)
    assert terminal.output_bytes == b"" and not terminal.exited and not terminal.can_cancel


def test_patch_semantics() -> None:
    session = fold([term(command="cargo test", cwd="/repo", size={"cols": 80, "rows": 24})])
    terminal = terminal_of(session)
    session.apply(term())
    assert (terminal.command, terminal.cwd) == ("cargo test", "/repo")
    assert terminal.size is not None and terminal.size.cols == 80
    session.apply(term(command=None, size=None, cwd="/other"))
    assert (terminal.command, terminal.size, terminal.cwd) == (None, None, "/other")


def test_chunks_append_decoded_one_by_one_in_order() -> None:
    """Each chunk is decoded on its own: "YQ==" + "Yg==" is b"ab", not a decode of the joined text."""
    session = fold([term(), out(b"a"), out(b"b"), out("é".encode()[:1]), out("é".encode()[1:])])
    terminal = terminal_of(session)
    assert terminal.output_bytes == b"ab" + "é".encode()


def test_output_snapshot_replaces_all_bytes_including_chunks() -> None:
    session = fold([term(output={"data": b64(b"old")}), out(b"+chunk")])
    terminal = terminal_of(session)
    assert terminal.output_bytes == b"old+chunk"
    session.apply(term(output={"data": b64(b"fresh")}))
    assert terminal.output_bytes == b"fresh"
    session.apply(out(b"!"))
    assert terminal.output_bytes == b"fresh!"
    session.apply(term(output=None))
    assert terminal.output_bytes == b"" and terminal.output is None


def test_chunk_for_unseen_terminal_creates_it_outside_the_timeline() -> None:
    session = SessionState()
    event = session.apply(out(b"hi", terminal_id="late"))
    assert isinstance(event, TerminalChanged) and event.created and event.appended == b64(b"hi")
    assert terminal_of(session, "late").output_bytes == b"hi"
    assert session.timeline == []


def test_exit_status_marks_exited_even_without_code() -> None:
    session = fold([term(exitStatus={})])
    terminal = terminal_of(session)
    assert terminal.exited and terminal.exit_status == TerminalExitStatus()
    session.apply(term(exitStatus={"exitCode": -1, "signal": "SIGTERM"}))
    assert terminal.exit_status is not None and terminal.exit_status.signal == "SIGTERM"


def test_acp2_079_terminal_cancel_only_while_advertised() -> None:
    """ACP2-079: can_cancel follows capabilities.cancel; a new object replaces, null clears."""
    session = fold([term(capabilities={"cancel": {}})])
    terminal = terminal_of(session)
    assert terminal.can_cancel
    session.apply(term(exitStatus={"exitCode": 0}))
    assert terminal.can_cancel  # omitted keeps
    session.apply(term(capabilities={}))
    assert not terminal.can_cancel
    session.apply(term(capabilities={"cancel": {}}))
    session.apply(term(capabilities=None))
    assert not terminal.can_cancel


def test_terminal_meta_patch() -> None:
    session = fold([term(_meta={"a": 1, "b": 2}), term(_meta={"a": None}), out(b"x")])
    assert terminal_of(session).meta == {"b": 2}


def test_invalid_base64_chunk_contributes_nothing() -> None:
    session = fold([term(), out(b"ok")])
    session.apply(update({"sessionUpdate": "terminal_output_chunk", "terminalId": "term", "data": "!!not-base64"}))
    assert terminal_of(session).output_bytes == b"ok"


STALE_TERMINAL_AGENT = Path(__file__).parent / "agents" / "stale_terminal_agent.py"


@pytest.mark.anyio
async def test_an_update_naming_an_unknown_terminal_folds_the_rest(tmp_path: Path) -> None:
    """zed #64538: after a resume the agent names a terminal the client does not know (from the process before
    the resume), in a tool call's content and in an output chunk. Nothing of those updates is lost: the reply,
    the tool call's status and content, the plan and the turn's end all arrive; the terminal stays what the
    state can say of it (the chunk's bytes, no command: ``state.terminals``), and the CLI says it is unavailable
    (``tests/cli/test_unknown_terminal.py``)."""
    with anyio.fail_after(30):
        async with ClientBuilder("t", "1").spawn([sys.executable, str(STALE_TERMINAL_AGENT), "--chunk"]) as client:
            conversation = await Conversation.resume(client, "s1", tmp_path)
            assert [type(e).__name__ for e in conversation.history()] == ["Message", "ToolCall"]
            response = await conversation.chat_to_completion("go")
    assert response.stop_reason == "end_turn" and response.text == "reply after resume"
    call = conversation.state.tool_calls["t0"]
    assert call.status == "completed" and call.terminal_ids == ["t-old"] and call.text == "tests passed"
    plan = conversation.history()[-1]
    assert isinstance(plan, Plan) and [e.status for e in plan.entries] == ["completed"]
    terminal = conversation.state.terminals["t-old"]
    assert terminal.command is None and terminal.output_bytes == b"ok\n"
