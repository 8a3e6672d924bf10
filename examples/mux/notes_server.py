#!/usr/bin/env python3
"""A small MCP server over stdio, Python standard library only.

It keeps notes in memory and offers two tools, add_note and list_notes.
It speaks the 2025-06-18 revision (initialize handshake) and answers
server/discover with "method not found", as a legacy-only server does.
"""
import json
import sys

NOTES = []

TOOLS = [
    {
        "name": "add_note",
        "description": "Store a note.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    },
    {
        "name": "list_notes",
        "description": "List the stored notes.",
        "inputSchema": {"type": "object", "properties": {}},
    },
]


def result(msg_id, res):
    return {"jsonrpc": "2.0", "id": msg_id, "result": res}


def error(msg_id, code, message):
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


def text(s, is_error=False):
    return {"content": [{"type": "text", "text": s}], "isError": is_error}


def handle(msg):
    method = msg.get("method")
    msg_id = msg.get("id")
    params = msg.get("params") or {}
    if msg_id is None:
        return None  # a notification
    if method == "initialize":
        return result(msg_id, {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "notes", "version": "1.0.0"},
            "instructions": "Notes kept in memory; add_note stores, list_notes lists.",
        })
    if method == "ping":
        return result(msg_id, {})
    if method == "tools/list":
        return result(msg_id, {"tools": TOOLS})
    if method == "tools/call":
        name = params.get("name")
        args = params.get("arguments") or {}
        if name == "add_note":
            NOTES.append(str(args.get("text", "")))
            return result(msg_id, text("stored note %d" % len(NOTES)))
        if name == "list_notes":
            return result(msg_id, text("\n".join(NOTES) or "(no notes)"))
        return result(msg_id, text("unknown tool %r" % name, True))
    return error(msg_id, -32601, "method not found: %s" % method)


def main():
    print("notes server ready", file=sys.stderr, flush=True)
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            out = error(None, -32700, "parse error")
        else:
            out = handle(msg) if isinstance(msg, dict) else error(None, -32600, "batches are not supported")
        if out is not None:
            sys.stdout.write(json.dumps(out) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
