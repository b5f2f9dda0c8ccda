// The official TypeScript SDK's v2 client() app over its remote transports, driving `acp-reference-agent --listen`.
//
//   node tests/interop/ts_remote_client.mjs --profile http|ws --cwd DIR --url http://HOST:PORT/acp
//
// --profile http uses experimental/http-client createHttpStream (POST + SSE), ws uses experimental/ws-client
// createWebSocketStream (with the pinned npm `ws`, at the same URL as ws:// or wss://). Runs the steps below on ONE connection (two sessions at once),
// prints one JSON summary {"ok", "agent", "steps": [{"name", "ok", "detail" | "error"}]} and exits 1 when a step
// failed. The steps use the reference agent's /scenarios.
import { client } from "@agentclientprotocol/sdk/experimental/v2";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import { WebSocket } from "ws";
import {
  cancelStreamingTurn,
  cancelWithPendingPermission,
  check,
  nextOfKind,
  permissionDesk,
  rejects,
  same,
  stepRunner,
  untilIdle,
} from "./ts_client_steps.mjs";

const argv = process.argv.slice(2);
const option = (name) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
const profile = option("--profile") ?? "http";
const cwd = option("--cwd") ?? process.cwd();
const httpUrl = option("--url");
const url = profile === "ws" ? httpUrl.replace(/^http/, "ws") : httpUrl; // ws:// or wss:// for the upgrade

const desk = permissionDesk();
const app = client({ name: "acp-session-remote-interop" }).onRequest("session/request_permission", desk.handler);
const { steps, step } = stepRunner(15000);
let agentInfo = null;

const chunksOf = (seen) => seen.kinds.filter((kind) => kind === "agent_message_chunk").length;

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
  check(chunksOf(seen) >= 12 && seen.text.includes("chunk 12."), `streamed ${chunksOf(seen)} chunks: ${JSON.stringify(seen.text)}`);
  return chunksOf(seen);
});

await step("permission allowed", async () => {
  desk.mode = "allow";
  await two.prompt("/permission");
  const seen = await untilIdle(two);
  same(Object.values(seen.toolCalls).map((call) => call.statuses), [["pending", "in_progress", "completed"]], "tool call statuses");
  same(seen.states, ["running", "requires_action", "running", "idle"], "states");
  same(seen.text, "Done: build/ was removed.", "reply");
  same(desk.log.at(-1).sessionId, two.sessionId, "the permission request's session");
});

await step("cancel with a pending permission request", async () => {
  const entry = await cancelWithPendingPermission(agent, one, desk);
  same(entry.sessionId, one.sessionId, "the permission request's session");
});

await step("cancel a streaming turn", async () => {
  await cancelStreamingTurn(agent, two, 200);
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
  await rejects(two.prompt("after close"), -32002, "prompt to the closed session");
  const seen = await untilIdle(one);
  same(seen.stopReason, "end_turn", "the other session's turn");
  check(seen.text.includes("chunk 10."), `the other session's reply ${JSON.stringify(seen.text)}`);
});

connection.close();
await new Promise((resolve) => setTimeout(resolve, 200)); // let the DELETE (HTTP) or the close frame go out
const ok = steps.every((s) => s.ok);
process.stdout.write(JSON.stringify({ ok, agent: agentInfo, steps }) + "\n");
process.exit(ok ? 0 : 1);
