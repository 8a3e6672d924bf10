//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"sync"
	"syscall"
	"time"
)

// The HTTP checks run mcpflow as a Streamable HTTP server (watch --http)
// in front of the example, and a client that connects to its URL.

// frontURL is the line mcpflow logs with the address it serves.
var frontURL = regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/mcp`)

// httpFront is a running `mcpflow watch --http`.
type httpFront struct {
	cmd     *exec.Cmd
	url     string
	done    chan error
	once    sync.Once
	stopErr error
}

// startFront starts mcpflow serving p over HTTP on a free loopback port
// and returns once it says where.
func (c *checker) startFront(p *project) (*httpFront, error) {
	_, args := c.server(p)
	cmd := exec.Command(c.mcpflow, append([]string{"watch", "--http", "127.0.0.1:0"}, args[1:]...)...)
	cmd.Dir = p.dir
	cmd.Env = p.env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	f := &httpFront{cmd: cmd, done: make(chan error, 1)}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if u := frontURL.FindString(sc.Text()); u != "" {
				select {
				case found <- u:
				default:
				}
			}
		}
		f.done <- cmd.Wait()
	}()
	select {
	case f.url = <-found:
		return f, nil
	case err := <-f.done:
		return nil, fmt.Errorf("mcpflow watch --http exited before serving: %v", err)
	case <-time.After(30 * time.Second):
		f.stop()
		return nil, errors.New("mcpflow watch --http printed no URL within 30 s")
	}
}

// stop sends SIGTERM and waits for mcpflow to exit, at most 10 s; later
// calls return the first one's result.
func (f *httpFront) stop() error {
	f.once.Do(func() { f.stopErr = f.terminate() })
	return f.stopErr
}

func (f *httpFront) terminate() error {
	_ = f.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-f.done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			return err
		}
		return nil
	case <-time.After(10 * time.Second):
		_ = f.cmd.Process.Kill()
		return errors.New("mcpflow did not exit within 10 s of SIGTERM")
	}
}

// claudeHTTP adds mcpflow's URL to Claude Code as `claude mcp add
// --transport http` does, and checks that a session sees it connected
// with the example's tools.
func (c *checker) claudeHTTP(p *project) error {
	f, err := c.startFront(p)
	if err != nil {
		return err
	}
	defer f.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if out, err := c.command(ctx, p, "claude", "mcp", "add", "--transport", "http", "--scope", "project", p.name, f.url).CombinedOutput(); err != nil {
		return fmt.Errorf("claude mcp add --transport http: %v: %s", err, out)
	}
	if err := enableClaudeServer(p); err != nil {
		return err
	}
	if err := c.claudeSession(p); err != nil {
		return err
	}
	return f.stop()
}

// inspectorHTTP lists the tools with the MCP Inspector's CLI over HTTP.
func (c *checker) inspectorHTTP(p *project) error {
	f, err := c.startFront(p)
	if err != nil {
		return err
	}
	defer f.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := c.command(ctx, p, "mcp-inspector", "--cli", f.url, "--transport", "http", "--method", "tools/list").Output()
	if err != nil {
		return fmt.Errorf("mcp-inspector --cli: %v: %s", err, tail(string(out), 10))
	}
	var res struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return fmt.Errorf("mcp-inspector printed no tool list: %v: %s", err, tail(string(out), 10))
	}
	var names []string
	for _, t := range res.Tools {
		names = append(names, t.Name)
	}
	for _, w := range p.want {
		if !slices.Contains(names, w) {
			return fmt.Errorf("tool %s missing; the Inspector lists %v", w, names)
		}
	}
	fmt.Printf("✓ inspector  the Inspector CLI listed over HTTP: %v\n", names)
	return f.stop()
}
