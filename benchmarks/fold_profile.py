"""Where each microsecond of the fold goes: the library's own stages, in process, beside the raw typed decode.

Run: ``.venv/bin/python benchmarks/fold_profile.py [--n 10000 100000] [--rounds 5] [--stage NAME]``

The bytes are exactly the cheap agent's v2 turn (``compare.stream_bytes``), cut into the reads the pipe gives
(64 KiB). Each stage runs the library's real code, cumulatively, and costs the nanoseconds per update it adds
to the stage before:

* ``raw``: ``compare.py``'s lower bound, one typed msgspec decode per line (lines already split);
* ``framing``: ``FrameReader.feed_block`` of each read (what ``transport.lines`` does: the lines counted, whole
  lines handed over as one ``LineBlock``);
* ``rpc``: framing, then ``RpcCore.receive_block`` with the client's own ``session/update`` decoder (the unstable
  superset, usage quirk) and its ``auth/status_update`` one, consumed as the reader does;
* ``fold``: rpc, then each run of decoded params handed to a ``Conversation``'s batch listener (``_on_notes``:
  stretch detection, ``SessionState.append_chunks``, the turn's and the streams' runs) and the final text read.

* ``fold_by_line``: the same fold with each read split into lines first (``FrameReader.feed`` and
  ``check_utf8``) and decoded line by line: the exact path, which a ``LineBlock`` takes when it is not one
  typed notification per line; ``fold`` against it is the block path's gain, measured in the same rounds.

The rounds alternate the stages (the machine's speed drifts) and each stage's median counts. What the end-to-end
fold adds beyond ``fold`` (the pipe's reads, the event loop, the session track, the awaits) is the pipe figure
of ``compare.py`` minus this one. ``--stage NAME --rounds 1`` runs one stage alone, for ``valgrind
--tool=callgrind`` (instruction counts do not depend on the machine's load): the difference of two stages'
counts, divided by N, is the instructions per update that the later stage adds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "peers"))
import compare  # noqa: E402

from acp_session._schema_runtime import alternatives_dec_hook  # noqa: E402,F401  (the schema's hooks load)
from acp_session.codec import decoder  # noqa: E402
from acp_session.conversation import Conversation  # noqa: E402
from acp_session.protocol.usage_quirk import skip_unknown_usage  # noqa: E402
from acp_session.rpc.core import RpcCore, TypedNotifications  # noqa: E402
from acp_session.rpc.handlers import Handler  # noqa: E402
from acp_session.schema import unstable as mu  # noqa: E402
from acp_session.transport.framing import FrameReader, check_utf8, lines_in  # noqa: E402

READ_SIZE = 64 * 1024
STAGES = ("none", "raw", "framing", "rpc", "fold", "fold_by_line")


def reads_of(lines: list[bytes]) -> list[bytes]:
    blob = b"\n".join(lines) + b"\n"
    return [blob[i : i + READ_SIZE] for i in range(0, len(blob), READ_SIZE)]


def stage_raw(lines: list[bytes], reads: list[bytes]) -> int:
    decode = msgspec.json.Decoder(compare._Envelope).decode
    parts = [decode(line).params.update.content.text for line in lines]
    return len("".join(parts))


def stage_framing(lines: list[bytes], reads: list[bytes]) -> int:
    reader = FrameReader()
    count = 0
    for data in reads:
        frames = reader.feed_block(data)
        if frames:
            count += lines_in(frames)
    return count


def _core(batch: Callable[[list[Any]], Any]) -> RpcCore[Any]:
    """The client's typed notification methods, as a v2 connection registers them: ``session/update`` and the
    Preview's ``auth/status_update`` (two typed methods, so a block's messages are grouped into runs)."""
    core: RpcCore[Any] = RpcCore()
    handler = Handler.of(lambda _note: None, skip_unknown_usage(decoder(mu.UpdateSessionNotification)), batch)
    auth = Handler.of(lambda _note: None, decoder(mu.AuthStatusUpdateNotification))
    core.set_notification_handlers({"session/update": handler, "auth/status_update": auth})
    return core


def _pipeline(reads: list[bytes], batch: Callable[[list[Any]], Any], by_line: bool = False) -> int:
    reader = FrameReader()
    receive_block = _core(batch).receive_block
    count = 0
    for data in reads:
        frames = check_utf8(reader.feed(data), data) if by_line else reader.feed_block(data)
        if not frames:
            continue
        for event in receive_block(frames):
            if type(event) is TypedNotifications:
                count += len(event.messages)
                event.handler.batch(event.params)  # type: ignore[misc]
    return count


def stage_rpc(lines: list[bytes], reads: list[bytes]) -> int:
    return _pipeline(reads, lambda _notes: None)


def stage_fold(lines: list[bytes], reads: list[bytes], by_line: bool = False) -> int:
    conversation = Conversation(max_history_size=0)
    # The turn's head as the agent writes it: the message exists before its chunks, as in a real turn.
    head = decoder(mu.UpdateSessionNotification)(
        b'{"sessionId":"sess-bench","update":{"sessionUpdate":"agent_message_chunk","messageId":"a1",'
        b'"content":{"type":"text","text":""}}}'
    )
    conversation._on_note(head)
    count = _pipeline(reads, conversation._on_notes, by_line)
    text = conversation.state.timeline[-1].text  # type: ignore[union-attr]
    assert len(text) == 40 * count, (len(text), count)
    return count


def stage_none(lines: list[bytes], reads: list[bytes]) -> int:
    return len(lines)


def stage_fold_by_line(lines: list[bytes], reads: list[bytes]) -> int:
    return stage_fold(lines, reads, by_line=True)


RUN = {
    "none": stage_none,
    "raw": stage_raw,
    "framing": stage_framing,
    "rpc": stage_rpc,
    "fold": stage_fold,
    "fold_by_line": stage_fold_by_line,
}


def profile(n: int, rounds: int) -> dict[str, float]:
    """Nanoseconds per update of each stage, the median of ``rounds`` alternating rounds."""
    lines = compare.stream_bytes(n)
    reads = reads_of(lines)
    for name in STAGES[1:]:
        RUN[name](lines, reads)  # warm-up
    samples: dict[str, list[float]] = {name: [] for name in STAGES[1:]}
    for _ in range(rounds):
        for name in STAGES[1:]:
            start = time.perf_counter()
            RUN[name](lines, reads)
            samples[name].append((time.perf_counter() - start) * 1e9 / n)
    return {name: statistics.median(values) for name, values in samples.items()}


def print_table(n: int, ns: dict[str, float]) -> None:
    print(f"\nN = {n:,}: ns per update, median of the rounds (cumulative; 'adds' = this stage minus the one before)")
    before = 0.0
    for name in STAGES[1:-1]:
        base = ns["framing"] if name == "rpc" else before
        adds = ns[name] if name in ("raw", "framing") else ns[name] - base
        print(f"  {name:<8} {ns[name]:8.0f} ns   adds {adds:7.0f} ns   ({ns['raw'] / ns[name]:.2f}x raw's rate)")
        before = ns[name]
    by_line = ns["fold_by_line"]
    print(
        f"  the fold by line (the exact path) {by_line:.0f} ns ({ns['raw'] / by_line:.2f}x raw's rate): the block"
        f" path saves {by_line - ns['fold']:.0f} ns per update ({by_line / ns['fold']:.2f}x the rate)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--stage", choices=STAGES, help="run one stage once (for callgrind)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.stage:
        lines = compare.stream_bytes(args.n[0])
        reads = reads_of(lines)
        print(RUN[args.stage](lines, reads))
        return
    out = {n: profile(n, args.rounds) for n in args.n}
    if args.json:
        print(json.dumps(out))
        return
    for n, ns in out.items():
        print_table(n, ns)


if __name__ == "__main__":
    main()
