// An ACP v2 agent built on the official TypeScript SDK's v2 agent() app, for interop tests of acp-session.
//
//   node tests/interop/ts_agent.mjs [--record FILE] [--mcp TRANSPORTS]     (or ACP_INTEROP_RECORD=FILE)
//
// Speaks newline-delimited JSON-RPC on stdin/stdout; logs go to stderr. With a record file, every message the
// agent receives is appended to it as one JSON line {"dir": "in", "msg": ...}, and every message it sends as
// {"dir": "out", "msg": ...}, so tests can assert on what arrived from the client; each prompt's _meta as its
// handler got it from the SDK is recorded as {"dir": "meta", "msg": {"method", "meta"}}. A prompt's W3C trace
// context (_meta traceparent/tracestate) is propagated into the turn's own requests (/permission). With --mcp stdio,http (any of
// stdio, http, acp) it advertises those MCP server transports; the SDK's assertSupportedMcpServers checks them.
//
// Behaviour is chosen by the prompt text's first word (anything else gets "You said: ..." streamed word by word):
//   /thought      two streamed thought chunks, then the answer "42."
//   /tool         a tool call: pending, in_progress, two content chunks, completed with rawOutput, then text
//   /permission   asks permission for a tool call; only the allow-once option approves it
//   /slow [N]     N text chunks (default 40), 50 ms apart; for cancelling and holding prompts
//   /refuse, /max_tokens, /fail   end the turn with that stop reason (fail: stop reason error with an error)
//   /usage        a short answer; the idle state_update that ends the turn carries its token usage (Preview)
//   /system       says the session's system prompt (Preview systemPrompt, append mode)
//   /subagent     a subagent (child session) announced under a tool call: the child runs a tool call, answers
//                 and ends with usage; then the parent answers (Preview subagent_update, session_message)
// Preview methods: session/fork (copies history and system prompt) and session/set_title.
// Config options: mode (select: ask, code, review; default code) and thoughts (boolean; default false, when on a
// thought precedes every ordinary answer). Sessions are kept in memory; resume replays their history.
import { appendFileSync } from "node:fs";
import { isAbsolute } from "node:path";
import { Readable, Writable } from "node:stream";
import {
  McpOverAcpCaller,
  RequestError,
  agent,
  assertSupportedMcpServers,
  ndJsonStream,
} from "@agentclientprotocol/sdk/experimental/v2/unstable";

const AGENT_NAME = "acp-interop-ts-agent";
const CAPABILITIES = {
  session: { prompt: { embeddedContext: {} }, delete: {}, fork: {}, title: {}, systemPrompt: {} },
};
const MODES = { ask: "Ask", code: "Code", review: "Review" };
const STEP_MS = 50;
// Live-only updates are not conversation history, so resume never replays them.
const LIVE_ONLY = new Set(["state_update", "usage_update", "notice", "config_option_update", "available_commands_update"]);

const argv = process.argv.slice(2);
const mcpIndex = argv.indexOf("--mcp"); // --mcp stdio,http,acp: advertise these MCP server transports
if (mcpIndex >= 0) {
  CAPABILITIES.session.mcp = Object.fromEntries(argv[mcpIndex + 1].split(",").filter(Boolean).map((t) => [t, {}]));
}
const recordIndex = argv.indexOf("--record");
const recordPath = recordIndex >= 0 ? argv[recordIndex + 1] : process.env.ACP_INTEROP_RECORD;

function record(dir, msg) {
  if (recordPath) appendFileSync(recordPath, JSON.stringify({ dir, msg }) + "\n");
}

// The W3C trace context a request carried in _meta (the keys the Meta Propagation RFD reserves), or undefined.
function traceContext(meta) {
  const keys = ["traceparent", "tracestate"].filter((key) => typeof meta?.[key] === "string");
  return keys.length ? Object.fromEntries(keys.map((key) => [key, meta[key]])) : undefined;
}

function log(...parts) {
  process.stderr.write(`[ts-agent] ${parts.join(" ")}\n`);
}

class Cancelled extends Error {}

const sessions = new Map();
let sessionCount = 0;
let conn = null; // the AgentConnection, for notifications and requests outside a request handler

function notFound(sessionId) {
  return new RequestError(-32002, "Resource not found", { sessionId });
}

function openSession(sessionId) {
  const session = sessions.get(sessionId);
  if (!session || !session.open) throw notFound(sessionId);
  return session;
}

function nextId(session, prefix) {
  session.counters[prefix] = (session.counters[prefix] ?? 0) + 1;
  return `${prefix}-${session.counters[prefix]}`;
}

function configOptions(session) {
  return [
    {
      type: "select",
      configId: "mode",
      name: "Mode",
      category: "mode",
      currentValue: session.config.mode,
      options: Object.entries(MODES).map(([value, name]) => ({ value, name })),
    },
    { type: "boolean", configId: "thoughts", name: "Show thoughts", currentValue: session.config.thoughts },
  ];
}

async function emit(session, update) {
  if (!session.open) return;
  if (!LIVE_ONLY.has(update.sessionUpdate)) session.history.push(update);
  await conn.client.notify("session/update", { sessionId: session.sessionId, update });
}

async function setState(session, state, stopReason, error, usage) {
  session.state = state;
  const update = { sessionUpdate: "state_update", state };
  if (usage !== undefined) update.usage = usage;
  if (stopReason !== undefined) {
    update.stopReason = stopReason;
    session.lastStopReason = stopReason;
  }
  if (error !== undefined) update.error = error;
  await emit(session, update);
}

// -- the work of one turn ------------------------------------------------------------------------------

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new Cancelled());
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new Cancelled());
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

class Turn {
  constructor(session, messageId, prompt) {
    this.session = session;
    this.messageId = messageId;
    this.prompt = prompt;
    this.controller = new AbortController();
    this.openToolCalls = new Set();
    this.done = new Promise((resolve) => (this.finish = resolve));
  }

  get signal() {
    return this.controller.signal;
  }

  async emit(update) {
    if (this.signal.aborted) throw new Cancelled();
    await emit(this.session, update);
  }

  async say(text) {
    const messageId = nextId(this.session, "msg-agent");
    const words = text.split(" ");
    for (const [index, word] of words.entries()) {
      const piece = index < words.length - 1 ? `${word} ` : word;
      await this.emit({ sessionUpdate: "agent_message_chunk", messageId, content: { type: "text", text: piece } });
    }
  }

  async think(...pieces) {
    const messageId = nextId(this.session, "msg-thought");
    for (const text of pieces) {
      await this.emit({ sessionUpdate: "agent_thought_chunk", messageId, content: { type: "text", text } });
    }
  }

  async tool(toolCallId, fields) {
    if (["completed", "failed", "cancelled"].includes(fields.status)) this.openToolCalls.delete(toolCallId);
    else if (fields.status !== undefined) this.openToolCalls.add(toolCallId);
    await this.emit({ sessionUpdate: "tool_call_update", toolCallId, ...fields });
  }

  async toolText(toolCallId, text) {
    await this.emit({
      sessionUpdate: "tool_call_content_chunk",
      toolCallId,
      content: { type: "content", content: { type: "text", text } },
    });
  }
}

function promptText(prompt) {
  return prompt
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join(" ")
    .trim();
}

const mcpCaller = new McpOverAcpCaller({ clientInfo: { name: AGENT_NAME, version: "1.0.0" } });

const SCENARIOS = {
  // /mcp NAME TOOL [JSON-ARGS]: call TOOL on the session's MCP-over-ACP server NAME with the SDK's caller.
  async mcp(turn, args) {
    const [name, tool, ...rest] = args.split(" ");
    const server = (turn.session.mcpServers ?? []).find((s) => s.type === "acp" && s.name === name);
    if (!server) throw new Error(`no acp MCP server named ${name}`);
    const params = { name: tool, arguments: JSON.parse(rest.join(" ") || "{}") };
    const outcome = await mcpCaller.request(conn.client, server.serverId, "tools/call", params);
    await turn.say(JSON.stringify(outcome));
    return "end_turn";
  },
  async thought(turn) {
    await turn.think("Let me think. ", "The answer is 42.");
    await turn.say("42.");
    return "end_turn";
  },

  async tool(turn) {
    const tc = nextId(turn.session, "tc");
    await turn.tool(tc, { name: "read_file", title: "Reading notes.txt", kind: "read", status: "pending" });
    await turn.tool(tc, { status: "in_progress" });
    await turn.toolText(tc, "line one");
    await turn.toolText(tc, "line two");
    await turn.tool(tc, { status: "completed", rawOutput: { lines: 2 } });
    await turn.say("The file has two lines.");
    return "end_turn";
  },

  async permission(turn) {
    const session = turn.session;
    const tc = nextId(session, "tc");
    await turn.tool(tc, { name: "run_command", title: "rm -rf build/", kind: "execute", status: "pending" });
    const options = [
      { optionId: "allow-once", name: "Allow once", kind: "allow_once" },
      { optionId: "reject-once", name: "Reject", kind: "reject_once" },
    ];
    const pending = conn.client.request(
      "session/request_permission",
      {
        sessionId: session.sessionId,
        title: "Run `rm -rf build/`?",
        options,
        subject: { type: "tool_call", toolCall: { toolCallId: tc } },
        ...(turn.trace ? { _meta: turn.trace } : {}),
      },
      // session/cancel aborts the turn: the SDK then sends $/cancel_request and stops waiting (-32800).
      { cancellationSignal: turn.signal, stopWaitingOnCancel: true },
    );
    await setState(session, "requires_action");
    let outcome = null;
    try {
      outcome = (await pending).outcome;
    } catch (error) {
      if (turn.signal.aborted) throw new Cancelled();
      log("permission request failed:", error?.message ?? error); // an error answer is no approval
    }
    // The SDK settles responses as soon as they are read but runs notification handlers a few microtasks
    // later, so the cancelled answer that follows session/cancel on the wire can arrive here first. Let the
    // queued session/cancel run before deciding whether the work resumes (finding in docs/interop.md).
    if (outcome?.outcome === "cancelled") await new Promise((resolve) => setImmediate(resolve));
    if (turn.signal.aborted) throw new Cancelled();
    await setState(session, "running");
    if (outcome?.outcome === "selected" && outcome.optionId === "allow-once") {
      await turn.tool(tc, { status: "in_progress" });
      await turn.toolText(tc, "removed");
      await turn.tool(tc, { status: "completed" });
      await turn.say("Done: build/ was removed.");
    } else {
      await turn.tool(tc, { status: "failed" });
      await turn.say("Permission was not granted, so I did nothing.");
    }
    return "end_turn";
  },

  async slow(turn, args) {
    const count = /^\d+$/.test(args) ? Number(args) : 40;
    const messageId = nextId(turn.session, "msg-agent");
    for (let index = 1; index <= count; index++) {
      await turn.emit({ sessionUpdate: "agent_message_chunk", messageId, content: { type: "text", text: `chunk ${index}. ` } });
      await sleep(STEP_MS, turn.signal);
    }
    return "end_turn";
  },

  async usage(turn) {
    await turn.say("Counting tokens.");
    turn.usage = { totalTokens: 12, inputTokens: 8, outputTokens: 4, cachedReadTokens: 2 };
    return "end_turn";
  },

  async system(turn) {
    const prompt = turn.session.systemPrompt;
    if (!prompt) await turn.say("No system prompt.");
    else await turn.say(`System prompt (${prompt.mode}): ${promptText(prompt.content)}`);
    return "end_turn";
  },

  async subagent(turn) {
    const parent = turn.session;
    const childId = `${parent.sessionId}-child-${nextId(parent, "child")}`;
    const tc = nextId(parent, "tc");
    await turn.tool(tc, { name: "delegate", title: "Delegating", kind: "think", status: "in_progress" });
    await turn.emit({
      sessionUpdate: "subagent_update",
      sessionId: childId,
      title: "Reader",
      capabilities: { cancel: {} },
      state: { sessionUpdate: "state_update", state: "running" },
    });
    await turn.emit({ sessionUpdate: "tool_call_update", toolCallId: tc, content: [{ type: "session", sessionId: childId }] });
    const child = { sessionId: childId, open: true, history: [] };
    parent.children.set(childId, child);
    const childEmit = (update) => emit(child, update);
    await childEmit({ sessionUpdate: "state_update", state: "running" });
    await childEmit({ sessionUpdate: "session_message", messageId: "in-1", senderSessionId: parent.sessionId, content: [{ type: "text", text: "Read notes.txt" }] });
    await childEmit({ sessionUpdate: "tool_call_update", toolCallId: "child-tc-1", title: "Reading notes.txt", kind: "read", status: "in_progress" });
    await childEmit({ sessionUpdate: "tool_call_update", toolCallId: "child-tc-1", status: "completed" });
    await childEmit({ sessionUpdate: "agent_message_chunk", messageId: "child-msg-1", content: { type: "text", text: "It has two lines." } });
    const idle = { sessionUpdate: "state_update", state: "idle", stopReason: "end_turn", usage: { totalTokens: 5, inputTokens: 3, outputTokens: 2 } };
    await childEmit(idle);
    await turn.emit({ sessionUpdate: "subagent_update", sessionId: childId, state: idle });
    await turn.tool(tc, { status: "completed" });
    await turn.say("The reader found two lines.");
    return "end_turn";
  },

  async refuse(turn) {
    await turn.say("I will not do that.");
    return "refusal";
  },

  async max_tokens(turn) {
    await turn.say("This answer is cut off because");
    return "max_tokens";
  },

  async fail(turn) {
    await turn.say("Something is about to go wrong.");
    turn.error = { code: -32603, message: "the interop agent failed on purpose" };
    return "error";
  },
};

async function ordinaryReply(turn, text) {
  const { mode, thoughts } = turn.session.config;
  if (thoughts) await turn.think(`The user wrote ${text.split(/\s+/).filter(Boolean).length} word(s); ${mode} mode.`);
  if (mode === "ask") await turn.say(`You asked: ${text}`);
  else if (mode === "review") await turn.say(`Review: ${text.length} characters, looks fine.`);
  else await turn.say(`You said: ${text}`);
  return "end_turn";
}

async function runTurn(turn) {
  const session = turn.session;
  const text = promptText(turn.prompt);
  let stopReason = "end_turn";
  try {
    const match = /^\/(\w+)\s*(.*)$/s.exec(text);
    const scenario = match ? SCENARIOS[match[1]] : undefined;
    stopReason = scenario ? await scenario(turn, match[2].trim()) : await ordinaryReply(turn, text);
  } catch (error) {
    if (!(error instanceof Cancelled) && !turn.signal.aborted) {
      log("turn failed:", error?.stack ?? error);
      stopReason = "error";
      turn.error = { code: -32603, message: String(error?.message ?? error) };
    }
  }
  if (turn.signal.aborted) {
    // Cancelling ends in cancelled, never error; final tool call updates go out before the idle update.
    stopReason = "cancelled";
    turn.error = undefined;
    for (const tc of turn.openToolCalls) await emit(session, { sessionUpdate: "tool_call_update", toolCallId: tc, status: "cancelled" });
  }
  session.turn = null;
  await setState(session, "idle", stopReason, turn.error, turn.usage);
  turn.finish();
  release(session);
}

// -- held prompts and cancellation ---------------------------------------------------------------------

// The running turn ended: insert the next held prompt, or become free.
function release(session) {
  const next = session.held.shift();
  if (next) next.go();
  else session.busy = false;
}

function withdrawHeld(session) {
  for (const held of session.held.splice(0)) held.withdraw();
}

function cancelForeground(session) {
  withdrawHeld(session);
  session.turn?.controller.abort(); // also cancels the pending permission request of the turn
}

function hold(session, signal) {
  return new Promise((resolve, reject) => {
    const held = {
      go: () => {
        signal.removeEventListener("abort", onAbort);
        resolve();
      },
      withdraw: () => {
        signal.removeEventListener("abort", onAbort);
        reject(RequestError.requestCancelled({ reason: "withdrawn before insertion" }));
      },
    };
    // $/cancel_request for the held prompt itself withdraws it: it is never inserted.
    const onAbort = () => {
      session.held.splice(session.held.indexOf(held), 1);
      held.withdraw();
    };
    signal.addEventListener("abort", onAbort, { once: true });
    session.held.push(held);
  });
}

const ALLOWED_BLOCKS = new Set(["text", "resource_link", "resource"]);

// The stable SDK check knows stdio and http; acp (MCP-over-ACP, unstable) servers pass when advertised.
function checkMcp(servers) {
  const acp = CAPABILITIES.session.mcp?.acp != null;
  assertSupportedMcpServers((servers ?? []).filter((s) => !(acp && s.type === "acp")), CAPABILITIES.session.mcp);
}

// -- handlers ------------------------------------------------------------------------------------------

const app = agent({ name: AGENT_NAME })
  .onRequest("initialize", ({ params }) => {
    if (params.protocolVersion < 2) {
      throw new RequestError(-32022, "Unsupported protocol version", { requested: params.protocolVersion, supported: [2] });
    }
    return { protocolVersion: 2, info: { name: AGENT_NAME, version: "1.0.0" }, capabilities: CAPABILITIES };
  })
  .onRequest("session/new", ({ params }) => {
    if (!isAbsolute(params.cwd)) throw RequestError.invalidParams({ reason: "cwd must be absolute" });
    checkMcp(params.mcpServers);
    const session = {
      mcpServers: params.mcpServers ?? [],
      sessionId: `ts-sess-${++sessionCount}`,
      cwd: params.cwd,
      open: true,
      busy: false,
      held: [],
      turn: null,
      state: "idle",
      lastStopReason: undefined,
      history: [],
      counters: {},
      config: { mode: "code", thoughts: false },
      systemPrompt: params.systemPrompt ?? undefined,
      children: new Map(),
      title: undefined,
    };
    sessions.set(session.sessionId, session);
    return { sessionId: session.sessionId, configOptions: configOptions(session) };
  })
  .onRequest("session/fork", ({ params }) => {
    const source = sessions.get(params.sessionId);
    if (!source) throw notFound(params.sessionId);
    if (!isAbsolute(params.cwd)) throw RequestError.invalidParams({ reason: "cwd must be absolute" });
    const session = {
      ...source,
      sessionId: `ts-sess-${++sessionCount}`,
      cwd: params.cwd,
      open: true,
      busy: false,
      held: [],
      turn: null,
      state: "idle",
      history: [...source.history],
      counters: { ...source.counters },
      config: { ...source.config },
      systemPrompt: params.systemPrompt ?? source.systemPrompt,
      children: new Map(source.children),
    };
    sessions.set(session.sessionId, session);
    return { sessionId: session.sessionId, configOptions: configOptions(session) };
  })
  .onRequest("session/set_title", async ({ params }) => {
    const session = sessions.get(params.sessionId);
    if (!session) throw notFound(params.sessionId);
    const title = params.title.trim();
    if (!title) throw RequestError.invalidParams({ reason: "empty title" });
    session.title = title;
    if (session.open) await emit(session, { sessionUpdate: "session_info_update", title });
    return { title };
  })
  .onRequest("session/list", ({ params }) => {
    if (params.cursor != null) throw RequestError.invalidParams({ reason: "this agent never returns a cursor" });
    const listed = [...sessions.values()].filter((s) => params.cwd == null || s.cwd === params.cwd);
    return { sessions: listed.map((s) => ({ sessionId: s.sessionId, cwd: s.cwd })) };
  })
  .onRequest("session/resume", async ({ params }) => {
    const session = sessions.get(params.sessionId);
    if (!session) throw notFound(params.sessionId);
    if (params.cwd !== session.cwd) throw RequestError.invalidParams({ reason: "cwd differs from the session's" });
    checkMcp(params.mcpServers);
    session.mcpServers = params.mcpServers ?? [];
    const replay = params.replayFrom;
    if (replay != null && replay.type !== "start") throw RequestError.invalidParams({ reason: "unsupported replay cursor" });
    session.open = true;
    if (replay != null) {
      for (const update of [...session.history]) {
        await conn.client.notify("session/update", { sessionId: session.sessionId, update });
      }
    }
    const snapshot = { sessionUpdate: "state_update", state: session.state };
    if (session.state === "idle" && session.lastStopReason !== undefined) snapshot.stopReason = session.lastStopReason;
    await conn.client.notify("session/update", { sessionId: session.sessionId, update: snapshot });
    return { configOptions: configOptions(session) };
  })
  .onRequest("session/close", async ({ params }) => {
    const session = sessions.get(params.sessionId);
    if (!session || !session.open) return {}; // closing what is not active succeeds
    const turn = session.turn;
    cancelForeground(session);
    if (turn) await turn.done; // its final updates and the cancelled idle go out before the response
    session.open = false;
    return {};
  })
  .onRequest("session/delete", async ({ params }) => {
    const session = sessions.get(params.sessionId);
    if (session) {
      const turn = session.turn;
      cancelForeground(session);
      if (turn) await turn.done;
      session.open = false;
      sessions.delete(params.sessionId);
    }
    return {};
  })
  .onRequest("session/set_config_option", ({ params }) => {
    const session = openSession(params.sessionId);
    const { configId, type, value } = params;
    if (configId === "mode") {
      if (type !== "id") throw RequestError.invalidParams({ configId, reason: "select option: send a value id" });
      if (!Object.hasOwn(MODES, value)) throw RequestError.invalidParams({ configId, reason: `unknown value ${JSON.stringify(value)}` });
      session.config.mode = value;
    } else if (configId === "thoughts") {
      if (type !== "boolean") throw RequestError.invalidParams({ configId, reason: "boolean option: send type boolean" });
      session.config.thoughts = value;
    } else {
      throw RequestError.invalidParams({ configId, reason: "unknown config option" });
    }
    return { configOptions: configOptions(session) };
  })
  .onRequest("session/prompt", async ({ params, signal }) => {
    const session = openSession(params.sessionId);
    for (const block of params.prompt) {
      if (!ALLOWED_BLOCKS.has(block.type)) throw RequestError.invalidParams({ reason: `unsupported content block type ${block.type}` });
    }
    if (session.busy) {
      await hold(session, signal); // unanswered until the running work ends; -32800 if withdrawn
      if (!session.open) {
        release(session);
        throw RequestError.requestCancelled({ reason: "the session was closed" });
      }
    }
    session.busy = true;
    const messageId = nextId(session, "msg-user");
    const turn = new Turn(session, messageId, params.prompt);
    record("meta", { method: "session/prompt", meta: params._meta ?? null }); // what reached the handler, parsed
    turn.trace = traceContext(params._meta); // propagated: this turn's own requests join the client's trace
    session.turn = turn; // exists before the response, so a session/cancel right after insertion is not lost
    await setState(session, "running");
    await emit(session, { sessionUpdate: "user_message", messageId, content: params.prompt });
    setTimeout(() => runTurn(turn), 0); // the work starts after the response went out
    return { messageId };
  })
  .onNotification("session/cancel", ({ params }) => {
    const session = sessions.get(params.sessionId);
    if (session?.open) cancelForeground(session);
  });

// -- stdio with a recording tap ------------------------------------------------------------------------

const wire = ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const tap = (dir) =>
  new TransformStream({
    transform(msg, controller) {
      record(dir, msg);
      controller.enqueue(msg);
    },
  });
const outgoing = tap("out");
outgoing.readable.pipeTo(wire.writable).catch(() => {});
conn = app.connect({ readable: wire.readable.pipeThrough(tap("in")), writable: outgoing.writable });
conn.closed.then(
  () => process.exit(0),
  (error) => {
    log("connection failed:", error?.stack ?? error);
    process.exit(1);
  },
);
