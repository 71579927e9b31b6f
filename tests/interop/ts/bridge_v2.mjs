// The TypeScript SDK's v2 client through acp_types.bridge to a v1 agent.
//   node bridge_v2.mjs TEXT -- BRIDGE COMMAND...
// Two turns, then a list: one line per fact checked, for the test to compare.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream } from "@agentclientprotocol/sdk/experimental/v2/unstable";

const args = process.argv.slice(2);
const text = args[0];
const command = args.slice(args.indexOf("--") + 1);
const child = spawn(command[0], command.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const updates = [];
let wake = () => {};

async function untilIdle(sessionId, from) {
  for (;;) {
    const seen = updates.slice(from).filter((n) => n.sessionId === sessionId);
    const idle = seen.findIndex((n) => n.update.sessionUpdate === "state_update" && n.update.state === "idle");
    if (idle >= 0) return seen.slice(0, idle + 1).map((n) => n.update);
    await new Promise((resolve) => (wake = resolve));
  }
}

async function turn(ctx, sessionId, prompt) {
  const from = updates.length;
  const ack = await ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: prompt }] });
  const seen = await untilIdle(sessionId, from);
  const user = seen.find((u) => u.sessionUpdate === "user_message");
  const agentIds = new Set();
  let said = "";
  for (const u of seen) {
    if (u.sessionUpdate === "agent_message") {
      agentIds.add(u.messageId);
      said = (u.content ?? []).map((b) => b.text ?? "").join("");
    }
    if (u.sessionUpdate === "agent_message_chunk") {
      agentIds.add(u.messageId);
      said += u.content.text ?? "";
    }
  }
  const states = seen.filter((u) => u.sessionUpdate === "state_update").map((u) => u.state);
  return {
    ack: typeof ack.messageId === "string" && user?.messageId === ack.messageId ? "acknowledged" : `ack ${JSON.stringify(ack)}`,
    user: ack.messageId,
    agent: [...agentIds],
    text: said.trim(),
    states: states.join(" "),
    stop: seen.at(-1).stopReason,
  };
}

const lines = await client({ name: "ts-v2-client" })
  .onNotification(methods.client.session.update, (ctx) => {
    updates.push(ctx.params);
    wake();
  })
  .connectWith(stream, async (ctx) => {
    const out = [];
    const init = await ctx.request(methods.agent.initialize, { protocolVersion: 2, info: { name: "ts-v2-client", version: "1.0" } });
    out.push(`protocol ${init.protocolVersion}, session ${init.capabilities?.session ? "offered" : "not offered"}, agent ${init.info?.name}`);
    const { sessionId } = await ctx.request(methods.agent.session.new, { cwd: process.cwd() });
    const a = await turn(ctx, sessionId, text);
    out.push(`${a.ack}; states ${a.states}; stop ${a.stop}`, `text ${a.text}`);
    const b = await turn(ctx, sessionId, text);
    const ids = new Set([a.user, b.user, ...a.agent, ...b.agent]);
    out.push(`${b.ack}; one agent message a turn ${a.agent.length === 1 && b.agent.length === 1}; ids distinct ${ids.size === 4}`);
    try {
      await ctx.request(methods.agent.session.list, {});
      out.push("list answered");
    } catch (e) {
      out.push(`list refused ${e.code} ${e.data?.bridge}`);
    }
    return out;
  });
console.log(lines.join("\n"));
child.stdin.end();
process.exit(0);
