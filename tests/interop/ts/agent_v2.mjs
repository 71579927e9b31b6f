// An ACP v2 agent on the TypeScript SDK's experimental v2 API (with its unstable surface, for archive).
// A prompt is echoed word by word; "tool" runs a tool call behind a permission request; "wait" says
// "working" and ends only when cancelled. Sessions are listed one per page (cursors are indexes).
import { Readable, Writable } from "node:stream";
import { agent, methods, ndJsonStream, RequestError } from "@agentclientprotocol/sdk/experimental/v2/unstable";

const stream = ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const sessions = new Map(); // sessionId -> { cwd, archived, cancel }
let counter = 0;

function known(sessionId) {
  const session = sessions.get(sessionId);
  if (!session) throw RequestError.sessionNotFound(sessionId);
  return session;
}

async function run(client, sessionId, messageId, prompt) {
  const session = sessions.get(sessionId);
  const send = (update) => client.notify(methods.client.session.update, { sessionId, update });
  const replyId = `ts-reply-${++counter}`;
  const say = (text) => send({ sessionUpdate: "agent_message_chunk", messageId: replyId, content: { type: "text", text } });
  await send({ sessionUpdate: "user_message", messageId, content: prompt });
  await send({ sessionUpdate: "state_update", state: "running" });
  const text = prompt.map((b) => b.text ?? "").join(" ");
  let stopReason = "end_turn";
  if (text === "wait") {
    await say("working");
    await new Promise((resolve) => (session.cancel = resolve));
    stopReason = "cancelled";
  } else if (text === "tool") {
    const toolCallId = `ts-call-${counter}`;
    await send({ sessionUpdate: "tool_call_update", toolCallId, title: "Touch a file", kind: "edit", status: "pending" });
    await send({ sessionUpdate: "state_update", state: "requires_action" });
    const answer = await client.request(methods.client.session.requestPermission, {
      sessionId,
      title: "Touch a file",
      subject: { type: "tool_call", toolCall: { toolCallId } },
      options: [
        { optionId: "yes", name: "Yes", kind: "allow_once" },
        { optionId: "no", name: "No", kind: "reject_once" },
      ],
    });
    await send({ sessionUpdate: "state_update", state: "running" });
    const allowed = answer.outcome.outcome === "selected" && answer.outcome.optionId === "yes";
    await send({ sessionUpdate: "tool_call_update", toolCallId, status: allowed ? "completed" : "failed" });
    await say(allowed ? "touched" : "left alone");
  } else {
    for (const piece of text.match(/\S+\s*/g) ?? []) await say(piece);
  }
  await send({ sessionUpdate: "state_update", state: "idle", stopReason });
}

agent({ name: "ts-v2-agent" })
  .onRequest(methods.agent.initialize, async () => ({
    protocolVersion: 2,
    info: { name: "ts-v2-agent", version: "1.0" },
    capabilities: { session: { archive: {} } },
  }))
  .onRequest(methods.agent.session.new, async (ctx) => {
    const sessionId = `ts-session-${++counter}`;
    sessions.set(sessionId, { cwd: ctx.params.cwd, archived: false });
    return { sessionId };
  })
  .onRequest(methods.agent.session.prompt, async (ctx) => {
    known(ctx.params.sessionId);
    const messageId = `ts-user-${++counter}`;
    // the answer acknowledges the prompt; the turn runs after it
    setImmediate(() => run(ctx.client, ctx.params.sessionId, messageId, ctx.params.prompt));
    return { messageId };
  })
  .onNotification(methods.agent.session.cancel, async (ctx) => {
    sessions.get(ctx.params.sessionId)?.cancel?.();
  })
  .onRequest(methods.agent.session.list, async (ctx) => {
    const { cwd, cursor, archived } = ctx.params;
    const want = archived ?? "exclude";
    const found = [...sessions]
      .filter(([, s]) => (cwd == null || s.cwd === cwd) && (want === "include" || s.archived === (want === "only")))
      .map(([sessionId, s]) => ({ sessionId, cwd: s.cwd, archived: s.archived }));
    const start = cursor == null ? 0 : Number(cursor);
    const page = { sessions: found.slice(start, start + 1) };
    if (start + 1 < found.length) page.nextCursor = String(start + 1);
    return page;
  })
  .onRequest(methods.agent.session.archive, async (ctx) => {
    const session = known(ctx.params.sessionId);
    session.cancel?.();
    session.archived = true;
    return {};
  })
  .onRequest(methods.agent.session.unarchive, async (ctx) => {
    known(ctx.params.sessionId).archived = false;
    return {};
  })
  .onRequest(methods.agent.session.resume, async (ctx) => {
    known(ctx.params.sessionId);
    return {};
  })
  .onRequest(methods.agent.session.close, async (ctx) => {
    known(ctx.params.sessionId).cancel?.();
    return {};
  })
  .connect(stream);
