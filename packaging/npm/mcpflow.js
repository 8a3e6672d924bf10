#!/usr/bin/env node
// The mcpflow command of the npm package mcpflow. It runs the binary of the
// platform package that npm installed beside this one (@mcpflow/OS-CPU, an
// optional dependency; npm picks it by its os and cpu fields).
//
// The binary gets this process's stdin, stdout and stderr as they are
// (stdout is the MCP protocol: nothing here writes to it, and nothing here
// writes to stderr once the binary runs, since a write could make the
// shared descriptor non-blocking under it). SIGINT, SIGTERM and SIGHUP are
// passed on to it; its exit status, or the signal that ended it, is this
// process's. If this process is killed outright, the binary still ends: it
// watches its parent (mcpflow exits when its parent pid changes), and its
// stdin is the client's pipe, not this process's.
"use strict";

const { spawn } = require("child_process");
const os = require("os");
const path = require("path");
const pkg = require("../package.json");

function fail(message) {
  process.stderr.write(`mcpflow: ${message}\n`);
  process.exit(1);
}

function binaryPath() {
  const platform = `${process.platform}-${process.arch}`;
  const name = `@mcpflow/${platform}`;
  const known = Object.keys(pkg.optionalDependencies || {});
  if (!known.includes(name)) {
    const list = known.map((n) => n.slice("@mcpflow/".length)).join(", ");
    fail(`no binary for ${platform} on npm (there is one for ${list}); ` +
      "build it from source: https://github.com/mcpflow/mcpflow#install");
  }
  let dir;
  try {
    dir = path.dirname(require.resolve(`${name}/package.json`));
  } catch {
    // A development build (make dist on an untagged commit: 0.0.0-dev.HASH)
    // was never published: its platform package is the tarball make dist
    // wrote beside this package's. A release publishes every platform
    // package with this one.
    const install = pkg.version.includes("-dev.")
      ? `No ${name} is published on npm for this development build (${pkg.version}): install the\n` +
        "tarball make dist wrote beside this package's, from the clone:\n" +
        `  npm install dist/npm/${name.slice(1).replace("/", "-")}-${pkg.version}.tgz`
      : "Install it:\n" +
        `  npm install ${name}@${pkg.version}`;
    fail(`the package ${name}, which holds the binary for this platform, is not installed.\n` +
      "npm leaves it out when optional dependencies are omitted (--omit=optional, --no-optional)\n" +
      "or when the lockfile was written on another platform. " + install);
  }
  return path.join(dir, "bin", process.platform === "win32" ? "mcpflow.exe" : "mcpflow");
}

const bin = binaryPath();
const child = spawn(bin, process.argv.slice(2), { stdio: "inherit", windowsHide: true });

// On Windows a console's Ctrl-C (and its closing) reaches the binary by
// itself, and child.kill would terminate it outright: there, a signal only
// keeps this process waiting for the binary.
const signals = ["SIGINT", "SIGTERM", "SIGHUP"];
function forward(signal) {
  if (process.platform !== "win32") {
    child.kill(signal);
  }
}
for (const s of signals) {
  process.on(s, forward);
}

child.on("error", (err) => fail(`cannot run ${bin}: ${err.message}`));
child.on("exit", (code, signal) => {
  if (signal) {
    // End the same way: the default action of the signal, with no handler.
    for (const s of signals) {
      process.removeListener(s, forward);
    }
    process.kill(process.pid, signal);
    // A signal whose default is not to end a process (or one Node ignores).
    setTimeout(() => process.exit(128 + (os.constants.signals[signal] || 0)), 500);
    return;
  }
  process.exit(code ?? 1);
});
