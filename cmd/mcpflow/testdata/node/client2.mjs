// A TypeScript SDK 2.x client (a non-Go peer of the 2026-07-28 revision)
// driving mcpflow. With versionNegotiation "auto", as Claude Code's
// MCP_PROTOCOL_NEGOTIATION=auto, it probes server/discover on a short-lived
// sibling mcpflow process, kills it, then starts the real one.
// Usage: node client2.mjs MCPFLOW FIXTURE VARIANT_FILE
// Prints "OK <era> <version>" and exits 0 on success; exits 1 otherwise.
import { writeFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const [mcpflow, fixture, variantFile] = process.argv.slice(2);
const fail = (msg) => { console.error("FAIL: " + msg); process.exit(1); };
setTimeout(() => fail("timed out"), 60_000).unref();

writeFileSync(variantFile, "v1");
let changed;
const listChanged = new Promise((resolve) => { changed = resolve; });
const client = new Client({ name: "ts2-client", version: "1.0.0" }, {
  versionNegotiation: { mode: "auto" },
  listChanged: { tools: { debounceMs: 0, onChanged: (err, tools) => { if (!err) changed(tools); } } },
});
await client.connect(new StdioClientTransport({
  command: mcpflow,
  args: ["watch", "--", fixture, "-variant-file", variantFile],
  stderr: "inherit",
}));
const era = client.getProtocolEra?.();
const version = client.getNegotiatedProtocolVersion?.();

const names = async () => (await client.listTools()).tools.map((t) => t.name);
let tools = await names();
if (!tools.includes("echo") || !tools.includes("recompile") || tools.includes("reverse")) fail("tools before: " + tools);

writeFileSync(variantFile, "v2");
const res = await client.callTool({ name: "recompile", arguments: {} });
if (res.isError || !res.content[0].text.includes("+reverse")) fail("recompile: " + JSON.stringify(res));
const refreshed = await listChanged;
if (!refreshed?.some((t) => t.name === "reverse")) fail("list_changed refresh: " + JSON.stringify(refreshed?.map((t) => t.name)));

tools = await names();
if (!tools.includes("reverse")) fail("tools after: " + tools);
const rev = await client.callTool({ name: "reverse", arguments: { text: "abc" } });
if (rev.content[0].text !== "cba") fail("reverse: " + JSON.stringify(rev));

await client.close();
console.log(`OK ${era} ${version}`);
