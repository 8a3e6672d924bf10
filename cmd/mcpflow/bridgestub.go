package main

import "github.com/mcpflow/mcpflow/internal/wire"

// newBridge is relay.Config.Bridge (internal/bridge).
var newBridge func(upstream wire.Opener, c wire.Client) wire.Session
