// Package packaging holds mcpflow's install channels besides a clone, and
// their test:
//
//   - dist: the builder behind `make dist` (release archives, npm packages,
//     Python wheels, checksums.txt), a program of its own;
//   - npm/mcpflow.js: the bin of the npm package mcpflow, which runs the
//     binary of the platform package (@mcpflow/OS-CPU);
//   - python/mcpflow: the wheel's Python package, whose console script
//     mcpflow runs the binary it carries;
//   - package-readme.md: the README of the npm and PyPI packages.
//
// The test builds the host platform's artifacts twice (byte for byte the
// same), installs them offline through npm and pip, and runs MCP sessions
// through the npm and Python entry points.
package packaging
