// A TypeScript SDK 2.x client over Streamable HTTP (a non-Go peer of
// mcpflow's HTTP front): list the tools, change the server's "source",
// wait for tools/list_changed on its stream, call the new tool in the same
// session. Usage: node httpclient.mjs URL SOURCE_FILE [auto]
// ("auto": the versionNegotiation mode Claude Code's
// MCP_PROTOCOL_NEGOTIATION=auto sets). Prints "OK <era> <version>
// <session id or ->" and exits 0 on success; exits 1 otherwise.
import { writeFileSync } from "node:fs";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const [url, source, mode] = process.argv.slice(2);
const fail = (msg) => { console.error("FAIL: " + msg); process.exit(1); };
setTimeout(() => fail("timed out"), 60_000).unref();

let changed;
const listChanged = new Promise((resolve) => { changed = resolve; });
const options = {
  listChanged: { tools: { debounceMs: 0, onChanged: (err, tools) => { if (!err && tools?.some((t) => t.name === "reverse")) changed(tools); } } },
};
if (mode === "auto") options.versionNegotiation = { mode: "auto" };
const client = new Client({ name: "ts-http-client", version: "1.0.0" }, options);
const transport = new StreamableHTTPClientTransport(new URL(url));
await client.connect(transport);
const era = client.getProtocolEra?.();
const version = client.getNegotiatedProtocolVersion?.();
const session = transport.sessionId;

const names = async () => (await client.listTools()).tools.map((t) => t.name);
let tools = await names();
if (!tools.includes("echo") || tools.includes("reverse")) fail("tools before: " + tools);
const echo = await client.callTool({ name: "echo", arguments: { text: "hi" } });
if (echo.content[0].text !== "hi") fail("echo: " + JSON.stringify(echo));

writeFileSync(source, "v2");
await listChanged;
tools = await names();
if (!tools.includes("reverse")) fail("tools after: " + tools);
const rev = await client.callTool({ name: "reverse", arguments: { text: "abc" } });
if (rev.content[0].text !== "cba") fail("reverse: " + JSON.stringify(rev));
if (transport.sessionId !== session) fail(`session id ${session} became ${transport.sessionId}`);

await client.close();
console.log(`OK ${era} ${version} ${session ?? "-"}`);
