// A TypeScript SDK server (a non-Go peer) for mcpflow to relay: its
// messages are framed and ordered as the TypeScript SDK writes them. It
// also has the transparency tools (tools.mjs).
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";
import { registerTransparencyTools, serverOptions } from "./tools.mjs";

const server = new McpServer({ name: "ts-server", version: "1.0.0" }, serverOptions);
server.registerTool("hello", {
  description: "Greet someone.",
  inputSchema: { name: z.string() },
}, async ({ name }) => ({ content: [{ type: "text", text: `hello, ${name}` }] }));
server.registerTool("big", {
  description: "Return n bytes of text.",
  inputSchema: { n: z.number() },
}, async ({ n }) => ({ content: [{ type: "text", text: "x".repeat(n) }] }));
registerTransparencyTools(server);
await server.connect(new StdioServerTransport());
console.error("ts-server: serving on stdio");
