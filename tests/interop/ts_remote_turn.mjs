// One turn of the official TypeScript SDK's v2 client() app over a remote transport, against any agent
// (used through `acp-session serve`, whatever the agent behind it speaks).
//
//   node tests/interop/ts_remote_turn.mjs --profile http|ws --cwd DIR --url http://HOST:PORT/acp --prompt TEXT
//
// Prints one JSON object {"agent", "protocolVersion", "sessionId", "text", "stopReason", "permissionsAsked"} and exits 0, or prints
// {"error"} and exits 1.
import { client } from "@agentclientprotocol/sdk/experimental/v2";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import { WebSocket } from "ws";
import { untilIdle } from "./ts_client_steps.mjs";

const argv = process.argv.slice(2);
const option = (name) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
const profile = option("--profile") ?? "http";
const cwd = option("--cwd") ?? process.cwd();
const httpUrl = option("--url");
const prompt = option("--prompt") ?? "hello";
const url = profile === "ws" ? httpUrl.replace(/^http/, "ws") : httpUrl;

const timer = setTimeout(() => {
  console.log(JSON.stringify({ error: "no idle state within 30 s" }));
  process.exit(1);
}, 30000);

try {
  // A permission request is answered with its first "allow" option (the v1 example agent asks one per turn).
  let asked = 0;
  const app = client({ name: "acp-session-host-interop" }).onRequest("session/request_permission", async ({ params }) => {
    asked += 1;
    const allow = params.options.find((o) => o.kind.startsWith("allow")) ?? params.options[0];
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  });
  const stream = profile === "ws" ? createWebSocketStream(url, { WebSocket }) : createHttpStream(url);
  const connection = app.connect(stream);
  const agent = connection.agent;
  const init = await agent.request("initialize", { protocolVersion: 2, info: { name: "acp-session-host-interop", version: "1.0.0" }, capabilities: {} });
  const session = await agent.buildSession(cwd).start();
  await session.prompt(prompt);
  const seen = await untilIdle(session);
  console.log(JSON.stringify({ agent: init.info.name, protocolVersion: init.protocolVersion, sessionId: session.sessionId, text: seen.text, stopReason: seen.stopReason, permissionsAsked: asked }));
  clearTimeout(timer);
  connection.close();
  process.exit(0);
} catch (error) {
  console.log(JSON.stringify({ error: String(error?.stack ?? error) }));
  process.exit(1);
}
