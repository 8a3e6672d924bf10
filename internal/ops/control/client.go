package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/internal/report/result"
)

// Instance is one running mcpflow, as Instances finds it.
type Instance struct {
	Pid     int       `json:"pid"`
	Config  string    `json:"config,omitempty"`
	Project string    `json:"project,omitempty"`
	Mode    string    `json:"mode,omitempty"`
	Version string    `json:"version,omitempty"`
	Started time.Time `json:"started"`
	Socket  string    `json:"socket"`
}

// Filter selects instances. The zero Filter selects every instance of
// this user.
type Filter struct {
	Dir     string // runtime folder; "" = runtimeDir()
	Config  string // only instances of this config file
	Project string // only instances whose project folder is this folder or holds it
}

// Match reports whether inst passes the filter.
func (f Filter) Match(inst Instance) bool {
	if f.Config != "" && !samePath(f.Config, inst.Config) {
		return false
	}
	if f.Project != "" {
		if inst.Project == "" {
			return false
		}
		p, ip := resolve(f.Project), resolve(inst.Project)
		if p != ip && !strings.HasPrefix(p, ip+string(filepath.Separator)) {
			return false
		}
	}
	return true
}

func samePath(a, b string) bool {
	return a != "" && b != "" && (filepath.Clean(a) == filepath.Clean(b) || resolve(a) == resolve(b))
}

func resolve(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// helloTimeout bounds how long Instances waits for one instance.
const helloTimeout = 2 * time.Second

// Instances lists the live instances of this user that pass the filter,
// by pid. A socket nothing answers on (a killed instance) is skipped. A
// missing runtime folder means no instance; one with wrong owner or
// permissions is an error.
func Instances(f Filter) ([]Instance, error) {
	if err := unsupported(); err != nil {
		return nil, err
	}
	dir := f.Dir
	if dir == "" {
		d, err := runtimeDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	if err := prepareDir(dir, false); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("control folder: %w", err)
	}
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		out []Instance
	)
	for _, e := range ents {
		if _, ok := socketPid(e.Name()); !ok || e.Type()&fs.ModeSocket == 0 {
			continue
		}
		path := filepath.Join(dir, e.Name())
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), helloTimeout)
			defer cancel()
			c, err := dialSocket(ctx, path)
			if err != nil {
				return
			}
			defer c.Close()
			inst, err := c.Hello(ctx)
			if err != nil || !f.Match(inst) {
				return
			}
			mu.Lock()
			out = append(out, inst)
			mu.Unlock()
		}()
	}
	wg.Wait()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Pid != out[j].Pid {
			return out[i].Pid < out[j].Pid
		}
		return out[i].Socket < out[j].Socket
	})
	return out, nil
}

// Client talks to one instance. Its methods take turns: one request at a
// time.
type Client struct {
	mu   sync.Mutex
	c    net.Conn
	dec  *json.Decoder
	inst Instance
}

// Dial connects to an instance found by Instances.
func Dial(ctx context.Context, inst Instance) (*Client, error) {
	c, err := dialSocket(ctx, inst.Socket)
	if err != nil {
		return nil, err
	}
	c.inst = inst
	return c, nil
}

// dialSocket connects to the control socket at path.
func dialSocket(ctx context.Context, path string) (*Client, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("connect to mcpflow at %s: %w", path, err)
	}
	return &Client{c: c, dec: json.NewDecoder(c), inst: Instance{Socket: path}}, nil
}

// Close ends the connection.
func (c *Client) Close() error { return c.c.Close() }

// Hello asks the instance who it is.
func (c *Client) Hello(ctx context.Context) (Instance, error) {
	var inst Instance
	err := c.call(ctx, request{Method: "hello"}, func(r response) (bool, error) {
		if r.Hello == nil {
			return true, errors.New("hello: empty answer")
		}
		inst = *r.Hello
		return true, nil
	})
	if inst.Socket == "" {
		inst.Socket = c.inst.Socket
	}
	return inst, err
}

// Status asks for the instance's status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var st Status
	err := c.call(ctx, request{Method: "status"}, func(r response) (bool, error) {
		if r.Status == nil {
			return true, errors.New("status: empty answer")
		}
		st = *r.Status
		return true, nil
	})
	return st, err
}

// Rebuild runs a build-and-restart cycle of the server called name ("" =
// the only one) and returns its outcome; an error means no cycle ran.
func (c *Client) Rebuild(ctx context.Context, name string) (result.Build, error) {
	var b result.Build
	err := c.call(ctx, request{Method: "rebuild", Name: name}, func(r response) (bool, error) {
		if r.Build == nil {
			return true, errors.New("rebuild: empty answer")
		}
		b = r.Build.Result()
		return true, nil
	})
	return b, err
}

// Logs writes the instance's kept log lines to w, the last tail of them
// (0 = all). With follow it goes on writing new lines until ctx ends
// (then it returns nil) or the instance stops (nil too). Lines a slow
// reader lost are noted in w as "[mcpflow: N lines dropped]".
func (c *Client) Logs(ctx context.Context, w io.Writer, follow bool, tail int) error {
	err := c.call(ctx, request{Method: "logs", Follow: follow, Tail: tail}, func(r response) (bool, error) {
		switch {
		case r.Line != nil:
			if _, err := io.WriteString(w, *r.Line+"\n"); err != nil {
				return true, err
			}
		case r.Dropped > 0:
			fmt.Fprintf(w, "[mcpflow: %d lines dropped]\n", r.Dropped)
		case r.End:
			return true, nil
		}
		return false, nil
	})
	if follow && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	return err
}

// call sends req and hands each response to each until it says done. An
// error response ends the call with that error.
func (c *Client) call(ctx context.Context, req request, each func(response) (done bool, err error)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if dl, ok := ctx.Deadline(); ok {
		c.c.SetDeadline(dl)
	}
	// Once ctx ends, the connection's deadline is in the past for good:
	// the call fails and so does every later one.
	stop := context.AfterFunc(ctx, func() { c.c.SetDeadline(time.Unix(1, 0)) })
	defer func() {
		if stop() {
			c.c.SetDeadline(time.Time{})
		}
	}()
	b, _ := json.Marshal(req)
	if _, err := c.c.Write(append(b, '\n')); err != nil {
		// The instance may have refused the connection and said why
		// before closing it.
		var r response
		if ctx.Err() == nil && c.dec.Decode(&r) == nil && !r.OK && r.Error != "" {
			return fmt.Errorf("mcpflow %s: %s", c.who(), r.Error)
		}
		return c.fail(ctx, err)
	}
	for {
		var r response
		if err := c.dec.Decode(&r); err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("the instance closed the connection")
			}
			return c.fail(ctx, err)
		}
		if !r.OK {
			if r.Error == "" {
				r.Error = "failed without saying why"
			}
			return fmt.Errorf("mcpflow %s: %s", c.who(), r.Error)
		}
		done, err := each(r)
		if done || err != nil {
			return err
		}
	}
}

func (c *Client) fail(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("mcpflow %s: %w", c.who(), err)
}

func (c *Client) who() string {
	if c.inst.Pid != 0 {
		return fmt.Sprintf("pid %d", c.inst.Pid)
	}
	return "at " + c.inst.Socket
}

// Pick chooses the instance a command acts on: the one with this pid when
// pid > 0, else the only one. None, or several without a pid, is an error
// that says what to do.
func Pick(insts []Instance, pid int) (Instance, error) {
	if pid > 0 {
		for _, in := range insts {
			if in.Pid == pid {
				return in, nil
			}
		}
		return Instance{}, fmt.Errorf("no mcpflow instance with pid %d here (mcpflow status lists them)", pid)
	}
	switch len(insts) {
	case 0:
		return Instance{}, errors.New("no mcpflow instance running here: mcpflow status lists them all, -c FILE picks a project")
	case 1:
		return insts[0], nil
	}
	var pids []string
	for _, in := range insts {
		pids = append(pids, fmt.Sprintf("%d (%s)", in.Pid, orDash(in.Config)))
	}
	return Instance{}, fmt.Errorf("%d mcpflow instances are running: pick one with --pid: %s", len(insts), strings.Join(pids, ", "))
}

// Statuses asks each instance for its status, in order; an instance that
// stopped meanwhile is left out.
func Statuses(ctx context.Context, insts []Instance) []Status {
	out := make([]Status, 0, len(insts))
	for _, in := range insts {
		c, err := Dial(ctx, in)
		if err != nil {
			continue
		}
		st, err := c.Status(ctx)
		c.Close()
		if err == nil {
			out = append(out, st)
		}
	}
	return out
}
