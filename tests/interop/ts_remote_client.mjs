// The official TypeScript SDK's v2 client() app over its remote transports, driving `acp-reference-agent --listen`.
//
//   node tests/interop/ts_remote_client.mjs --profile http|ws --cwd DIR --url http://HOST:PORT/acp
//
// --profile http uses experimental/http-client createHttpStream (POST + SSE), ws uses experimental/ws-client
// createWebSocketStream (with the pinned npm `ws`, at the same URL as ws:// or wss://). Runs the steps below on ONE connection (two sessions at once),
// prints one JSON summary {"ok", "agent", "steps": [{"name", "ok", "detail" | "error"}]} and exits 1 when a step
// failed. The steps use the reference agent's /scenarios.
import { client, RequestError } from "@agentclientprotocol/sdk/experimental/v2";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import { WebSocket } from "ws";

const argv = process.argv.slice(2);
const option = (name) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
const profile = option("--profile") ?? "http";
const cwd = option("--cwd") ?? process.cwd();
const httpUrl = option("--url");
const url = profile === "ws" ? httpUrl.replace(/^http/, "ws") : httpUrl; // ws:// or wss:// for the upgrade
const STEP_TIMEOUT_MS = 15000;

function check(condition, message) {
  if (!condition) throw new Error(message);
}

function same(actual, expected, what) {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  check(a === e, `${what}: expected ${e}, got ${a}`);
}

let permissionMode = "allow"; // "allow" | "hold" (answered cancelled once the agent withdraws the request)
const permissionLog = [];
let permissionAsked = null;

const app = client({ name: "acp-session-remote-interop" }).onRequest("session/request_permission", async ({ params, signal }) => {
  const entry = { sessionId: params.sessionId, toolCallId: params.subject?.toolCall?.toolCallId, withdrawn: false };
  permissionLog.push(entry);
  permissionAsked?.(entry);
  if (permissionMode === "allow") return { outcome: { outcome: "selected", optionId: "allow-once" } };
  await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
  entry.withdrawn = true;
  return { outcome: { outcome: "cancelled" } };
});

function expectPermission() {
  return new Promise((resolve) => (permissionAsked = resolve));
}

async function untilIdle(session) {
  const seen = { text: "", thoughts: "", chunks: 0, states: [], users: [], toolStatuses: [], stopReason: undefined };
  for (;;) {
    const message = await session.nextUpdate();
    const update = message.update;
    if (message.kind === "stop") {
      seen.states.push("idle");
      seen.stopReason = message.stopReason;
      return seen;
    }
    if (update.sessionUpdate === "state_update") seen.states.push(update.state);
    if (update.sessionUpdate === "agent_message_chunk" && update.content.type === "text") {
      seen.text += update.content.text;
      seen.chunks += 1;
    }
    if (update.sessionUpdate === "agent_thought_chunk" && update.content.type === "text") seen.thoughts += update.content.text;
    if (update.sessionUpdate === "user_message") seen.users.push(update.messageId);
    if (update.sessionUpdate === "tool_call_update" && update.status) seen.toolStatuses.push(update.status);
  }
}

async function nextOfKind(session, kind) {
  for (;;) {
    const message = await session.nextUpdate();
    if (message.update.sessionUpdate === kind) return message.update;
    check(message.kind !== "stop", `work ended before a ${kind} update`);
  }
}

const steps = [];
let agentInfo = null;

async function step(name, fn) {
  let timer;
  try {
    const timeout = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${STEP_TIMEOUT_MS} ms`)), STEP_TIMEOUT_MS)));
    const detail = await Promise.race([fn(), timeout]);
    steps.push({ name, ok: true, detail: detail ?? null });
  } catch (error) {
    steps.push({ name, ok: false, error: String(error?.stack ?? error) });
  } finally {
    clearTimeout(timer);
  }
}

const stream = profile === "ws" ? createWebSocketStream(url, { WebSocket }) : createHttpStream(url);
const connection = app.connect(stream);
const agent = connection.agent;
let one;
let two;

await step("initialize", async () => {
  const response = await agent.request("initialize", { protocolVersion: 2, info: { name: "acp-session-remote-interop", version: "1.0.0" }, capabilities: {} });
  agentInfo = response.info;
  same(response.protocolVersion, 2, "protocol version");
  return `${response.info.name} ${response.info.version}`;
});

await step("two sessions at once", async () => {
  one = await agent.buildSession(cwd).start();
  two = await agent.buildSession(cwd).start();
  check(one.sessionId !== two.sessionId, "the two sessions share an id");
  const [a, b] = await Promise.all([one.prompt("hello"), two.prompt("/thought")]);
  const [seenOne, seenTwo] = await Promise.all([untilIdle(one), untilIdle(two)]);
  same(seenOne.users, [a.messageId], "first session's user message");
  same(seenTwo.users, [b.messageId], "second session's user message");
  check(seenOne.text.startsWith("Hello! I am the ACP reference agent."), `first reply ${JSON.stringify(seenOne.text)}`);
  same([seenTwo.thoughts, seenTwo.text], ["Let me think. The answer is 42.", "42."], "second session's turn");
  return [one.sessionId, two.sessionId];
});

await step("streamed text", async () => {
  await one.prompt("/slow 12");
  const seen = await untilIdle(one);
  same(seen.stopReason, "end_turn", "stop reason");
  check(seen.chunks >= 12 && seen.text.includes("chunk 12."), `streamed ${seen.chunks} chunks: ${JSON.stringify(seen.text)}`);
  return seen.chunks;
});

await step("permission allowed", async () => {
  permissionMode = "allow";
  await two.prompt("/permission");
  const seen = await untilIdle(two);
  same(seen.toolStatuses, ["pending", "in_progress", "completed"], "tool call statuses");
  same(seen.states, ["running", "requires_action", "running", "idle"], "states");
  same(seen.text, "Done: build/ was removed.", "reply");
  same(permissionLog.at(-1).sessionId, two.sessionId, "the permission request's session");
});

await step("cancel with a pending permission request", async () => {
  permissionMode = "hold";
  const asked = expectPermission();
  await one.prompt("/permission");
  const entry = await asked;
  await agent.notify("session/cancel", { sessionId: one.sessionId });
  const seen = await untilIdle(one);
  same(seen.stopReason, "cancelled", "stop reason");
  same(seen.toolStatuses.at(-1), "cancelled", "final tool call status");
  same(entry.withdrawn, true, "permission request withdrawn by $/cancel_request");
  permissionMode = "allow";
});

await step("cancel a streaming turn", async () => {
  await two.prompt("/slow 200");
  await nextOfKind(two, "agent_message_chunk");
  await agent.notify("session/cancel", { sessionId: two.sessionId });
  const seen = await untilIdle(two);
  same(seen.stopReason, "cancelled", "stop reason");
  check(!seen.text.includes("chunk 200."), "the turn ran to its end");
});

await step("config options", async () => {
  const { configOptions } = await one.setConfigOption({ configId: "mode", type: "id", value: "ask" });
  same(configOptions.find((o) => o.configId === "mode").currentValue, "ask", "mode after setting it");
  await one.prompt("what is this");
  const seen = await untilIdle(one);
  same(seen.text, "You asked: what is this", "reply in ask mode");
});

await step("closing one session while the other goes on", async () => {
  await one.prompt("/slow 10");
  await nextOfKind(one, "agent_message_chunk");
  await agent.request("session/close", { sessionId: two.sessionId });
  let refused = null;
  try {
    await two.prompt("after close");
  } catch (error) {
    refused = error;
  }
  check(refused instanceof RequestError && refused.code === -32002, `prompt to the closed session: ${refused}`);
  const seen = await untilIdle(one);
  same(seen.stopReason, "end_turn", "the other session's turn");
  check(seen.text.includes("chunk 10."), `the other session's reply ${JSON.stringify(seen.text)}`);
});

connection.close();
await new Promise((resolve) => setTimeout(resolve, 200)); // let the DELETE (HTTP) or the close frame go out
const ok = steps.every((s) => s.ok);
process.stdout.write(JSON.stringify({ ok, agent: agentInfo, steps }) + "\n");
process.exit(ok ? 0 : 1);
