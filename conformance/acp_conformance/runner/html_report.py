"""``acp-conformance --html FILE``: the report as one self-contained web page (the same data as ``--json``): the
verdict, the counts per tier, every check by tier with its status, and each failure with its message and the
excerpt of the wire it failed on. Built on ``acp_session.pages.html``: the agent's text is data, shown as text."""

from __future__ import annotations

import json
from collections.abc import Sequence

from acp_session.pages.html import render_page

from .report import to_json
from .run import RunReport
from .verdict import Verdict

__all__ = ["html_report"]

STYLE = """
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,sans-serif;color:#1d2228;background:#f6f7f9}
header{background:#fff;border-bottom:1px solid #d8dde3;padding:10px 14px}h1{font-size:17px;margin:0 0 4px}
.meta{color:#66707a;font-size:12px}.verdict{font-weight:700;font-size:15px;margin:6px 0}
.verdict.ok{color:#1a7f37}.verdict.bad{color:#cf222e}#tools{margin-top:6px;display:flex;gap:10px;flex-wrap:wrap}
main{padding:10px 14px}h2{font-size:14px;margin:14px 0 6px}
.check{background:#fff;border:1px solid #d8dde3;border-left:4px solid #d8dde3;border-radius:4px;padding:5px 9px;
margin:4px 0}.check .id{font:12px ui-monospace,monospace;color:#66707a}.check .title{font-weight:600}
.s-PASS{border-left-color:#1a7f37}.s-FAIL{border-left-color:#cf222e;background:#fff0f0}
.s-SKIPPED,.s-NOT_TESTED{border-left-color:#8c959f}.status{font-size:11px;font-weight:700;margin-right:6px}
pre{margin:4px 0 0;white-space:pre-wrap;word-break:break-word;font:12px/1.4 ui-monospace,monospace;
max-height:300px;overflow:auto;background:#f6f8fa;padding:4px}.hidden{display:none}
"""

SCRIPT = """
"use strict";
const data = JSON.parse(document.getElementById("data").textContent);
function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null && text !== "") node.textContent = String(text);
  return node;
}
const header = el("header");
header.appendChild(el("h1", "", "ACP conformance report"));
const info = data.agentInfo ? [data.agentInfo.name, data.agentInfo.version].filter(Boolean).join(" ") : "";
header.appendChild(el("div", "meta", [data.agent, info, data.checkSet, data.seconds + " s"].filter(Boolean)
  .join(" \\u00b7 ")));
const verdict = data.verdict || {};
const verdictText = "Verdict: " + String(verdict.verdict).toUpperCase();
header.appendChild(el("div", "verdict " + (verdict.conformant ? "ok" : "bad"), verdictText));
const counts = Object.entries(data.summary || {}).map(([k, v]) => k + ": " + v).join(", ");
header.appendChild(el("div", "meta", counts));
const tiers = Object.entries(verdict.tier_counts || {}).map(([tier, c]) => tier + " " + JSON.stringify(c));
if (tiers.length) header.appendChild(el("div", "meta", "tiers: " + tiers.join("; ")));
if (data.problem) header.appendChild(el("pre", "", data.problem));
const tools = el("div"); tools.id = "tools";
const search = el("input"); search.id = "search"; search.type = "search"; search.placeholder = "Search";
const failedOnly = el("input"); failedOnly.type = "checkbox"; failedOnly.id = "failed-only";
const label = el("label"); label.appendChild(failedOnly); label.appendChild(document.createTextNode(" failures only"));
tools.appendChild(search); tools.appendChild(label); header.appendChild(tools);
document.body.appendChild(header);
const main = el("main"); document.body.appendChild(main);
const rows = [];
const byTier = new Map();
for (const check of data.checks) {
  if (!byTier.has(check.tier)) byTier.set(check.tier, []);
  byTier.get(check.tier).push(check);
}
for (const [tier, checks] of byTier) {
  main.appendChild(el("h2", "", "Tier: " + tier));
  for (const check of checks) {
    const row = el("div", "check s-" + check.status);
    row.appendChild(el("span", "status", check.status));
    row.appendChild(el("span", "title", check.title));
    row.appendChild(document.createTextNode(" "));
    row.appendChild(el("span", "id", check.id + (check.ruleIds && check.ruleIds.length ? " (" +
      check.ruleIds.join(", ") + ")" : "")));
    if (check.message) row.appendChild(el("pre", "", check.message));
    if (check.transcript && check.transcript.length) {
      const lines = check.transcript.map((w) => (w.direction === "out" ? "\\u2192 " : "\\u2190 ") + w.line);
      row.appendChild(el("pre", "wire", lines.join("\\n")));
    }
    if (check.stderrTail && check.stderrTail.length) row.appendChild(el("pre", "stderr", check.stderrTail.join("\\n")));
    if (check.rerun) row.appendChild(el("div", "meta", "rerun: " + check.rerun));
    main.appendChild(row); rows.push([row, check, row.textContent.toLowerCase()]);
  }
}
function apply() {
  const needle = search.value.trim().toLowerCase();
  for (const [row, check, text] of rows) {
    const show = (!failedOnly.checked || check.status === "FAIL") && (!needle || text.includes(needle));
    row.classList.toggle("hidden", !show);
  }
}
search.addEventListener("input", apply); failedOnly.addEventListener("change", apply);
"""


def html_report(report: RunReport, base: Sequence[str] = (), verdict: Verdict | None = None) -> str:
    """The page for ``report`` (the ``--json`` data, rendered by the page's script as text only)."""
    data = json.loads(to_json(report, base, verdict))
    return render_page("ACP conformance report", data, style=STYLE, script=SCRIPT)
