// A client on the official TypeScript SDK: spawns AGENT..., runs a prompt, prints what it got.
//   node client.mjs PROMPT -- AGENT COMMAND...
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream } from "@agentclientprotocol/sdk";

const args = process.argv.slice(2);
const prompt = args[0];
const command = args.slice(args.indexOf("--") + 1);
const child = spawn(command[0], command.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const text = [];

const lines = await client({ name: "ts-client" })
  .onNotification(methods.client.session.update, (ctx) => {
    text.push(ctx.params.update.content?.text ?? "");
  })
  .connectWith(stream, async (ctx) => {
    const out = [];
    const init = await ctx.request(methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
    out.push(`protocol ${init.protocolVersion}`);
    const session = await ctx.request(methods.agent.session.new, { cwd: "/tmp", mcpServers: [] });
    await ctx.request(methods.agent.session.prompt, {
      sessionId: session.sessionId,
      prompt: [{ type: "text", text: prompt }],
    });
    out.push(`text ${text.join("")}`);
    try {
      await ctx.request(methods.agent.session.load, { sessionId: session.sessionId, cwd: "/tmp", mcpServers: [] });
      out.push("load ok");
    } catch (err) {
      out.push(`load error ${err.code}`);
    }
    return out;
  });
console.log(lines.join("\n"));
child.stdin.end();
child.kill();
process.exit(0);
