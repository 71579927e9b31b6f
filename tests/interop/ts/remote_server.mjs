// An agent on the official TypeScript SDK 2.4.0's remote server (experimental/server + experimental/node),
// speaking v1 and v2 (agentProtocolRouter) on http://127.0.0.1:PORT/acp, Streamable HTTP and WebSocket.
//   REMOTE_WS_DIR=<folder with node_modules/ws> [REMOTE_VERSIONS=v1] node remote_server.mjs
// Prints "listening PORT" once it listens. A prompt "stream N" answers N one-character chunks; any
// other prompt is echoed word by word. The `ws` package (the SDK's node adapter needs a WebSocket
// server) is loaded from REMOTE_WS_DIR.
import http from "node:http";
import { createRequire } from "node:module";
import { agent as agentV1, methods as m1 } from "@agentclientprotocol/sdk";
import { AcpServer } from "@agentclientprotocol/sdk/experimental/server";
import { createNodeHttpHandler, createNodeWebSocketUpgradeHandler } from "@agentclientprotocol/sdk/experimental/node";
import { agent as agentV2, agentProtocolRouter, methods as m2 } from "@agentclientprotocol/sdk/experimental/v2";

const { WebSocketServer } = createRequire(`${process.env.REMOTE_WS_DIR}/`)("ws");
let counter = 0;
const onlyV1 = process.env.REMOTE_VERSIONS === "v1";
let sawV1Initialize = false;

function pieces(text) {
  const match = /^stream (\d+)$/.exec(text);
  if (match) return Array.from({ length: Number(match[1]) }, () => "x");
  return text.match(/\S+\s*/g) ?? [];
}

const v1 = agentV1({ name: "ts-remote-v1" })
  .onRequest(m1.agent.initialize, async (ctx) => {
    // the v1-only server says which version of initialize it was sent last
    sawV1Initialize = ctx.params.protocolVersion === 1;
    return { protocolVersion: 1, agentCapabilities: { loadSession: false } };
  })
  .onRequest(m1.agent.session.new, async () => ({ sessionId: `ts-session-${++counter}` }))
  .onRequest(m1.agent.session.prompt, async (ctx) => {
    const { sessionId, prompt } = ctx.params;
    const text = prompt.map((b) => b.text ?? "").join(" ");
    const said = onlyV1 ? [sawV1Initialize ? "(v1 initialize) " : "(v2 initialize) ", ...pieces(text)] : pieces(text);
    for (const piece of said) {
      await ctx.client.notify(m1.client.session.update, {
        sessionId,
        update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: piece } },
      });
    }
    return { stopReason: "end_turn" };
  })
  .onNotification(m1.agent.session.cancel, async () => {});

async function runV2(client, sessionId, messageId, prompt) {
  const send = (update) => client.notify(m2.client.session.update, { sessionId, update });
  const replyId = `ts-reply-${++counter}`;
  await send({ sessionUpdate: "user_message", messageId, content: prompt });
  await send({ sessionUpdate: "state_update", state: "running" });
  const text = prompt.map((b) => b.text ?? "").join(" ");
  for (const piece of pieces(text)) {
    await send({ sessionUpdate: "agent_message_chunk", messageId: replyId, content: { type: "text", text: piece } });
  }
  await send({ sessionUpdate: "state_update", state: "idle", stopReason: "end_turn" });
}

const v2 = agentV2({ name: "ts-remote-v2" })
  .onRequest(m2.agent.initialize, async () => ({
    protocolVersion: 2,
    info: { name: "ts-remote-v2", version: "1.0" },
    capabilities: {},
  }))
  .onRequest(m2.agent.session.new, async () => ({ sessionId: `ts-session-${++counter}` }))
  .onRequest(m2.agent.session.prompt, async (ctx) => {
    const messageId = `ts-user-${++counter}`;
    setImmediate(() => runV2(ctx.client, ctx.params.sessionId, messageId, ctx.params.prompt));
    return { messageId };
  })
  .onNotification(m2.agent.session.cancel, async () => {});

// REMOTE_VERSIONS=v1: the v1 agent alone (a v2 client then falls back, with a second initialize); its
// answers then start with "(v1 initialize) " or "(v2 initialize) ": the last initialize it was sent
const served = onlyV1 ? v1 : agentProtocolRouter().withV1(v1).withV2(v2);
const server = new AcpServer({ agent: served });
const httpServer = http.createServer(createNodeHttpHandler(server));
const wss = new WebSocketServer({ noServer: true });
httpServer.on("upgrade", createNodeWebSocketUpgradeHandler(server, wss));
httpServer.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  console.log(`listening ${httpServer.address().port}`);
});
process.on("SIGTERM", async () => {
  await server.close();
  process.exit(0);
});
