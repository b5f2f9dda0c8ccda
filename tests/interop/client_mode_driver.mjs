// Client mode driver for the official TypeScript SDK's v2 client() app (acp-conformance client -- node THIS).
//
//   node tests/interop/client_mode_driver.mjs AGENT_COMMAND [ARGS...]
//
// A thin editor: initialize (offers 2), session/new in the current directory, one prompt
// ($ACP_CONFORMANCE_PROMPT), read updates until the turn's stop; in the "cancel" and "cancel-pending" scenarios
// send session/cancel at the first agent text. Every permission request is approved (the first allow option), as
// an editor whose user clicks "allow" would, except in "cancel-pending", where it is held until the agent
// withdraws it (the request's abort signal); then session/close and exit 0. Nothing here works around the SDK: what it does on the
// wire is what the checks judge. The SDK has no permission policy (the app's handler decides), so in
// "permission-policy" the driver exits 77 at once, as the driver contract says.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { client, ndJsonStream } from "@agentclientprotocol/sdk/experimental/v2";

const [command, ...args] = process.argv.slice(2);
const scenario = process.env.ACP_CONFORMANCE_SCENARIO ?? "basic";
const text = process.env.ACP_CONFORMANCE_PROMPT ?? "hello";
if (scenario === "permission-policy") process.exit(77); // no policy to apply: the app's handler decides

const app = client({ name: "acp-conformance-ts-driver" }).onRequest("session/request_permission", async ({ params, signal }) => {
  if (scenario === "cancel-pending") {
    // The user has not decided yet: hold the request until the agent withdraws it ($/cancel_request).
    await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
    return { outcome: { outcome: "cancelled" } };
  }
  const allow = params.options.find((o) => String(o.kind).startsWith("allow"));
  return allow ? { outcome: { outcome: "selected", optionId: allow.optionId } } : { outcome: { outcome: "cancelled" } };
});

const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
child.on("exit", (code) => {
  if (!done) {
    process.stderr.write(`ts driver: the agent exited (${code}) before the turn ended\n`);
    process.exit(1);
  }
});
let done = false;
const connection = app.connect(ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)));
const agent = connection.agent;

await agent.request("initialize", { protocolVersion: 2, info: { name: "acp-conformance-ts-driver", version: "1.0.0" }, capabilities: {} });
const session = await agent.buildSession(process.cwd()).start();
await session.prompt(text);
let cancelled = false;
for (;;) {
  const message = await session.nextUpdate();
  if (message.kind === "stop") break;
  const update = message.update;
  if ((scenario === "cancel" || scenario === "cancel-pending") && !cancelled && update.sessionUpdate === "agent_message_chunk") {
    cancelled = true;
    await agent.notify("session/cancel", { sessionId: session.sessionId });
  }
}
await agent.request("session/close", { sessionId: session.sessionId });
done = true;
child.stdin.end();
process.exit(0);
