// An echo agent on the official TypeScript SDK, for our client to talk to (ACP v1 over stdio).
import { Readable, Writable } from "node:stream";
import { agent, methods, ndJsonStream } from "@agentclientprotocol/sdk";

const stream = ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));

agent({ name: "ts-echo" })
  .onRequest(methods.agent.initialize, async () => ({ protocolVersion: 1, agentCapabilities: {} }))
  .onRequest(methods.agent.session.new, async () => ({ sessionId: "ts-session" }))
  .onRequest(methods.agent.session.prompt, async (ctx) => {
    const text = ctx.params.prompt.map((b) => b.text ?? "").join(" ");
    for (const piece of text.match(/\S+\s*/g) ?? []) {
      await ctx.client.notify(methods.client.session.update, {
        sessionId: ctx.params.sessionId,
        update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: piece } },
      });
    }
    return { stopReason: "end_turn" };
  })
  .connect(stream);
