package clitools

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testkit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pairs holds, per iteration, the time of a baseline and of the same work
// through the Server, measured back to back so that machine load hits both.
type pairs struct{ base, srv, over []time.Duration }

func (p *pairs) add(base, srv time.Duration) {
	p.base = append(p.base, base)
	p.srv = append(p.srv, srv)
	p.over = append(p.over, srv-base)
}

// report gives the medians: p50-base, p50-server and p50-overhead (the
// median of the per-iteration differences), in µs.
func (p *pairs) report(b *testing.B) {
	b.ReportMetric(med(p.base), "p50-base-µs")
	b.ReportMetric(med(p.srv), "p50-server-µs")
	b.ReportMetric(med(p.over), "p50-overhead-µs")
}

// med is the median of ds in µs.
func med(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return float64(ds[len(ds)/2].Nanoseconds()) / 1e3
}

// BenchmarkCallOverhead compares one tools/call of add through the Server
// (Go SDK client, on pipes as on stdio) with running the command it runs
// directly; fork/exec is in both.
func BenchmarkCallOverhead(b *testing.B) {
	for _, era := range testkit.Eras {
		b.Run(era.Name, func(b *testing.B) {
			_, cs := benchClient(b, era, Config{Schema: []string{testkit.ExampleCLI(b), "schema", "--json"}}, nil)
			params := &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 1, "b": 2}}
			var p pairs
			for b.Loop() {
				t0 := time.Now()
				if _, err := exec.Command(testkit.ExampleCLI(b), "add", "--", "1", "2").Output(); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				res, err := cs.CallTool(context.Background(), params)
				if err != nil || res.IsError {
					b.Fatal(err, testkit.Text(res))
				}
				p.add(t1.Sub(t0), time.Since(t1))
			}
			p.report(b)
		})
	}
}

// BenchmarkRefreshListChanged compares Refresh of a changed schema, until
// the client has tools/list_changed, with running the schema command
// directly.
func BenchmarkRefreshListChanged(b *testing.B) {
	for _, era := range testkit.Eras {
		b.Run(era.Name, func(b *testing.B) {
			dir := b.TempDir()
			versions := [2]string{filepath.Join(dir, "a"), filepath.Join(dir, "b")}
			orig, err := os.ReadFile("../../examples/cli/schema.json")
			if err != nil {
				b.Fatal(err)
			}
			os.WriteFile(versions[0], orig, 0o644)
			os.WriteFile(versions[1], []byte(`{"tools":[{"name":"only","parameters":{"type":"object"},"cli_command":["x"]}]}`), 0o644)
			link := filepath.Join(dir, "schema.json")
			if err := os.Symlink(versions[0], link); err != nil {
				b.Fatal(err)
			}
			changed := make(chan struct{}, 1)
			s, _ := benchClient(b, era, Config{Schema: []string{"cat", link}}, func() {
				select {
				case changed <- struct{}{}:
				default:
				}
			})
			var p pairs
			i := 0
			for b.Loop() {
				i++
				os.Remove(link)
				os.Symlink(versions[i%2], link)
				t0 := time.Now()
				if _, err := exec.Command("cat", link).Output(); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if _, err := s.Refresh(context.Background()); err != nil {
					b.Fatal(err)
				}
				select {
				case <-changed:
				case <-time.After(10 * time.Second):
					b.Fatal("no list_changed")
				}
				p.add(t1.Sub(t0), time.Since(t1))
			}
			p.report(b)
		})
	}
}

func benchClient(b *testing.B, era testkit.Era, cfg Config, onChange func()) (*Server, *mcp.ClientSession) {
	b.Helper()
	if cfg.Command == nil {
		cfg.Command = []string{testkit.ExampleCLI(b)}
	}
	s := New(cfg)
	b.Cleanup(s.Close)
	ctx := context.Background()
	if _, err := s.Refresh(ctx); err != nil {
		b.Fatal(err)
	}
	ct := serve(b, s)
	opts := &mcp.ClientOptions{}
	if onChange != nil {
		opts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) { onChange() }
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, opts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: era.Version})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return s, cs
}
