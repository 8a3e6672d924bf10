// A TypeScript SDK client (a non-Go peer) driving mcpflow: list tools, edit
// the server's "source", call recompile, wait for tools/list_changed, call
// the new tool. Usage: node client.mjs MCPFLOW FIXTURE VARIANT_FILE
// Prints "OK" and exits 0 on success; exits 1 with the reason otherwise.
import { writeFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [mcpflow, fixture, variantFile] = process.argv.slice(2);
const fail = (msg) => { console.error("FAIL: " + msg); process.exit(1); };
setTimeout(() => fail("timed out"), 60_000).unref();

writeFileSync(variantFile, "v1");
const transport = new StdioClientTransport({
  command: mcpflow,
  args: ["watch", "--", fixture, "-variant-file", variantFile],
  stderr: "inherit",
});
const client = new Client({ name: "ts-client", version: "1.0.0" });
let changed;
const listChanged = new Promise((resolve) => { changed = resolve; });
client.setNotificationHandler(ToolListChangedNotificationSchema, () => changed());
await client.connect(transport);

const caps = client.getServerCapabilities();
if (!caps?.tools?.listChanged) fail("tools.listChanged not advertised: " + JSON.stringify(caps));

const names = async () => (await client.listTools()).tools.map((t) => t.name);
let tools = await names();
if (!tools.includes("echo") || !tools.includes("recompile") || tools.includes("reverse")) fail("tools before: " + tools);

const echo = await client.callTool({ name: "echo", arguments: { text: "from typescript" } });
if (echo.content[0].text !== "from typescript") fail("echo: " + JSON.stringify(echo));

writeFileSync(variantFile, "v2");
const res = await client.callTool({ name: "recompile", arguments: {} });
if (res.isError || !res.content[0].text.includes("+reverse")) fail("recompile: " + JSON.stringify(res));
await listChanged;

tools = await names();
if (!tools.includes("reverse")) fail("tools after: " + tools);
const rev = await client.callTool({ name: "reverse", arguments: { text: "abc" } });
if (rev.content[0].text !== "cba") fail("reverse: " + JSON.stringify(rev));

await client.close();
console.log("OK");
