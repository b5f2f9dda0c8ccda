// An ACP v2 client built on the official TypeScript SDK's v2 client() app, driving acp-session's reference agent.
//
//   node tests/interop/ts_client.mjs [--cwd DIR] [--steps NAME,NAME...] -- AGENT_COMMAND [ARGS...]
//
// --steps runs only the named steps (in their usual order; "initialize" and "session/new" are needed by all).
// Runs every step below against the agent (which must be the reference agent: the steps use its /scenarios),
// prints one JSON summary {"ok", "agent", "steps": [{"name", "ok", "detail" | "error"}]} on stdout and exits 1
// when a step failed. The agent's stderr is passed through.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { client, ndJsonStream } from "@agentclientprotocol/sdk/experimental/v2";
import {
  cancelStreamingTurn,
  cancelWithPendingPermission,
  check,
  expectError,
  nextOfKind,
  permissionDesk,
  rejects,
  same,
  settle,
  stepRunner,
  untilIdle,
} from "./ts_client_steps.mjs";

const argv = process.argv.slice(2);
const dashes = argv.indexOf("--");
if (dashes < 0 || dashes === argv.length - 1) {
  process.stderr.write("usage: node ts_client.mjs [--cwd DIR] [--steps NAME,NAME...] -- AGENT_COMMAND [ARGS...]\n");
  process.exit(2);
}
const options = argv.slice(0, dashes);
const option = (name) => (options.includes(name) ? options[options.indexOf(name) + 1] : undefined);
const cwd = option("--cwd") ?? process.cwd();
const only = option("--steps")?.split(",");
const [command, ...commandArgs] = argv.slice(dashes + 1);

const STEP_TIMEOUT_MS = 8000;

// -- permission answers, chosen per step ----------------------------------------------------------------

const desk = permissionDesk();
const app = client({ name: "acp-session-interop-ts-client" }).onRequest("session/request_permission", desk.handler);

// -- the steps -------------------------------------------------------------------------------------------

const { steps, step } = stepRunner(STEP_TIMEOUT_MS, only);
let agentInfo = null;

const child = spawn(command, commandArgs, { stdio: ["pipe", "pipe", "inherit"] });
const connection = app.connect(ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)));
const agent = connection.agent;

let session;

await step("initialize", async () => {
  const response = await agent.request("initialize", { protocolVersion: 2, info: { name: "acp-session-interop-ts-client", version: "1.0.0" }, capabilities: {} });
  agentInfo = response.info;
  same(response.protocolVersion, 2, "protocol version");
  same(response.info.name, "acp-reference-agent", "agent name");
  return `${response.info.name} ${response.info.version}`;
});

await step("session/new", async () => {
  session = await agent.buildSession(cwd).start();
  same(session.configOptions.map((o) => [o.configId, o.currentValue]), [["mode", "code"], ["thoughts", false]], "config options");
  check(session.newSessionResponse.availableCommands.some((c) => c.name === "permission"), "no /permission command advertised");
  return session.sessionId;
});

await step("prompt", async () => {
  const { messageId } = await session.prompt("hello");
  const seen = await untilIdle(session);
  same(seen.users, [messageId], "user message echo");
  same(seen.stopReason, "end_turn", "stop reason");
  check(seen.text.startsWith("Hello! I am the ACP reference agent."), `reply ${JSON.stringify(seen.text)}`);
  same(seen.states[0], "running", "first state");
  return seen.text;
});

await step("streaming thoughts and text", async () => {
  await session.prompt("/thought");
  const seen = await untilIdle(session);
  same([seen.thoughts, seen.text, seen.stopReason], ["Let me think. The answer is 42.", "42.", "end_turn"], "thought turn");
  return seen.kinds.join(",");
});

await step("streaming a tool call", async () => {
  await session.prompt("/tool");
  const seen = await untilIdle(session);
  const calls = Object.entries(seen.toolCalls);
  same(calls.length, 1, "tool calls");
  const [, call] = calls[0];
  same(call.statuses, ["pending", "in_progress", "completed"], "tool call statuses");
  same(call.chunks, 4, "tool call content chunks (three texts and a diff)");
  same(seen.text, "I changed one line in example.txt.", "reply");
  return calls[0][0];
});

await step("permission allowed", async () => {
  desk.mode = "allow";
  await session.prompt("/permission");
  const seen = await untilIdle(session);
  const [call] = Object.values(seen.toolCalls);
  same(call.statuses, ["pending", "in_progress", "completed"], "tool call statuses");
  same(seen.states, ["running", "requires_action", "running", "idle"], "states");
  same(seen.text, "Done: build/ was removed.", "reply");
  same(desk.log.at(-1).options, ["allow-once", "reject-once"], "offered options");
});

await step("permission rejected", async () => {
  desk.mode = "reject";
  await session.prompt("/permission");
  const seen = await untilIdle(session);
  const [call] = Object.values(seen.toolCalls);
  same(call.statuses, ["pending", "failed"], "tool call statuses");
  same(seen.text, "Permission was not granted, so I did nothing.", "reply");
});

await step("cancel with a pending permission request", async () => {
  await cancelWithPendingPermission(agent, session, desk);
});

await step("cancel a streaming turn", async () => {
  await cancelStreamingTurn(agent, session, 40);
});

await step("held prompts", async () => {
  const first = await session.prompt("/slow 5");
  let secondInserted = false;
  const second = session.prompt("second").then((response) => ((secondInserted = true), response));
  second.catch(() => {}); // awaited below; a rejection fails the step there
  const withdraw = new AbortController();
  const third = settle(session.prompt("withdrawn", { cancellationSignal: withdraw.signal }));
  await new Promise((resolve) => setTimeout(resolve, 100));
  check(!secondInserted, "the second prompt was inserted while the first turn was running");
  withdraw.abort();
  expectError(await third, -32800, "withdrawn held prompt");
  const one = await untilIdle(session);
  same([one.users, one.stopReason], [[first.messageId], "end_turn"], "first turn");
  const { messageId } = await second;
  const two = await untilIdle(session);
  same([two.users, two.text, two.stopReason], [[messageId], "You said: second", "end_turn"], "second turn");
});

await step("session/cancel withdraws held prompts", async () => {
  await session.prompt("/slow 40");
  const held = settle(session.prompt("never inserted"));
  await new Promise((resolve) => setTimeout(resolve, 100));
  await agent.notify("session/cancel", { sessionId: session.sessionId });
  expectError(await held, -32800, "held prompt after session/cancel");
  const seen = await untilIdle(session);
  same(seen.stopReason, "cancelled", "stop reason");
});

await step("config options", async () => {
  const { configOptions } = await session.setConfigOption({ configId: "mode", type: "id", value: "ask" });
  same(configOptions.map((o) => [o.configId, o.currentValue]), [["mode", "ask"], ["thoughts", false]], "after setting mode");
  same(session.configOptions.find((o) => o.configId === "mode").currentValue, "ask", "ActiveSession.configOptions");
  await session.setConfigOption({ configId: "thoughts", type: "boolean", value: true });
  await session.prompt("what is this");
  const seen = await untilIdle(session);
  same(seen.text, "You asked: what is this", "reply in ask mode");
  check(seen.thoughts.length > 0, "no thought although thoughts are on");
  await rejects(session.setConfigOption({ configId: "mode", type: "id", value: "nonsense" }), -32602, "unknown value");
  await rejects(session.setConfigOption({ configId: "mode", type: "boolean", value: true }), -32602, "wrong value type");
  await rejects(session.setConfigOption({ configId: "_unknown", type: "id", value: "x" }), -32602, "unknown config id");
  same(session.configOptions.map((o) => [o.configId, o.currentValue]), [["mode", "ask"], ["thoughts", true]], "unchanged after errors");
});

await step("close", async () => {
  const busy = await agent.buildSession(cwd).start();
  await busy.prompt("/slow 40");
  await nextOfKind(busy, "agent_message_chunk");
  const held = settle(busy.prompt("held"));
  await agent.request("session/close", { sessionId: busy.sessionId });
  expectError(await held, -32800, "held prompt at close");
  const seen = await untilIdle(busy);
  same(seen.stopReason, "cancelled", "stop reason of the closed session's work");
  await agent.request("session/close", { sessionId: busy.sessionId }); // idempotent
  await rejects(busy.prompt("after close"), -32002, "prompt to a closed session");
  busy.dispose();

  await agent.request("session/close", { sessionId: session.sessionId });
  await rejects(session.prompt("after close"), -32002, "prompt to the first closed session");
  session.dispose();
});

connection.close();
child.stdin.end();
const ok = steps.every((s) => s.ok);
process.stdout.write(JSON.stringify({ ok, agent: agentInfo, steps }) + "\n");
child.kill();
process.exit(ok ? 0 : 1);
