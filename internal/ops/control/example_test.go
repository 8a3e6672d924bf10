package control_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/mcpflow/mcpflow/internal/ops/control"
	"github.com/mcpflow/mcpflow/internal/ops/logring"
	"github.com/mcpflow/mcpflow/internal/ops/traffic"
	"github.com/mcpflow/mcpflow/internal/report/result"
)

// instance stands for what mcpflow watch composes: it reports its state
// and rebuilds on request.
type instance struct{}

func (instance) Status() control.Status {
	return control.Status{Servers: []control.ServerStatus{{Name: "weather", State: "running"}}}
}

func (instance) Rebuild(ctx context.Context, name string) (result.Build, error) {
	return result.Build{OK: true}, nil
}

// What mcpflow watch adds: a log ring beside stderr (ring first: it never
// fails, and io.MultiWriter stops at the first writer that does), the
// control socket, and the traffic capture's hook for the relay.
func ExampleListen() {
	ring := logring.New(0)
	logOut := io.MultiWriter(ring, os.Stderr) // the logger writes here
	_ = logOut

	srv, err := control.Listen(control.Info{
		Config: "/home/ann/weather/mcpflow.toml", Project: "/home/ann/weather",
		Mode: control.ModeSingle, Version: "v0.3.0", Target: instance{}, Logs: ring,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpflow: no control socket:", err) // a warning: the session goes on
	} else {
		defer srv.Close()
	}

	tw, err := traffic.Open("/home/ann/weather/.mcpflow/traffic.jsonl", traffic.Options{})
	if err == nil {
		defer tw.Close()
		hook := tw.Hook("") // relay.Config{Traffic: hook}; a mux passes the server's name
		_ = hook
	}
}

// mcpflow status [--json]: every instance of this project.
func ExampleInstances() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	wd, _ := os.Getwd()
	insts, err := control.Instances(control.Filter{Project: wd}) // or Filter{Config: abs(-c FILE)}; Filter{} = all
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpflow:", err)
		return
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	control.WriteStatus(os.Stdout, control.Statuses(sctx, insts)) // or WriteStatusJSON
}

// mcpflow rebuild [NAME] and mcpflow logs [-f].
func ExampleClient_Rebuild() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	wd, _ := os.Getwd()
	insts, err := control.Instances(control.Filter{Project: wd})
	if err == nil {
		var inst control.Instance
		inst, err = control.Pick(insts, 0) // 0, or --pid
		if err == nil {
			c := control.Dial(inst)
			defer c.Close()
			var b result.Build
			b, err = c.Rebuild(ctx, "") // NAME in a mux
			if err == nil {
				control.WriteBuild(os.Stdout, "", b)
				os.Exit(control.ExitCode(b))
			}
			// logs: err = c.Logs(ctx, os.Stdout, follow, tail)
		}
	}
	fmt.Fprintln(os.Stderr, "mcpflow:", err)
	os.Exit(1)
}
