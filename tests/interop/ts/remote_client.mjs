// A client on the official TypeScript SDK 2.4.0's remote transports (experimental/ws-client and
// experimental/http-client): one prompt turn on a remote agent, then what it saw, one line per fact.
//   REMOTE_WS_DIR=<folder with node_modules/ws> node remote_client.mjs ws|http URL v1|v2 PROMPT [TOKEN]
//   ... remote_client.mjs ws|http URL v2 --bench-stream N     prints "chunks N SECONDS"
//   ... remote_client.mjs ws|http URL v2 --bench-rtt N        prints "rtt N SECONDS" (session/new N times)
import { createRequire } from "node:module";
import { client as clientV1, methods as m1 } from "@agentclientprotocol/sdk";
import { client as clientV2, methods as m2 } from "@agentclientprotocol/sdk/experimental/v2";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";

const [profile, url, version, prompt, token] = process.argv.slice(2);
const headers = token ? { Authorization: `Bearer ${token}` } : {};
let stream;
if (profile === "ws") {
  const WebSocket = createRequire(`${process.env.REMOTE_WS_DIR}/`)("ws");
  stream = createWebSocketStream(url, { WebSocket, headers });
} else {
  stream = createHttpStream(url, { headers });
}

const updates = [];
const idle = new Set(); // sessions whose idle state_update came
let wake = () => {};
const waitFor = async (test) => {
  for (;;) {
    const found = test();
    if (found !== undefined) return found;
    await new Promise((resolve) => (wake = resolve));
  }
};

let lines;
if (version === "v1") {
  lines = await clientV1({ name: "ts-remote-client" })
    .onNotification(m1.client.session.update, (ctx) => {
      updates.push(ctx.params.update);
      wake();
    })
    .onRequest(m1.client.session.requestPermission, async () => ({ outcome: { outcome: "cancelled" } }))
    .connectWith(stream, async (ctx) => {
      const init = await ctx.request(m1.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
      const session = await ctx.request(m1.agent.session.new, { cwd: "/tmp", mcpServers: [] });
      const answer = await ctx.request(m1.agent.session.prompt, {
        sessionId: session.sessionId,
        prompt: [{ type: "text", text: prompt }],
      });
      const text = updates.map((u) => u.content?.text ?? "").join("");
      return [`protocol ${init.protocolVersion}`, `text ${text}`, `stop ${answer.stopReason}`];
    });
} else {
  lines = await clientV2({ name: "ts-remote-client" })
    .onNotification(m2.client.session.update, (ctx) => {
      updates.push(ctx.params);
      const u = ctx.params.update;
      if (u.sessionUpdate === "state_update" && u.state === "idle") {
        idle.add(ctx.params.sessionId);
        wake();
      }
    })
    .connectWith(stream, async (ctx) => {
      const init = await ctx.request(m2.agent.initialize, { protocolVersion: 2, info: { name: "ts", version: "1" } });
      if (prompt === "--bench-rtt") {
        const n = Number(process.argv[6]);
        const start = performance.now();
        for (let i = 0; i < n; i++) await ctx.request(m2.agent.session.new, { cwd: "/tmp" });
        return [`rtt ${n} ${(performance.now() - start) / 1000}`];
      }
      const session = await ctx.request(m2.agent.session.new, { cwd: "/tmp" });
      const sessionId = session.sessionId;
      const text = prompt === "--bench-stream" ? `stream ${process.argv[6]}` : prompt;
      const start = performance.now();
      const ack = await ctx.request(m2.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
      await waitFor(() => (idle.has(sessionId) ? true : undefined));
      const seen = updates.filter((n) => n.sessionId === sessionId).map((n) => n.update);
      const seconds = (performance.now() - start) / 1000;
      const chunks = seen.filter((u) => u.sessionUpdate === "agent_message_chunk");
      if (prompt === "--bench-stream") return [`chunks ${chunks.length} ${seconds}`];
      const user = seen.find((u) => u.sessionUpdate === "user_message");
      const states = seen.filter((u) => u.sessionUpdate === "state_update").map((u) => u.state);
      return [
        `protocol ${init.protocolVersion}`,
        `ack ${typeof ack.messageId === "string" && user?.messageId === ack.messageId}`,
        `text ${chunks.map((u) => u.content.text ?? "").join("")}`,
        `states ${states.join(" ")}`,
        `stop ${seen.at(-1).stopReason}`,
      ];
    });
}
console.log(lines.join("\n"));
process.exit(0);
