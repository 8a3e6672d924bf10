// The tools the transparency tests (transparency_e2e_test.go) call on the
// TypeScript SDK servers, shared by server.mjs (stdio) and httpserver.mjs
// (Streamable HTTP). Their answers are deterministic, so that a test can
// compare, byte for byte, what a client reads from the server directly
// with what it reads through mcpflow.
//
// The server must be created with serverOptions: notify's log messages
// need the logging capability (the SDK refuses to send notifications/message
// without it).
//
//   rich          an image, a text, structuredContent and a top-level field
//                 no MCP revision defines (x_unknown_field: the SDK's
//                 result schema is a loose object, which keeps it)
//   notify        3 log messages (notifications/message sent as they are,
//                 with no check of any level the client set) and 3
//                 progress notifications (to the request's progressToken
//                 when it has one), interleaved, all before its result
//   ask_sampling  sampling/createMessage to the client; the answer as JSON
//   ask_elicit    elicitation/create (form) to the client; the answer as JSON
//   ask_roots     roots/list to the client; the answer as JSON
//   pid           the process's pid
//
// The server→client requests name the call they belong to
// (relatedRequestId), so that over HTTP they travel on the call's stream.

// serverOptions are the McpServer options the tools need.
export const serverOptions = { capabilities: { logging: {} } };

// A 1×1 PNG (one opaque pixel).
const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

// What rich returns: characters an encoder may escape differently (<, >,
// &, U+2028, non-ASCII), numbers an encoder may rewrite (1.50, 1e3 are
// written by JSON.stringify as 1.5 and 1000; what matters is that they
// pass unchanged), a null, nesting.
export const richResult = {
  content: [
    { type: "image", data: png, mimeType: "image/png" },
    { type: "text", text: "rich <b>&amp;</b> \u2028 é ✓ \u{1F600} \"quoted\" \\ end" },
  ],
  structuredContent: {
    answer: 42,
    ratio: 1.5,
    big: 1e21,
    tiny: 5e-7,
    none: null,
    list: [1, "two", { three: [3] }, true],
    "unicode ✓": "é\u2028<>&",
  },
  x_unknown_field: { kept: true, nested: { n: 1, s: "x" } },
};

export function registerTransparencyTools(server) {
  server.registerTool("rich", {
    description: "An image, a text, structured content and an unknown field.",
  }, async () => structuredClone(richResult));

  server.registerTool("notify", {
    description: "Three log messages and three progress notifications, then the result.",
  }, async (extra) => {
    const token = extra._meta?.progressToken;
    for (let i = 1; i <= 3; i++) {
      await extra.sendNotification({
        method: "notifications/message",
        params: { level: i === 2 ? "debug" : "info", logger: "ts-peer", data: { step: i, text: `log ${i} <&>` } },
      });
      if (token !== undefined) {
        await extra.sendNotification({
          method: "notifications/progress",
          params: { progressToken: token, progress: i, total: 3, message: `step ${i}` },
        });
      }
    }
    return { content: [{ type: "text", text: "notified" }] };
  });

  server.registerTool("ask_sampling", {
    description: "Ask the client's model (sampling/createMessage).",
  }, async (extra) => {
    const res = await server.server.createMessage({
      messages: [{ role: "user", content: { type: "text", text: "sample me <&>" } }],
      maxTokens: 7,
      systemPrompt: "be brief",
    }, { relatedRequestId: extra.requestId });
    return { content: [{ type: "text", text: JSON.stringify(res) }] };
  });

  server.registerTool("ask_elicit", {
    description: "Ask the user (elicitation/create, form).",
  }, async (extra) => {
    const res = await server.server.elicitInput({
      mode: "form",
      message: "elicit me",
      requestedSchema: { type: "object", properties: { answer: { type: "string" } }, required: ["answer"] },
    }, { relatedRequestId: extra.requestId });
    return { content: [{ type: "text", text: JSON.stringify(res) }] };
  });

  server.registerTool("ask_roots", {
    description: "List the client's roots (roots/list).",
  }, async (extra) => {
    const res = await server.server.listRoots(undefined, { relatedRequestId: extra.requestId });
    return { content: [{ type: "text", text: JSON.stringify(res) }] };
  });

  server.registerTool("pid", {
    description: "The server's process id.",
  }, async () => ({ content: [{ type: "text", text: String(process.pid) }] }));
}
