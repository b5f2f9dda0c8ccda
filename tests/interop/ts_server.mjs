// The official TypeScript SDK's ACP server (experimental/server AcpServer + experimental/node) serving a scripted
// v2 agent over Streamable HTTP and WebSocket on 127.0.0.1, for the remote transport tests of acp-session.
//
//   node tests/interop/ts_server.mjs [--record FILE] [--max-body BYTES] [--v1]
//
// Prints its URL (http://127.0.0.1:PORT/acp) as the first stdout line. Every response sets the cookie
// acp-affinity=node-1 (a load balancer's sticky-session cookie); with --record, every HTTP request is appended
// to FILE as one JSON line {method, url, cookie, connection, session, upgrade}, so tests see what came back.
// The agent, by the prompt's first word: "/permission" asks permission (allow-once approves), "/subagent" runs a
// child session (announced with subagent_update, its own updates under its id), "/slow N" streams
// N chunks 50 ms apart (for cancel and for killing the server mid-turn), anything else gets "You said: ..."
// streamed word by word (in mode "ask": "You asked: ..."). Config option: mode (ask, code).
// One agent app serves every connection and keeps the sessions: session/resume (baseline in v2) takes a session
// over from any connection and replays its history (user messages, chunks, tool calls) then its current state. A
// turn whose connection drops keeps running; what it sends meanwhile is kept for the replay; a permission question
// pending when it drops is asked again of the connection that resumes the session.
import { appendFileSync } from "node:fs";
import { createServer } from "node:http";
import { agent as agentV1 } from "@agentclientprotocol/sdk";
import { RequestError, agent } from "@agentclientprotocol/sdk/experimental/v2";
import { AcpServer } from "@agentclientprotocol/sdk/experimental/server";
import { createNodeHttpHandler, createNodeWebSocketUpgradeHandler } from "@agentclientprotocol/sdk/experimental/node";
import { WebSocketServer } from "ws";

const argv = process.argv.slice(2);
const option = (name) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
const recordPath = option("--record");
const maxBody = option("--max-body");
const COOKIE = "acp-affinity=node-1; Path=/; HttpOnly";
const STEP_MS = 50;

const sessions = new Map();
let sessionCount = 0;

function configOptions(session) {
  const options = [{ value: "ask", name: "Ask" }, { value: "code", name: "Code" }];
  return [{ type: "select", configId: "mode", name: "Mode", category: "mode", currentValue: session.mode, options }];
}

function openSession(sessionId) {
  const session = sessions.get(sessionId);
  if (!session || !session.open) throw new RequestError(-32002, "Resource not found", { sessionId });
  return session;
}

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => { clearTimeout(timer); reject(new Error("cancelled")); }, { once: true });
  });
}

// Every session update goes through the session's outbox, one at a time and in order, to the connection that has
// the session now (the last to prompt or resume it). What the session's history keeps is recorded first, so a
// send that fails (its connection went away) loses nothing: the turn goes on, and a resume replays it.
function send(session, update) {
  const client = session.client;
  const sent = session.outbox.then(() => client.notify("session/update", { sessionId: session.sessionId, update }));
  session.outbox = sent.catch(() => {});
  return session.outbox;
}

async function update(session, update) {
  if (session.history && update.sessionUpdate !== "state_update") session.history.push(update);
  await send(session, update);
}

function currentState(session) {
  if (session.turn) return { sessionUpdate: "state_update", state: "running" };
  return { sessionUpdate: "state_update", state: "idle", ...(session.stopReason ? { stopReason: session.stopReason } : {}) };
}

async function say(session, messageId, text, signal) {
  const words = text.split(" ");
  for (const [index, word] of words.entries()) {
    if (signal.aborted) throw new Error("cancelled");
    const piece = index < words.length - 1 ? `${word} ` : word;
    await update(session, { sessionUpdate: "agent_message_chunk", messageId, content: { type: "text", text: piece } });
  }
}

// A permission question whose connection goes away is asked again of the connection that resumes the session:
// over WebSocket the SDK rejects the request when its socket closes; over HTTP the old connection may live on, so a
// resume withdraws the question (session.resumed) instead of waiting on an answer that cannot come.
async function askUntilAnswered(session, question, signal) {
  for (;;) {
    const client = session.client;
    const withdrawn = new AbortController();
    session.withdraw = () => withdrawn.abort();
    try {
      const cancellationSignal = AbortSignal.any([signal, withdrawn.signal]);
      return await client.request("session/request_permission", question, { cancellationSignal, stopWaitingOnCancel: true });
    } catch (error) {
      if (signal.aborted) throw error;
      if (session.client === client) await new Promise((resolve) => { session.withdraw = resolve; });
    } finally {
      session.withdraw = null;
    }
  }
}

async function runTurn(session, text, controller) {
  const signal = controller.signal;
  const messageId = `msg-agent-${++session.count}`;
  let stopReason = "end_turn";
  try {
    if (text.startsWith("/slow")) {
      const count = Number(text.split(" ")[1] ?? 40);
      for (let index = 1; index <= count; index++) {
        await update(session, { sessionUpdate: "agent_message_chunk", messageId, content: { type: "text", text: `chunk ${index}. ` } });
        await sleep(STEP_MS, signal);
      }
    } else if (text.startsWith("/subagent")) {
      // A child session announced on the parent's stream; the server sends the child's own updates on the child's.
      const child = { ...session, sessionId: `${session.sessionId}-child`, history: null, outbox: Promise.resolve() };
      await update(session, { sessionUpdate: "subagent_update", sessionId: child.sessionId, title: "Reader", state: { sessionUpdate: "state_update", state: "running" } });
      await update(child, { sessionUpdate: "agent_message_chunk", messageId: "child-msg-1", content: { type: "text", text: "child says hi" } });
      const idle = { sessionUpdate: "state_update", state: "idle", stopReason: "end_turn" };
      await update(child, idle);
      await update(session, { sessionUpdate: "subagent_update", sessionId: child.sessionId, state: idle });
      await say(session, messageId, "Delegated.", signal);
    } else if (text.startsWith("/permission")) {
      const toolCallId = `tc-${session.count}`;
      await update(session, { sessionUpdate: "tool_call_update", toolCallId, name: "run", title: "rm -rf build/", kind: "execute", status: "pending" });
      const options = [
        { optionId: "allow-once", name: "Allow once", kind: "allow_once" },
        { optionId: "reject-once", name: "Reject", kind: "reject_once" },
      ];
      const question = { sessionId: session.sessionId, title: "Run it?", options, subject: { type: "tool_call", toolCall: { toolCallId } } };
      const answer = await askUntilAnswered(session, question, signal);
      const allowed = answer.outcome?.outcome === "selected" && answer.outcome.optionId === "allow-once";
      await update(session, { sessionUpdate: "tool_call_update", toolCallId, status: allowed ? "completed" : "failed" });
      await say(session, messageId, allowed ? "Done." : "Not allowed.", signal);
    } else {
      await say(session, messageId, `${session.mode === "ask" ? "You asked" : "You said"}: ${text}`, signal);
    }
  } catch (error) {
    if (!signal.aborted) process.stderr.write(`[ts-server] turn failed: ${error?.stack ?? error}\n`);
  }
  if (signal.aborted) stopReason = "cancelled";
  session.turn = null;
  session.stopReason = stopReason;
  await update(session, { sessionUpdate: "state_update", state: "idle", stopReason }).catch(() => {});
}

const app = agent({ name: "acp-remote-ts-server" })
  .onRequest("initialize", () => ({ protocolVersion: 2, info: { name: "acp-remote-ts-server", version: "1.0.0" }, capabilities: { session: { close: {} } } }))
  .onRequest("session/new", ({ params, client }) => {
    const session = {
      sessionId: `sess-${++sessionCount}`, cwd: params.cwd, open: true, mode: "code", count: 0, turn: null, stopReason: null,
      client, history: [], outbox: Promise.resolve(),
    };
    sessions.set(session.sessionId, session);
    return { sessionId: session.sessionId, configOptions: configOptions(session) };
  })
  .onRequest("session/resume", async ({ params, client }) => {
    // The sessions belong to this one app, not to a connection: any connection may take one over. The history
    // so far, then the current state, go out ahead of anything the running turn sends next (one outbox).
    const session = openSession(params.sessionId);
    const replayFrom = params.replayFrom ?? null;
    if (replayFrom !== null && replayFrom.type !== "start") throw RequestError.invalidParams({ replayFrom });
    session.client = client;
    session.withdraw?.();
    const replayed = replayFrom === null ? [] : session.history.slice();
    for (const entry of replayed) send(session, entry);
    await send(session, currentState(session));
    return { configOptions: configOptions(session) };
  })
  .onRequest("session/set_config_option", ({ params }) => {
    const session = openSession(params.sessionId);
    if (params.configId !== "mode" || !["ask", "code"].includes(params.value)) throw RequestError.invalidParams({ configId: params.configId });
    session.mode = params.value;
    return { configOptions: configOptions(session) };
  })
  .onRequest("session/prompt", async ({ params, client }) => {
    const session = openSession(params.sessionId);
    session.client = client;
    const text = params.prompt.filter((b) => b.type === "text").map((b) => b.text).join(" ").trim();
    const messageId = `msg-user-${++session.count}`;
    await update(session, { sessionUpdate: "state_update", state: "running" });
    await update(session, { sessionUpdate: "user_message", messageId, content: params.prompt });
    const controller = new AbortController();
    session.turn = controller;
    setTimeout(() => runTurn(session, text, controller), 0);
    return { messageId };
  })
  .onRequest("session/close", ({ params }) => {
    const session = sessions.get(params.sessionId);
    if (session) {
      session.turn?.abort();
      session.open = false;
    }
    return {};
  })
  .onNotification("session/cancel", ({ params }) => {
    const session = sessions.get(params.sessionId);
    session?.turn?.abort();
    session?.withdraw?.();
  });

// With --v1: a protocol version 1 agent instead (the SDK's v1 agent() app): a prompt is answered with its
// stop reason once its chunks went out.
const appV1 = agentV1({ name: "acp-remote-ts-server-v1" })
  .onRequest("initialize", () => ({ protocolVersion: 1, agentCapabilities: {}, agentInfo: { name: "acp-remote-ts-server-v1", version: "1.0.0" } }))
  .onRequest("session/new", () => ({ sessionId: `v1-sess-${++sessionCount}` }))
  .onRequest("session/prompt", async ({ params, client }) => {
    const text = params.prompt.filter((b) => b.type === "text").map((b) => b.text).join(" ").trim();
    const words = `You said: ${text}`.split(" ");
    for (const [index, word] of words.entries()) {
      const piece = index < words.length - 1 ? `${word} ` : word;
      await client.notify("session/update", { sessionId: params.sessionId, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: piece } } });
    }
    return { stopReason: "end_turn" };
  })
  .onNotification("session/cancel", () => {});

function record(req) {
  if (!recordPath) return;
  const row = {
    method: req.method,
    cookie: req.headers.cookie ?? null,
    authorization: req.headers.authorization ?? null,
    connection: req.headers["acp-connection-id"] ?? null,
    session: req.headers["acp-session-id"] ?? null,
    upgrade: req.headers.upgrade ?? null,
  };
  appendFileSync(recordPath, JSON.stringify(row) + "\n");
}

const acp = new AcpServer({ agent: argv.includes("--v1") ? appV1 : app });
const handler = createNodeHttpHandler(acp, maxBody ? { maxRequestBodyBytes: Number(maxBody) } : {});
const http = createServer((req, res) => {
  record(req);
  res.setHeader("Set-Cookie", COOKIE);
  handler(req, res);
});
const wss = new WebSocketServer({ noServer: true });
wss.on("headers", (headers) => headers.push(`Set-Cookie: ${COOKIE}`));
const upgrade = createNodeWebSocketUpgradeHandler(acp, wss);
http.on("upgrade", (req, socket, head) => {
  record(req);
  upgrade(req, socket, head);
});
http.listen(0, "127.0.0.1", () => {
  process.stdout.write(`http://127.0.0.1:${http.address().port}/acp\n`);
});
