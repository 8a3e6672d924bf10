// A TypeScript SDK client (a non-Go peer) at the start of a session:
// connects to "mcpflow watch" in the folder DIR, whose build creates
// DIR/built when it ends; lists the tools, calls reverse at once, and
// waits for tools/list_changed. Usage: node first.mjs MCPFLOW DIR NAME
// (NAME: the client's name). Prints one JSON line of what it saw.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [mcpflow, dir, name] = process.argv.slice(2);
const fail = (msg) => { console.error("FAIL: " + msg); process.exit(1); };
setTimeout(() => fail("timed out"), 60_000).unref();

const built = () => existsSync(join(dir, "built"));
const client = new Client({ name, version: "1.0.0" });
let changed;
const listChanged = new Promise((resolve) => { changed = resolve; });
client.setNotificationHandler(ToolListChangedNotificationSchema, () => changed());
const start = Date.now();
await client.connect(new StdioClientTransport({ command: mcpflow, args: ["watch"], cwd: dir, stderr: "inherit" }));
const tools = (await client.listTools()).tools.map((t) => t.name);
const seen = { server: client.getServerVersion()?.name, tools, builtAtList: built(), listMs: Date.now() - start };
const rev = await client.callTool({ name: "reverse", arguments: { text: "abc" } });
seen.reverse = rev.content?.[0]?.text;
seen.builtAtCall = built();
await listChanged;
seen.toolsAfter = (await client.listTools()).tools.map((t) => t.name);
await client.close();
console.log(JSON.stringify(seen));
