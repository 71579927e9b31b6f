// An ACP v1 client on the TypeScript SDK (its unstable entrypoint, for archive).
//   node client_v1.mjs echo TEXT -- AGENT COMMAND...   prompt, list, archive, load with replay
//   node client_v1.mjs coder FILE -- AGENT COMMAND...  a turn reading FILE through the client (its buffer,
//       not the disk) with the permission allowed, then one cancelled while the permission is asked
// It prints one line per fact it checked; the test compares them.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream } from "@agentclientprotocol/sdk/unstable";

const args = process.argv.slice(2);
const [mode, arg] = args;
const command = args.slice(args.indexOf("--") + 1);
const child = spawn(command[0], command.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const BUFFER = "x = x * x\n"; // the editor's unsaved buffer of FILE: three x where the disk has two

let updates = [];
let onPermission = async () => ({ outcome: { outcome: "cancelled" } });
const text = (us) => us.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text ?? "").join("");
const tools = (us) => us.filter((u) => u.sessionUpdate.startsWith("tool_call") && u.status).map((u) => u.status).join(" ");
const ids = (page) => page.sessions.map((s) => s.sessionId);

const lines = await client({ name: "ts-v1-client" })
  .onNotification(methods.client.session.update, (ctx) => {
    updates.push(ctx.params.update);
  })
  .onRequest(methods.client.session.requestPermission, (ctx) => onPermission(ctx))
  .onRequest(methods.client.fs.readTextFile, async () => ({ content: BUFFER }))
  .connectWith(stream, async (ctx) => {
    const out = [];
    const init = await ctx.request(methods.agent.initialize, {
      protocolVersion: 1,
      clientCapabilities: { fs: { readTextFile: mode === "coder", writeTextFile: false } },
    });
    out.push(`protocol ${init.protocolVersion}`);
    const cwd = process.cwd();
    const { sessionId } = await ctx.request(methods.agent.session.new, { cwd, mcpServers: [] });
    const prompt = async (t) => {
      updates = [];
      const r = await ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: t }] });
      return { stop: r.stopReason, updates };
    };
    if (mode === "echo") {
      const t = await prompt(arg);
      out.push(`stop ${t.stop}`, `text ${text(t.updates)}`);
      const ids1 = new Set(t.updates.map((u) => u.messageId));
      const t2 = await prompt(arg);
      out.push(`a new message id each turn: ${t2.updates.every((u) => !ids1.has(u.messageId))}`);
      await ctx.request(methods.agent.session.new, { cwd: "/", mcpServers: [] });
      out.push(`list cwd: ${ids(await ctx.request(methods.agent.session.list, { cwd })).join() === sessionId}`);
      await ctx.request(methods.agent.session.archive, { sessionId });
      const after = ids(await ctx.request(methods.agent.session.list, {}));
      const only = ids(await ctx.request(methods.agent.session.list, { archived: "only" }));
      out.push(`archived: hidden ${!after.includes(sessionId)}, only ${only.join() === sessionId}, others ${after.length}`);
      updates = [];
      await ctx.request(methods.agent.session.load, { sessionId, cwd, mcpServers: [] });
      out.push(`load replays: ${text(updates)}`);
    } else {
      onPermission = async (p) => ({ outcome: { outcome: "selected", optionId: p.params.options.find((o) => o.kind === "allow_once").optionId } });
      const t = await prompt(`rename x to y in ${arg}`);
      const diff = t.updates.some((u) => (u.content ?? []).some?.((c) => c.type === "diff" && c.oldText === BUFFER));
      out.push(`stop ${t.stop}; tools ${tools(t.updates)}; diff of the buffer ${diff}`, `text ${text(t.updates)}`);
      onPermission = async (p) => {
        await ctx.notify(methods.agent.session.cancel, { sessionId: p.params.sessionId });
        return { outcome: { outcome: "cancelled" } };
      };
      const c = await prompt(`rename x to y in ${arg}`);
      out.push(`cancelled: stop ${c.stop}; tools ${tools(c.updates)}`);
    }
    return out;
  });
console.log(lines.join("\n"));
child.stdin.end();
process.exit(0);
