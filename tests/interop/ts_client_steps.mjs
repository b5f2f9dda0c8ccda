// What the TypeScript-SDK client scripts share (ts_client.mjs over stdio, ts_remote_client.mjs over HTTP and
// WebSocket): assertions, a step runner with a timeout, a permission handler whose answer each step chooses, and
// readers of a session's updates.
import { RequestError } from "@agentclientprotocol/sdk/experimental/v2";

export function check(condition, message) {
  if (!condition) throw new Error(message);
}

export function same(actual, expected, what) {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  check(a === e, `${what}: expected ${e}, got ${a}`);
}

// Settles at once into {value} or {error}, so a rejection that comes before anyone awaits it is not unhandled.
export function settle(promise) {
  return promise.then(
    (value) => ({ value }),
    (error) => ({ error }),
  );
}

export function expectError({ error }, code, what) {
  check(error !== undefined, `${what}: expected error ${code}, but it succeeded`);
  check(error instanceof RequestError && error.code === code, `${what}: expected error ${code}, got ${error?.code} ${error?.message}`);
}

export async function rejects(promise, code, what) {
  expectError(await settle(promise), code, what);
}

// Runs named steps, each within timeoutMs, and records {name, ok, detail | error}; `only` limits the names run.
export function stepRunner(timeoutMs, only) {
  const steps = [];
  async function step(name, fn) {
    if (only && !only.includes(name)) return;
    let timer;
    try {
      const timeout = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs)));
      const detail = await Promise.race([fn(), timeout]);
      steps.push({ name, ok: true, detail: detail ?? null });
    } catch (error) {
      steps.push({ name, ok: false, error: String(error?.stack ?? error) });
    } finally {
      clearTimeout(timer);
    }
  }
  return { steps, step };
}

// session/request_permission answers: desk.mode is "allow", "reject" or "hold" (answer cancelled once the agent
// withdraws the request with $/cancel_request); desk.log keeps every request; desk.expect() resolves on the next.
export function permissionDesk() {
  const desk = { mode: "allow", log: [], asked: null };
  desk.expect = () => new Promise((resolve) => (desk.asked = resolve));
  desk.handler = async ({ params, signal }) => {
    const entry = {
      sessionId: params.sessionId,
      toolCallId: params.subject?.toolCall?.toolCallId,
      options: params.options.map((o) => o.optionId),
      withdrawn: false,
    };
    desk.log.push(entry);
    desk.asked?.(entry);
    if (desk.mode === "allow") return { outcome: { outcome: "selected", optionId: "allow-once" } };
    if (desk.mode === "reject") return { outcome: { outcome: "selected", optionId: "reject-once" } };
    await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
    entry.withdrawn = true;
    return { outcome: { outcome: "cancelled" } };
  };
  return desk;
}

// Reads a session's updates until its foreground work is idle: the text, thoughts, tool calls, states, ...
export async function untilIdle(session) {
  const seen = { text: "", thoughts: "", toolCalls: {}, states: [], kinds: [], users: [], stopReason: undefined };
  for (;;) {
    const message = await session.nextUpdate();
    const update = message.update;
    seen.kinds.push(update.sessionUpdate);
    if (message.kind === "stop") {
      seen.states.push("idle");
      seen.stopReason = message.stopReason;
      return seen;
    }
    switch (update.sessionUpdate) {
      case "state_update":
        seen.states.push(update.state);
        break;
      case "agent_message_chunk":
        if (update.content.type === "text") seen.text += update.content.text;
        break;
      case "agent_thought_chunk":
        if (update.content.type === "text") seen.thoughts += update.content.text;
        break;
      case "user_message":
        seen.users.push(update.messageId);
        break;
      case "tool_call_update": {
        const call = (seen.toolCalls[update.toolCallId] ??= { statuses: [], chunks: 0 });
        if (update.status) call.statuses.push(update.status);
        break;
      }
      case "tool_call_content_chunk":
        (seen.toolCalls[update.toolCallId] ??= { statuses: [], chunks: 0 }).chunks += 1;
        break;
    }
  }
}

// Waits for the first update of the given kind (consuming everything before it).
export async function nextOfKind(session, kind) {
  for (;;) {
    const message = await session.nextUpdate();
    if (message.update.sessionUpdate === kind) return message.update;
    check(message.kind !== "stop", `work ended before a ${kind} update`);
  }
}

// A step body: a turn with a permission request the client holds, cancelled; the request must be withdrawn.
export async function cancelWithPendingPermission(agent, session, desk) {
  desk.mode = "hold";
  const asked = desk.expect();
  await session.prompt("/permission");
  const entry = await asked;
  await agent.notify("session/cancel", { sessionId: session.sessionId });
  const seen = await untilIdle(session);
  same(seen.stopReason, "cancelled", "stop reason");
  const call = seen.toolCalls[entry.toolCallId];
  same(call.statuses.at(-1), "cancelled", "final tool call status");
  check(!call.statuses.includes("completed"), "the tool call completed although permission was never given");
  // The agent withdrew the request with $/cancel_request, which aborted our handler's signal.
  same(entry.withdrawn, true, "permission request withdrawn by $/cancel_request");
  desk.mode = "allow";
  return entry;
}

// A step body: a long streamed turn cancelled after its first chunk.
export async function cancelStreamingTurn(agent, session, chunks) {
  await session.prompt(`/slow ${chunks}`);
  await nextOfKind(session, "agent_message_chunk");
  await agent.notify("session/cancel", { sessionId: session.sessionId });
  const seen = await untilIdle(session);
  same(seen.stopReason, "cancelled", "stop reason");
  check(!seen.text.includes(`chunk ${chunks}.`), "the turn ran to its end");
}
