// A protocol v1 client on the official TypeScript SDK 0.17.0 (the acp-sdk-v1 alias), driving the reference agent.
//
//   node tests/interop/ts_v1_client.mjs -- AGENT_COMMAND [ARGS...]
//
// initialize (v1, fs advertised), session/new, then the prompts "hello", "/permission" (allow-once selected),
// "/tool" (the file goes through this client's fs methods, kept in memory) and "/plan", session/set_mode and
// session/load. The SDK validates every message against its v1 schema. Prints one JSON summary on stdout:
// {"protocolVersion", "sessionId", "turns": [{"prompt", "stopReason", "text", "updates"}], "permissions",
// "fsCalls", "modes", "loadReplay"}; exits 1 (with the error on stderr) when a step fails.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "acp-sdk-v1";

const argv = process.argv.slice(2);
const dashes = argv.indexOf("--");
if (dashes < 0 || dashes === argv.length - 1) {
  process.stderr.write("usage: node ts_v1_client.mjs -- AGENT_COMMAND [ARGS...]\n");
  process.exit(2);
}
const [command, ...commandArgs] = argv.slice(dashes + 1);
const agent = spawn(command, commandArgs, { stdio: ["pipe", "pipe", "inherit"] });

let updates = [];
const permissions = [];
const fsCalls = [];
const files = new Map();

const client = {
  async requestPermission(params) {
    permissions.push({ title: params.toolCall.title, options: params.options.map((o) => o.optionId) });
    return { outcome: { outcome: "selected", optionId: "allow-once" } };
  },
  async sessionUpdate(params) {
    updates.push(params.update);
  },
  async readTextFile(params) {
    fsCalls.push({ method: "fs/read_text_file", path: params.path });
    if (!files.has(params.path)) throw acp.RequestError.resourceNotFound(params.path);
    return { content: files.get(params.path) };
  },
  async writeTextFile(params) {
    fsCalls.push({ method: "fs/write_text_file", path: params.path, content: params.content });
    files.set(params.path, params.content);
    return {};
  },
};

const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
const connection = new acp.ClientSideConnection(() => client, stream);

async function main() {
  const init = await connection.initialize({
    protocolVersion: 1,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } },
    clientInfo: { name: "ts-v1-client", version: "0.17.0" },
  });
  const session = await connection.newSession({ cwd: process.cwd(), mcpServers: [] });
  const turns = [];
  for (const prompt of ["hello", "/permission", "/tool", "/plan"]) {
    updates = [];
    const answer = await connection.prompt({ sessionId: session.sessionId, prompt: [{ type: "text", text: prompt }] });
    const text = updates
      .filter((u) => u.sessionUpdate === "agent_message_chunk" && u.content.type === "text")
      .map((u) => u.content.text)
      .join("");
    turns.push({ prompt, stopReason: answer.stopReason, text, updates: updates.map((u) => u.sessionUpdate) });
  }
  await connection.setSessionMode({ sessionId: session.sessionId, modeId: "ask" });
  updates = [];
  const loaded = await connection.loadSession({ sessionId: session.sessionId, cwd: process.cwd(), mcpServers: [] });
  const summary = {
    protocolVersion: init.protocolVersion,
    agentInfo: init.agentInfo,
    sessionId: session.sessionId,
    modes: session.modes,
    loadedMode: loaded.modes?.currentModeId,
    turns,
    permissions,
    fsCalls,
    loadReplay: updates.map((u) => u.sessionUpdate),
  };
  process.stdout.write(JSON.stringify(summary) + "\n");
}

main()
  .then(() => {
    agent.stdin.end();
    process.exit(0);
  })
  .catch((error) => {
    process.stderr.write(`ts_v1_client: ${error?.stack ?? JSON.stringify(error)}\n`);
    agent.kill();
    process.exit(1);
  });
