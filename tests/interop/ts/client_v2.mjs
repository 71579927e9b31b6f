// An ACP v2 client on the TypeScript SDK's experimental v2 API (with its unstable surface, for archive).
//   node client_v2.mjs echo TEXT -- AGENT COMMAND...   prompt, list, archive, unarchive
//   node client_v2.mjs coder FILE -- AGENT COMMAND...  a turn with a permission allowed, then one cancelled while asked
// It prints one line per fact it checked; the test compares them.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream } from "@agentclientprotocol/sdk/experimental/v2/unstable";

const args = process.argv.slice(2);
const [mode, arg] = args;
const command = args.slice(args.indexOf("--") + 1);
const child = spawn(command[0], command.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const updates = []; // every session/update, in arrival order
let wake = () => {};
let onPermission = async () => ({ outcome: { outcome: "cancelled" } });

// The updates of a session from index `from` up to its idle state_update (waiting for it).
async function untilIdle(sessionId, from) {
  for (;;) {
    const seen = updates.slice(from).filter((n) => n.sessionId === sessionId);
    const idle = seen.findIndex((n) => n.update.sessionUpdate === "state_update" && n.update.state === "idle");
    if (idle >= 0) return seen.slice(0, idle + 1).map((n) => n.update);
    await new Promise((resolve) => (wake = resolve));
  }
}

async function turn(ctx, sessionId, text) {
  const from = updates.length;
  const ack = await ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
  const seen = await untilIdle(sessionId, from);
  const user = seen.find((u) => u.sessionUpdate === "user_message");
  const texts = new Map(); // agent text by messageId: agent_message replaces, chunks append
  for (const u of seen) {
    if (u.sessionUpdate === "agent_message") texts.set(u.messageId, (u.content ?? []).map((b) => b.text ?? "").join(""));
    if (u.sessionUpdate === "agent_message_chunk") texts.set(u.messageId, (texts.get(u.messageId) ?? "") + (u.content.text ?? ""));
  }
  const states = seen.filter((u) => u.sessionUpdate === "state_update").map((u) => u.state);
  const tools = seen.filter((u) => u.sessionUpdate === "tool_call_update" && u.status).map((u) => u.status);
  return {
    ack: typeof ack.messageId === "string" && user?.messageId === ack.messageId ? "acknowledged" : `ack ${JSON.stringify(ack)}`,
    text: [...texts.values()].join(""),
    states: states.join(" "),
    tools: tools.join(" "),
    stop: seen.at(-1).stopReason,
    diff: seen.some((u) => (u.content ?? []).some?.((c) => c.type === "diff" && c.patch?.format === "git_patch")),
  };
}

const ids = (page) => page.sessions.map((s) => s.sessionId);

const lines = await client({ name: "ts-v2-client" })
  .onNotification(methods.client.session.update, (ctx) => {
    updates.push(ctx.params);
    wake();
  })
  .onRequest(methods.client.session.requestPermission, (ctx) => onPermission(ctx))
  .connectWith(stream, async (ctx) => {
    const out = [];
    const init = await ctx.request(methods.agent.initialize, {
      protocolVersion: 2,
      info: { name: "ts-v2-client", version: "1.0" },
    });
    out.push(`protocol ${init.protocolVersion}, archive ${init.capabilities?.session?.archive ? "offered" : "not offered"}`);
    const cwd = process.cwd();
    const { sessionId } = await ctx.request(methods.agent.session.new, { cwd });
    if (mode === "echo") {
      const t = await turn(ctx, sessionId, arg);
      out.push(`${t.ack}; states ${t.states}; stop ${t.stop}`, `text ${t.text}`);
      const other = (await ctx.request(methods.agent.session.new, { cwd: "/" })).sessionId;
      out.push(`list cwd: ${ids(await ctx.request(methods.agent.session.list, { cwd })).join() === sessionId}`);
      out.push(`list all: ${ids(await ctx.request(methods.agent.session.list, {})).length}`);
      await ctx.request(methods.agent.session.archive, { sessionId });
      const after = ids(await ctx.request(methods.agent.session.list, {}));
      const only = ids(await ctx.request(methods.agent.session.list, { archived: "only" }));
      out.push(`archived: hidden ${!after.includes(sessionId)}, only ${only.join() === sessionId}, other listed ${after.includes(other)}`);
      await ctx.request(methods.agent.session.unarchive, { sessionId });
      out.push(`unarchived: listed ${ids(await ctx.request(methods.agent.session.list, {})).includes(sessionId)}`);
    } else {
      const prompt = `rename x to y in ${arg}`;
      onPermission = async (p) => ({ outcome: { outcome: "selected", optionId: p.params.options.find((o) => o.kind === "allow_once").optionId } });
      const t = await turn(ctx, sessionId, prompt);
      out.push(`${t.ack}; states ${t.states}; stop ${t.stop}`, `tools ${t.tools}; diff ${t.diff}`, `text ${t.text}`);
      // cancelled while the permission is asked: the client answers `cancelled` after session/cancel
      onPermission = async (p) => {
        await ctx.notify(methods.agent.session.cancel, { sessionId: p.params.sessionId });
        return { outcome: { outcome: "cancelled" } };
      };
      const c = await turn(ctx, sessionId, prompt);
      out.push(`cancelled: states ${c.states}; stop ${c.stop}; tools ${c.tools}`);
    }
    return out;
  });
console.log(lines.join("\n"));
child.stdin.end();
process.exit(0);
