"""A minimal MCP server on the Python standard library: newline-delimited
JSON-RPC over stdio, the legacy-era handshake, and two tools.

add(a, b) returns the sum; where() returns sys.prefix, so a test can tell
which interpreter (python3, a project's .venv) runs it. The init tests copy
this file into each Python layout mcpflow init detects and start it with the
command init wrote.
"""

import json
import sys

TOOLS = [
    {
        "name": "add",
        "description": "Add two numbers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
    },
    {
        "name": "where",
        "description": "The interpreter's sys.prefix.",
        "inputSchema": {"type": "object", "properties": {}},
    },
]


def handle(msg):
    method = msg.get("method")
    params = msg.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "py-fixture", "version": "1"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        args = params.get("arguments") or {}
        if params.get("name") == "add":
            text = str(args.get("a", 0) + args.get("b", 0))
        elif params.get("name") == "where":
            text = sys.prefix
        else:
            return {"content": [{"type": "text", "text": "unknown tool"}], "isError": True}
        return {"content": [{"type": "text", "text": text}]}
    raise LookupError(method)


def main():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        if "id" not in msg:
            continue
        reply = {"jsonrpc": "2.0", "id": msg["id"]}
        try:
            reply["result"] = handle(msg)
        except LookupError as e:
            reply["error"] = {"code": -32601, "message": "method not found: %s" % e}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
