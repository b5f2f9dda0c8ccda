"""A recorded session as one self-contained web page (``acp-session view``): a timeline of the turns, filters by
kind, a search box, and a raw-wire pane with the JSON of the messages behind the selected item."""

from __future__ import annotations

import os
from pathlib import Path

from ..transcript import read_transcript
from .html import render_page
from .session_data import timeline

__all__ = ["render_session", "render_transcript"]

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
.hidden{display:none}#raw{position:sticky;top:96px;align-self:start;background:var(--card);
border:1px solid var(--line);border-radius:4px;padding:8px;max-height:calc(100vh - 110px);overflow:auto}
#raw h2{font-size:13px;margin:0 0 6px}#raw pre{margin:0 0 8px;white-space:pre-wrap;word-break:break-word;
font:12px/1.4 ui-monospace,monospace;border-top:1px solid var(--line);padding-top:6px}#count{color:var(--muted)}
"""

SCRIPT = """
"use strict";
const data = JSON.parse(document.getElementById("data").textContent);
const KINDS = ["turn","user","text","thought","tool","terminal","permission","plan","usage","done","notice",
  "error","state","request","notification","update"];
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
  if (extra.filter(Boolean).length) head.appendChild(el("span", "extra", extra.filter(Boolean).join(" \\u00b7 ")));
  head.appendChild(el("span", "when", "+" + secs(item.t - data.started)));
  row.appendChild(head);
  if (item.kind === "permission" && item.options) {
    row.appendChild(el("div", "extra", "options: " + item.options.join(", ")));
  }
  if (item.text) row.appendChild(el("pre", "", item.text));
  row.addEventListener("click", () => select(row, item));
  list.appendChild(row); rows.push([row, item, row.textContent.toLowerCase()]);
});
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
    const show = shown.has(item.kind) && (!needle || text.includes(needle));
    row.classList.toggle("hidden", !show); if (show) visible++;
  }
  count.textContent = visible + " of " + rows.length + " items";
}
search.addEventListener("input", apply);
apply();
"""


def render_session(entries_title: str, data: dict[str, object]) -> str:
    return render_page(entries_title, data, style=STYLE, script=SCRIPT)


def render_transcript(path: str | os.PathLike[str]) -> str:
    """The page for the transcript at ``path`` (``ClientBuilder.record_transcript``, ``chat --record``)."""
    return render_session(f"{Path(path).name}: ACP session", timeline(read_transcript(path)))
