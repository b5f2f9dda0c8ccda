"""``--html FILE`` (agent and client mode): the JSON report as one self-contained web page a person can read.

At the top the verdict (with what a partial run left out), a table of the counts per tier with what each tier
means, then the checks that decide the verdict and every other failure; the remaining checks follow by tier.
A failure shows its message and an excerpt of the wire around the line it is about (``offendingLine``),
highlighted, each line marked by direction (sent, received), the whole transcript one click away; the rerun
command only where it helps (a failure or a warning in a run of several checks). Built on
``acp_session.pages.html``: the subject's text is data, shown as text only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from acp_session.pages.html import render_page

from .report import to_json
from .run import RunReport
from .verdict import Verdict

__all__ = ["html_report", "render_report"]

STYLE = """
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,sans-serif;color:#1d2228;background:#f6f7f9}
header{background:#fff;border-bottom:1px solid #d8dde3;padding:10px 14px}h1{font-size:17px;margin:0 0 4px}
.meta{color:#66707a;font-size:12px}.verdict{font-weight:700;font-size:15px;margin:6px 0}
.verdict.ok{color:#1a7f37}.verdict.partial{color:#9a6700}.verdict.bad{color:#cf222e}
#tools{margin-top:8px;display:flex;gap:10px;flex-wrap:wrap}main{padding:10px 14px}h2{font-size:14px;margin:14px 0 6px}
table.tiers{border-collapse:collapse;margin:8px 0;font-size:12px;background:#fff}
.tiers th,.tiers td{border:1px solid #d8dde3;padding:2px 8px;text-align:left}.tiers td.n{text-align:right}
.tiers td.zero{color:#b0b7be}.tiers td.hot{color:#cf222e;font-weight:700}
.check{background:#fff;border:1px solid #d8dde3;border-left:4px solid #d8dde3;border-radius:4px;padding:5px 9px;
margin:4px 0}.check .id,.check .tier{font:12px ui-monospace,monospace;color:#66707a}.check .title{font-weight:600}
.s-PASS{border-left-color:#1a7f37}.s-FAIL{border-left-color:#cf222e;background:#fff8f8}
.s-SKIPPED,.s-NOT_TESTED{border-left-color:#8c959f}.warned{border-left-color:#bf8700}
.status{font-size:11px;font-weight:700;margin-right:6px}
pre{margin:4px 0 0;white-space:pre-wrap;word-break:break-word;font:12px/1.4 ui-monospace,monospace;
background:#f6f8fa;padding:4px}.legend{font-size:11px;color:#66707a;margin-top:6px}
.wire{margin-top:2px;font:12px/1.4 ui-monospace,monospace;background:#f6f8fa;padding:4px}
.line{white-space:pre-wrap;word-break:break-all;padding:1px 3px;border-left:3px solid transparent}
.line .arrow{font-weight:700;margin-right:6px}.line .t{color:#8c959f;margin-right:6px}
.line.sent .arrow{color:#0550ae}.line.received .arrow{color:#116329}
.line.sent{background:#eef4fb}.line.received{background:#f1f8f2}
.line.offending{background:#fff1b8;border-left-color:#cf222e;font-weight:600}
.line .mark{color:#cf222e;margin-left:8px;font-weight:700}.gap{color:#8c959f;font-style:italic;padding:1px 3px}
details{margin-top:4px;font-size:12px}.rerun{font:12px ui-monospace,monospace;color:#66707a;margin-top:4px}
.hidden{display:none}
"""

SCRIPT = """
"use strict";
const data = JSON.parse(document.getElementById("data").textContent);
const client = data.mode === "client";
const BEFORE = 6, AFTER = 3, SHORT = 300, LONG = 2000;
const TIERS = {
  MANDATORY: "every " + (client ? "client" : "agent") + " must; a failure, or the check not run, decides",
  CAPABILITY: "a must once the feature is offered; a failure decides",
  ADVISORY: "a should; never decides",
  INFORMATIONAL: "recorded only",
};
const STATUSES = ["PASS", "FAIL", "SKIPPED", "NOT_TESTED"];
function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null && text !== "") node.textContent = String(text);
  return node;
}
function clip(text, limit) {
  return text.length > limit ? text.slice(0, limit) + " \\u2026 (" + (text.length - limit) + " more characters)" : text;
}
const verdict = data.verdict || {};
const notRun = verdict.not_run || [];
const unit = verdict.runs_total !== undefined ? "runs played" : "checks run";
const total = verdict.runs_total !== undefined ? verdict.runs_total : verdict.checks_total;
const covered = verdict.runs_total !== undefined ? verdict.runs_played : verdict.checks_run;

const header = el("header");
header.appendChild(el("h1", "", client ? "ACP client conformance report" : "ACP conformance report"));
const info = data.agentInfo ? [data.agentInfo.name, data.agentInfo.version].filter(Boolean).join(" ") : "";
const subject = client ? "client: " + data.client : data.agent;
header.appendChild(el("div", "meta", [subject, info, data.checkSet, data.seconds + " s"].filter(Boolean)
  .join(" \\u00b7 ")));
let label = String(verdict.verdict).toUpperCase();
const coverage = covered + " of " + total + " " + unit;
if (verdict.verdict === "partial") label += ": " + coverage + (verdict.selection ? " (" + verdict.selection + ")" : "");
else if (notRun.length) label += " (" + coverage + (verdict.selection ? ": " + verdict.selection : "") + ")";
const tone = verdict.verdict === "conformant" ? "ok" : verdict.verdict === "partial" ? "partial" : "bad";
header.appendChild(el("div", "verdict " + tone, "Verdict: " + label));
if (notRun.length) header.appendChild(el("div", "meta", "not run (" + notRun.length + "): " + notRun.join(", ")));
if (data.problem) header.appendChild(el("pre", "", "Not checked: " + data.problem));
const table = el("table", "tiers");
const head = el("tr");
for (const name of ["tier", "meaning", ...STATUSES]) head.appendChild(el("th", "", name));
table.appendChild(head);
for (const [tier, counts] of Object.entries(verdict.tier_counts || {})) {
  const row = el("tr");
  row.appendChild(el("td", "", tier));
  row.appendChild(el("td", "", TIERS[tier] || ""));
  for (const status of STATUSES) {
    const n = counts[status] || 0;
    const hot = n && (status === "FAIL" || status === "NOT_TESTED") && (tier === "MANDATORY" ||
      (status === "FAIL" && tier === "CAPABILITY"));
    row.appendChild(el("td", "n" + (n ? (hot ? " hot" : "") : " zero"), String(n)));
  }
  table.appendChild(row);
}
header.appendChild(table);
const baseline = data.baseline || verdict.baseline || {};
for (const [key, text] of [["known", "known failures (baseline)"], ["new", "new failures (not in the baseline)"],
  ["stale", "stale baseline entries (now passing; remove them)"], ["unused", "baseline entries not run"]]) {
  const ids = baseline[key] || [];
  if (ids.length) header.appendChild(el("div", "meta", text + ": " + ids.join(", ")));
}
const tools = el("div"); tools.id = "tools";
const search = el("input"); search.id = "search"; search.type = "search"; search.placeholder = "Search";
const failedOnly = el("input"); failedOnly.type = "checkbox"; failedOnly.id = "failed-only";
const filter = el("label");
filter.appendChild(failedOnly); filter.appendChild(document.createTextNode(" failures only"));
tools.appendChild(search); tools.appendChild(filter); header.appendChild(tools);
document.body.appendChild(header);

function wireLine(w, offending) {
  const sent = w.direction === "sent";
  const line = el("div", "line " + (sent ? "sent" : "received") + (offending ? " offending" : ""));
  line.appendChild(el("span", "arrow", sent ? "\\u2192" : "\\u2190"));
  line.appendChild(el("span", "t", Number(w.seconds).toFixed(3) + "s"));
  line.appendChild(el("span", "text", clip(w.line, offending ? LONG : SHORT)));
  if (offending) line.appendChild(el("span", "mark", "\\u25c0 the failure"));
  return line;
}
function wire(check) {
  const lines = check.transcript;
  const box = el("div");
  box.appendChild(el("div", "legend", client
    ? "\\u2192 sent by the client \\u00b7 \\u2190 sent by the scripted agent"
    : "\\u2192 sent by the runner \\u00b7 \\u2190 sent by the agent"));
  const focus = Number.isInteger(check.offendingLine) ? check.offendingLine : lines.length - 1;
  const from = Math.max(0, focus - BEFORE), to = Math.min(lines.length, focus + AFTER + 1);
  const excerpt = el("div", "wire excerpt");
  if (from > 0) excerpt.appendChild(el("div", "gap", "\\u2026 " + from + " earlier line(s)"));
  for (let i = from; i < to; i++) excerpt.appendChild(wireLine(lines[i], i === focus));
  if (to < lines.length) excerpt.appendChild(el("div", "gap", "\\u2026 " + (lines.length - to) + " later line(s)"));
  box.appendChild(excerpt);
  if (to - from < lines.length) {
    const all = el("details");
    all.appendChild(el("summary", "", "the whole transcript (" + lines.length + " lines)"));
    const full = el("div", "wire full");
    lines.forEach((w, i) => full.appendChild(wireLine(w, i === focus)));
    all.appendChild(full);
    box.appendChild(all);
  }
  return box;
}
const rows = [];
function render(check, showTier) {
  const warned = check.status === "PASS" && check.warnings && check.warnings.length;
  const row = el("div", "check s-" + check.status + (warned ? " warned" : ""));
  row.appendChild(el("span", "status", warned ? "WARN" : check.status));
  row.appendChild(el("span", "title", check.title));
  row.appendChild(document.createTextNode(" "));
  const ids = check.ruleIds && check.ruleIds.length ? check.ruleIds : [];
  row.appendChild(el("span", "id", check.id + (ids.length ? " (" + ids.join(", ") + ")" : "")));
  if (showTier) row.appendChild(el("span", "tier", " \\u00b7 " + check.tier));
  if (check.message) row.appendChild(el("pre", "message", check.message));
  if (check.transcript && check.transcript.length) row.appendChild(wire(check));
  if (check.stderrTail && check.stderrTail.length) {
    row.appendChild(el("div", "legend", "stderr, its last lines"));
    row.appendChild(el("pre", "stderr", check.stderrTail.join("\\n")));
  }
  const helps = check.status === "FAIL" || warned;
  if (check.rerun && helps && data.checks.length > 1) row.appendChild(el("div", "rerun", "rerun: " + check.rerun));
  rows.push([row, check, row.textContent.toLowerCase()]);
  return row;
}
const main = el("main"); document.body.appendChild(main);
const deciding = new Set(verdict.deciding || []);
const first = [
  ["Deciding the verdict: failures", (c) => deciding.has(c.id) && c.status === "FAIL"],
  ["Other failures (they do not decide)", (c) => !deciding.has(c.id) && c.status === "FAIL"],
  ["Deciding the verdict: not tested", (c) => deciding.has(c.id) && c.status !== "FAIL"],
];
const shown = new Set();
for (const [title, chosen] of first) {
  const checks = data.checks.filter(chosen);
  if (!checks.length) continue;
  const section = el("section", "top"); section.appendChild(el("h2", "", title));
  for (const check of checks) { section.appendChild(render(check, true)); shown.add(check.id); }
  main.appendChild(section);
}
const byTier = new Map(Object.keys(TIERS).map((tier) => [tier, []]));
for (const check of data.checks) {
  if (shown.has(check.id)) continue;
  if (!byTier.has(check.tier)) byTier.set(check.tier, []);
  byTier.get(check.tier).push(check);
}
for (const [tier, checks] of byTier) {
  if (!checks.length) continue;
  const section = el("section", "tier"); section.appendChild(el("h2", "", "Tier: " + tier));
  for (const check of checks) section.appendChild(render(check, false));
  main.appendChild(section);
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


def render_report(data: dict[str, Any], title: str = "ACP conformance report") -> str:
    """The page for a JSON report, agent mode's or client mode's (``mode: client``)."""
    return render_page(title, data, style=STYLE, script=SCRIPT)


def html_report(report: RunReport, base: Sequence[str] = (), verdict: Verdict | None = None) -> str:
    """The page for an agent-mode run (the ``--json`` data, rendered by the page's script as text only)."""
    return render_report(json.loads(to_json(report, base, verdict)))
