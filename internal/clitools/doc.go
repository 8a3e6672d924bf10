// Package clitools serves a command-line program as MCP tools: the
// program prints its tool list as JSON (its schema command), and each
// tools/call runs it once, in a fresh process, with an argv built from the
// call's arguments and no shell.
//
// # Contract
//
//   - parseSchema accepts {"tools": [{name, description, title?, parameters |
//     inputSchema, outputSchema?, annotations?, cli_command, input?}]}.
//     Names are 1-128 characters of A-Za-z0-9_.- and unique, the input
//     schema is an object schema, every placeholder of cli_command names a
//     declared parameter. Any problem is a *schemaError with the JSON
//     pointer, byte offset, line and column of the offending value.
//   - The argv of a call is Config.Command, then cli_command expanded, then
//     Config.Append. Template rules: a literal element is copied; "{p}" as
//     a whole element is exactly one element (an array: one per item),
//     whatever the value holds; "a{p}b" substitutes text into one element;
//     numbers and booleans are written in their JSON text; a nested array
//     is a group, kept only when every placeholder directly in it is
//     present (not missing, not null) and its guards hold; "{?p}" inside a
//     group keeps it when p is present and not false, "{!p}" when p is
//     absent or false; a group holding an array parameter as a whole
//     element repeats once per item. A value that starts with "-" in a
//     positional slot (a value at the start of an element not right after
//     a flag literal, and before any literal "--") is refused unless its
//     property schema sets "x-cli-allow-dash": true. "{{" and "}}" are
//     literal braces.
//   - Arguments are validated against the tool's input schema before any
//     process starts; a bad call is a tool error (isError), never a
//     process.
//   - Each call runs in its own process group with Config.Dir and
//     Config.Env; stdin is empty, or the arguments as one JSON object for
//     "input": "stdin". At most MaxParallel calls run at once; the others
//     wait. A timeout, stdout beyond MaxOutput, the call's context ending
//     (client cancel, client gone) or Close kill the whole group, and the
//     call answers once, with isError and the reason. Exit 0 with a JSON
//     object on stdout gives structuredContent plus the JSON as text;
//     other stdout is text. A non-zero exit gives isError with the status,
//     stdout and the stderr tail. With a progress token, stderr lines are
//     sent as progress notifications, at most ten a second.
//   - A Server is a wire.Opener: stdio (wire.Serve), the HTTP front and
//     the mux open its sessions. Every call goes through the MCP server,
//     its middleware and the tool's handler.
//   - Refresh runs the schema command and updates the served tools only
//     where the client's view differs; the SDK's server then sends
//     tools/list_changed. A failed refresh changes nothing served; its
//     error is returned, reported by the recompile tool and appended as a
//     note to every call's result until a refresh succeeds.
package clitools
