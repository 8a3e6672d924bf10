// A TypeScript SDK server that serves Streamable HTTP (a non-Go peer for
// mcpflow's HTTP child): stateful, a session id per client, on
// http://127.0.0.1:$PORT/mcp. Its variant is read from the file named by
// its first argument when it starts: "v2" adds the reverse tool. It also
// has the transparency tools (tools.mjs), and it refuses logging/setLevel
// to "emergency" with HTTP 400 (no JSON-RPC answer), as a server does that
// answers a request it will not serve with an HTTP error.
import http from "node:http";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { registerTransparencyTools, serverOptions } from "./tools.mjs";

let variant = "v1";
try {
  variant = readFileSync(process.argv[2] ?? "variant", "utf8").trim();
} catch {}

function newServer() {
  const server = new McpServer({ name: "ts-http-server", version: variant }, serverOptions);
  server.registerTool("hello", {
    description: "Greet someone.",
    inputSchema: { name: z.string() },
  }, async ({ name }) => ({ content: [{ type: "text", text: `hello, ${name}` }] }));
  server.registerTool("exit", {
    description: "Exit with code.",
    inputSchema: { code: z.number() },
  }, async ({ code }) => {
    console.error(`ts-http-server: exiting with ${code}`);
    process.exit(code);
  });
  if (variant === "v2") {
    server.registerTool("reverse", {
      description: "Reverse the text.",
      inputSchema: { text: z.string() },
    }, async ({ text }) => ({ content: [{ type: "text", text: [...text].reverse().join("") }] }));
  }
  registerTransparencyTools(server);
  return server;
}

const transports = {};

async function readBody(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const text = Buffer.concat(chunks).toString("utf8");
  return text ? JSON.parse(text) : undefined;
}

const port = Number(process.env.PORT);
http.createServer(async (req, res) => {
  try {
    if (!req.url.startsWith("/mcp")) {
      res.writeHead(404).end();
      return;
    }
    const body = req.method === "POST" ? await readBody(req) : undefined;
    if (body?.method === "logging/setLevel" && body.params?.level === "emergency") {
      res.writeHead(400, { "Content-Type": "text/plain" }).end("logging/setLevel to emergency refused");
      return;
    }
    const sid = req.headers["mcp-session-id"];
    let transport = sid ? transports[sid] : undefined;
    if (!transport) {
      if (req.method !== "POST" || !isInitializeRequest(body)) {
        res.writeHead(sid ? 404 : 400, { "Content-Type": "application/json" })
          .end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32000, message: "no session" } }));
        return;
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => { transports[id] = transport; },
      });
      await newServer().connect(transport);
    }
    await transport.handleRequest(req, res, body);
  } catch (err) {
    console.error("ts-http-server:", err);
    if (!res.headersSent) res.writeHead(500).end();
  }
}).listen(port, "127.0.0.1", () => {
  console.log(`ts-http-server ${variant} serving http://127.0.0.1:${port}/mcp`);
});
