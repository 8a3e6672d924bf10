package testkit

// Project files as users' tools write them, for the tests of init and
// check and the end-to-end tests that build them.

// TSServer is a TypeScript SDK server with the tool add, and sub when
// withSub: what a user writes in src/index.ts.
func TSServer(withSub bool) string {
	sub := ""
	if withSub {
		sub = `
server.registerTool("sub", { description: "a-b", inputSchema: { a: z.number(), b: z.number() } },
  async ({ a, b }) => ({ content: [{ type: "text", text: String(a - b) }] }));
`
	}
	return `import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "notes", version: "1.0.0" });
server.registerTool("add", { description: "a+b", inputSchema: { a: z.number(), b: z.number() } },
  async ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }] }));
` + sub + `
await server.connect(new StdioServerTransport());
`
}

// TSCInitConfig is tsconfig.json as "tsc --init" (TypeScript 5.9) writes
// it, comments and trailing comma included, with the File Layout lines
// uncommented as its comments suggest.
const TSCInitConfig = `{
  // Visit https://aka.ms/tsconfig to read more about this file
  "compilerOptions": {
    // File Layout
    "rootDir": "./src",
    "outDir": "./dist",

    // Environment Settings
    // See also https://aka.ms/tsconfig/module
    "module": "nodenext",
    "target": "esnext",
    "types": [],

    /* Other Outputs */
    "sourceMap": true,
    "declaration": true,

    // Recommended Options
    "strict": true,
    "verbatimModuleSyntax": true,
    "isolatedModules": true,
    "moduleDetection": "force",
    "skipLibCheck": true,
  }
}
`

// NPMInitPackage is package.json as "npm init -y" (npm 11) writes it, with
// the module type the SDK needs and a build script.
func NPMInitPackage(extra string) string {
	return `{
  "name": "notes-server",
  "version": "1.0.0",
  "description": "",
  "main": "index.js",
  "scripts": {
    "build": "tsc",
    "test": "echo \"Error: no test specified\" && exit 1"
  },` + extra + `
  "keywords": [],
  "author": "",
  "license": "ISC",
  "type": "module"
}
`
}

// TSHTTPServer is a TypeScript SDK 1.x server over Streamable HTTP, with Express; port
// is how it picks its port.
func TSHTTPServer(port string) string {
	return `import express from "express";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";

const server = new McpServer({ name: "notes", version: "1.0.0" });
const app = express();
app.use(express.json());
app.post("/mcp", async (req, res) => {
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  await server.connect(transport);
  await transport.handleRequest(req, res, req.body);
});
app.get("/health", (_req, res) => res.send("ok"));
` + port + "\n"
}

// jsHTTPServer is a TypeScript SDK 1.x server over Streamable HTTP
// (stateless, with Express) with the tool add, listening on $PORT.
const JSHTTPServer = `import express from "express";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

const app = express();
app.use(express.json());
app.post("/mcp", async (req, res) => {
  const server = new McpServer({ name: "notes", version: "1.0.0" });
  server.registerTool("add", { description: "a+b", inputSchema: { a: z.number(), b: z.number() } },
    async ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }] }));
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.on("close", () => { transport.close(); server.close(); });
  await server.connect(transport);
  await transport.handleRequest(req, res, req.body);
});
app.listen(Number(process.env.PORT ?? 3000), "127.0.0.1", () => console.error("listening"));
`
