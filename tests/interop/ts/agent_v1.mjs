// An ACP v1 agent on the TypeScript SDK, for our client: a prompt is echoed word by word; "tool"
// reports a tool call and asks permission for it; "wait" says "working" and ends only when cancelled.
import { Readable, Writable } from "node:stream";
import { agent, methods, ndJsonStream } from "@agentclientprotocol/sdk";

const stream = ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const cancels = new Map(); // sessionId -> resolve of the waiting turn

agent({ name: "ts-v1-agent" })
  .onRequest(methods.agent.initialize, async () => ({ protocolVersion: 1, agentCapabilities: {} }))
  .onRequest(methods.agent.session.new, async () => ({ sessionId: "ts-session" }))
  .onNotification(methods.agent.session.cancel, async (ctx) => cancels.get(ctx.params.sessionId)?.())
  .onRequest(methods.agent.session.prompt, async (ctx) => {
    const { sessionId } = ctx.params;
    const send = (update) => ctx.client.notify(methods.client.session.update, { sessionId, update });
    const say = (text) => send({ sessionUpdate: "agent_message_chunk", content: { type: "text", text } });
    const text = ctx.params.prompt.map((b) => b.text ?? "").join(" ");
    if (text === "wait") {
      await say("working");
      await new Promise((resolve) => cancels.set(sessionId, resolve));
      return { stopReason: "cancelled" };
    }
    if (text === "tool") {
      const toolCallId = "ts-call-1";
      await send({ sessionUpdate: "tool_call", toolCallId, title: "Touch a file", kind: "edit", status: "pending" });
      const answer = await ctx.client.request(methods.client.session.requestPermission, {
        sessionId,
        toolCall: { toolCallId, title: "Touch a file" },
        options: [
          { optionId: "yes", name: "Yes", kind: "allow_once" },
          { optionId: "no", name: "No", kind: "reject_once" },
        ],
      });
      const allowed = answer.outcome.outcome === "selected" && answer.outcome.optionId === "yes";
      await send({ sessionUpdate: "tool_call_update", toolCallId, status: allowed ? "completed" : "failed" });
      await say(allowed ? "touched" : "left alone");
      return { stopReason: "end_turn" };
    }
    for (const piece of text.match(/\S+\s*/g) ?? []) await say(piece);
    return { stopReason: "end_turn" };
  })
  .connect(stream);
