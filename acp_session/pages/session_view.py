"""A recorded session as one self-contained web page (``acp-session view``): a timeline of the turns, filters by
kind, a search box, and a raw-wire pane with the JSON of the messages behind the selected item."""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from pathlib import Path
from typing import IO

import msgspec

from ..transcript import TranscriptEntry
from .html import embed_json_bytes, page_parts
from .item_store import LIVE_ITEMS
from .session_data import TimelineBuilder

__all__ = ["Progress", "render_transcript", "write_transcript_page"]

Progress = Callable[[str, int, int], None]
"""Told how far the page is: (what is being done, how much of it is done, how much there is)."""

REPORT_EVERY = 1 << 20
"""Bytes of transcript read between two calls of the progress callback."""


class _Row(msgspec.Struct):
    """One transcript line; the message stays raw JSON for the page and is decoded apart for the timeline."""

    t: float
    dir: str
    msg: msgspec.Raw = msgspec.Raw(b"null")
    raw: str | None = None


_rows = msgspec.json.Decoder(_Row)
_encode = msgspec.json.encode

STYLE = """
:root{--fg:#1d2228;--muted:#66707a;--line:#d8dde3;--bg:#f6f7f9;--card:#fff;--accent:#2f6feb}
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,sans-serif;color:var(--fg);background:var(--bg)}
header{position:sticky;top:0;z-index:1;background:var(--card);border-bottom:1px solid var(--line);padding:8px 14px}
header h1{font-size:16px;margin:0 0 6px}header .meta{color:var(--muted);font-size:12px}
#filters{display:flex;flex-wrap:wrap;gap:4px 10px;align-items:center;margin-top:6px}
#filters label{font-size:12px;white-space:nowrap}#search{width:260px;padding:3px 6px}
main{display:grid;grid-template-columns:minmax(0,3fr) minmax(0,2fr);gap:12px;padding:12px 14px}
#timeline{display:flex;flex-direction:column;gap:6px}
.item{background:var(--card);border:1px solid var(--line);border-left:4px solid var(--line);border-radius:4px;
padding:6px 10px;cursor:pointer}.item.selected{outline:2px solid var(--accent)}
.item .head{display:flex;gap:8px;align-items:baseline;flex-wrap:wrap}.item .kind{font-size:11px;
text-transform:uppercase;letter-spacing:.04em;color:var(--muted)}.item .title{font-weight:600}
.item .when,.item .extra{color:var(--muted);font-size:12px}.item pre{margin:4px 0 0;white-space:pre-wrap;
word-break:break-word;font:12px/1.4 ui-monospace,monospace;max-height:320px;overflow:auto}
.k-turn{border-left-color:#2f6feb;background:#eef4ff}.k-text{border-left-color:#1a7f37}
.k-thought{border-left-color:#8250df}.k-tool{border-left-color:#bf8700}.k-terminal{border-left-color:#57606a}
.k-permission{border-left-color:#cf222e}.k-plan{border-left-color:#0969da}.k-usage,.k-done{border-left-color:#6e7781}
.k-error{border-left-color:#cf222e;background:#fff0f0}.k-notice{border-left-color:#9a6700}
.k-compaction{border-left-color:#8c959f;background:#f6f8fa}.item.replayed{opacity:.75}
pre.diff span{display:block}pre.diff .add{color:#116329;background:#e6ffec}
pre.diff .del{color:#a40e26;background:#ffebe9}pre.diff .hunk{color:#0550ae;background:#ddf4ff}
pre.diff .meta{font-weight:600}#replayed-box{font-weight:600}
.hidden{display:none}#raw{position:sticky;top:96px;align-self:start;background:var(--card);
border:1px solid var(--line);border-radius:4px;padding:8px;max-height:calc(100vh - 110px);overflow:auto}
#raw h2{font-size:13px;margin:0 0 6px}#raw pre{margin:0 0 8px;white-space:pre-wrap;word-break:break-word;
font:12px/1.4 ui-monospace,monospace;border-top:1px solid var(--line);padding-top:6px}#count{color:var(--muted)}
"""

SCRIPT = """
"use strict";
const data = JSON.parse(document.getElementById("data").textContent);
const KINDS = ["turn","user","text","thought","tool","terminal","permission","plan","usage","done","notice",
  "compaction","error","state","request","notification","update"];
function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null && text !== "") node.textContent = String(text);
  return node;
}
function secs(value) { return typeof value === "number" ? value.toFixed(value < 10 ? 3 : 1) + " s" : ""; }
const header = el("header");
header.appendChild(el("h1", "", "Session transcript"));
const agentLine = [data.agent || "unknown agent", data.protocol ? "protocol v" + data.protocol : "",
  data.items.filter((i) => i.kind === "turn").length + " turns", data.messages.length + " messages"];
header.appendChild(el("div", "meta", agentLine.filter(Boolean).join(" \\u00b7 ")));
const filters = el("div"); filters.id = "filters";
const search = el("input"); search.id = "search"; search.type = "search"; search.placeholder = "Search";
filters.appendChild(search);
const present = KINDS.filter((k) => data.items.some((i) => i.kind === k));
const shown = new Set(present);
for (const kind of present) {
  const label = el("label"); const box = el("input"); box.type = "checkbox"; box.checked = true;
  box.dataset.kind = kind; box.addEventListener("change", () => {
    if (box.checked) shown.add(kind); else shown.delete(kind); apply(); });
  label.appendChild(box); label.appendChild(document.createTextNode(" " + kind)); filters.appendChild(label);
}
// A continued session (chat -c, resume) is replayed at the start of each run: shown once it is the only copy,
// hidden when the page already has the turns it repeats.
const firstReplay = data.items.findIndex((i) => i.replayed);
let showReplayed = firstReplay < 0 || !data.items.slice(0, firstReplay).some((i) => i.kind === "turn");
if (firstReplay >= 0) {
  const label = el("label"); label.id = "replayed-box"; const box = el("input"); box.type = "checkbox";
  box.id = "replayed"; box.checked = showReplayed;
  box.addEventListener("change", () => { showReplayed = box.checked; apply(); });
  label.appendChild(box); label.appendChild(document.createTextNode(" replayed history"));
  filters.appendChild(label);
}
const count = el("span"); count.id = "count"; filters.appendChild(count);
header.appendChild(filters);
document.body.appendChild(header);
const main = el("main"); const list = el("section"); list.id = "timeline";
const raw = el("aside"); raw.id = "raw"; raw.appendChild(el("h2", "", "Raw wire: select an item"));
main.appendChild(list); main.appendChild(raw); document.body.appendChild(main);
const rows = [];
data.items.forEach((item, index) => {
  const row = el("article", "item k-" + item.kind + (item.replayed ? " replayed" : ""));
  row.dataset.kind = item.kind; row.dataset.index = index;
  const head = el("div", "head");
  head.appendChild(el("span", "kind", item.kind));
  head.appendChild(el("span", "title", item.title || item.kind));
  const extra = [];
  if (item.replayed) extra.push("replayed");
  if (item.kind === "tool") extra.push([item.tool_kind, item.status].filter(Boolean).join(" "));
  if (item.kind === "tool" && item.name) extra.push(item.name);
  if (item.kind === "terminal" && item.status) extra.push(item.status);
  if (item.duration !== undefined) {
    extra.push(item.kind === "permission" ? "waited " + secs(item.wait) : secs(item.duration));
  }
  if (item.kind === "permission") extra.push("answer: " + (item.answer || "none"));
  if (item.replays) extra.push("replayed " + item.replays + " items");
  if (extra.filter(Boolean).length) head.appendChild(el("span", "extra", extra.filter(Boolean).join(" \\u00b7 ")));
  head.appendChild(el("span", "when", "+" + secs(item.t - data.started)));
  row.appendChild(head);
  if (item.kind === "permission" && item.options) {
    row.appendChild(el("div", "extra", "options: " + item.options.join(", ")));
  }
  if (item.text) row.appendChild(el("pre", "", item.text));
  if (item.diff) row.appendChild(diffView(item.diff));
  row.addEventListener("click", () => select(row, item));
  list.appendChild(row); rows.push([row, item, row.textContent.toLowerCase()]);
});
function diffView(text) {
  const pre = el("pre", "diff");
  for (const line of text.replace(/\\n$/, "").split("\\n")) {
    let cls = "";
    if (/^(diff |--- |\\+\\+\\+ |index |new file|deleted file|rename |similarity )/.test(line)) cls = "meta";
    else if (line.startsWith("@@")) cls = "hunk";
    else if (line.startsWith("+")) cls = "add";
    else if (line.startsWith("-")) cls = "del";
    pre.appendChild(el("span", cls, line || " "));
  }
  return pre;
}
let selected = null;
function select(row, item) {
  if (selected) selected.classList.remove("selected");
  selected = row; row.classList.add("selected");
  raw.replaceChildren(el("h2", "", "Raw wire: " + (item.title || item.kind)));
  for (const index of item.messages) {
    const message = data.messages[index];
    raw.appendChild(el("div", "extra", (message.dir === "out" ? "client \\u2192 agent" : "agent \\u2192 client") +
      " +" + secs(message.t)));
    const text = typeof message.msg === "string" ? message.msg : JSON.stringify(message.msg, null, 2);
    raw.appendChild(el("pre", "", text));
  }
}
function apply() {
  const needle = search.value.trim().toLowerCase(); let visible = 0;
  for (const [row, item, text] of rows) {
    const show = shown.has(item.kind) && (showReplayed || !item.replayed) && (!needle || text.includes(needle));
    row.classList.toggle("hidden", !show); if (show) visible++;
  }
  count.textContent = visible + " of " + rows.length + " items";
}
search.addEventListener("input", apply);
apply();
"""


class _JsonOut:
    """JSON text into the page's data element, made safe (``embed_json_bytes``) a block of whole values at a time:
    one pass over a megabyte instead of one call per message."""

    BLOCK = 1 << 20

    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.pending: list[bytes] = []
        self.size = 0

    def write(self, text: bytes) -> None:
        self.pending.append(text)
        self.size += len(text)
        if self.size >= self.BLOCK:
            self.flush()

    def flush(self) -> None:
        self.out.write(embed_json_bytes(b"".join(self.pending)))
        self.pending, self.size = [], 0


def write_transcript_page(
    path: str | os.PathLike[str],
    out: IO[bytes],
    *,
    spill_dir: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
    live_items: int = LIVE_ITEMS,
) -> None:
    """Write the page for the transcript at ``path`` (``ClientBuilder.record_transcript``, ``chat --record``) to
    ``out``, reading the transcript line by line: each wire message goes into the page as it was recorded (made
    safe for the script element) and into the timeline, whose items wait in an ``ItemStore`` (at most
    ``live_items`` in memory, the rest in a temporary file in ``spill_dir``). ``msgspec.DecodeError`` for a line
    that is not a transcript's; ``OSError`` from reading or writing."""
    head, tail = page_parts(f"{Path(path).name}: ACP session", style=STYLE, script=SCRIPT)
    builder = TimelineBuilder(spill_dir, live_items)
    try:
        out.write(head.encode())
        data = _JsonOut(out)
        data.write(b'{"messages":[')
        started = _messages(path, builder, data, progress)
        data.write(b'],"items":[')
        total = len(builder.store)
        for number, item in enumerate(builder.items()):
            data.write(item if number == 0 else b"," + item)
            if progress is not None and number % 65_536 == 0:
                progress("writing", number, total)
        data.write(b"]," + _encode({"agent": builder.agent, "protocol": builder.protocol, "started": started})[1:])
        data.flush()
        out.write(tail.encode())
    finally:
        builder.close()


def _messages(
    path: str | os.PathLike[str], builder: TimelineBuilder, data: _JsonOut, progress: Progress | None
) -> float:
    """Read the transcript into ``builder`` and its messages into ``data``; when the first one was sent."""
    started: float | None = None
    with open(path, "rb") as source:
        total = os.fstat(source.fileno()).st_size
        done = reported = index = 0
        for number, line in enumerate(source, 1):
            done += len(line)
            if not line.strip():
                continue
            try:
                row = _rows.decode(line)
            except msgspec.DecodeError as exc:
                raise msgspec.DecodeError(f"line {number}: {exc}") from None
            if started is None:
                started = row.t
            message = msgspec.json.decode(row.msg)
            builder.message(index, TranscriptEntry(row.t, row.dir, message, row.raw))  # type: ignore[arg-type]
            shown = bytes(row.msg) if row.raw is None else _encode(row.raw)
            first = b'{"t":' if index == 0 else b',{"t":'
            data.write(first + _encode(row.t - started) + b',"dir":' + _encode(row.dir) + b',"msg":' + shown + b"}")
            index += 1
            if progress is not None and done - reported >= REPORT_EVERY:
                progress("reading", done, total)
                reported = done
    return started if started is not None else 0.0


def render_transcript(path: str | os.PathLike[str]) -> str:
    """The page for the transcript at ``path``, as text (``write_transcript_page`` writes it by pieces)."""
    page = io.BytesIO()
    write_transcript_page(path, page)
    return page.getvalue().decode("utf-8", "replace")
