package control

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
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

// Filter selects instances; the zero Filter selects all of this user's.
type Filter struct {
	Dir     string // runtime folder; "" = each of runtimeDirs()
	Config  string // only instances of this config file
	Project string // only instances whose project folder is this folder or holds it
}

// Match reports whether inst passes the filter.
func (f Filter) Match(inst Instance) bool {
	if f.Config != "" && !samePath(f.Config, inst.Config) {
		return false
	}
	if f.Project == "" {
		return true
	}
	p, ip := resolve(f.Project), resolve(inst.Project)
	return inst.Project != "" && (p == ip || strings.HasPrefix(p, ip+string(filepath.Separator)))
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

const helloTimeout = 2 * time.Second // for Instances to wait for one instance

// Instances lists the live instances of this user that pass the filter,
// by pid; a missing runtime folder means none, a wrong one is an error.
func Instances(f Filter) ([]Instance, error) {
	dirs := runtimeDirs()
	if f.Dir != "" {
		dirs = []string{f.Dir}
	}
	var paths []string
	for _, dir := range dirs {
		if err := prepareDir(dir, false); errors.Is(err, fs.ErrNotExist) || err != nil && dir != dirs[0] {
			continue // none of ours can listen in a folder that is not ours
		} else if err != nil {
			return nil, err
		}
		socks, err := sockets(dir)
		if err != nil {
			return nil, fmt.Errorf("control folder: %w", err)
		}
		paths = slices.AppendSeq(paths, maps.Keys(socks))
	}
	found := make([]Instance, len(paths)) // Pid 0: none
	var wg sync.WaitGroup
	for i, path := range paths {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), helloTimeout)
			defer cancel()
			c := Dial(Instance{Socket: path})
			defer c.Close()
			if inst, err := c.Hello(ctx); err == nil && f.Match(inst) {
				found[i] = inst
			}
		})
	}
	wg.Wait()
	out := slices.DeleteFunc(found, func(in Instance) bool { return in.Pid == 0 })
	slices.SortFunc(out, func(a, b Instance) int {
		return cmp.Or(cmp.Compare(a.Pid, b.Pid), strings.Compare(a.Socket, b.Socket))
	})
	return out, nil
}

// ErrBusy is in the error of a request the instance could not take now.
var ErrBusy = errors.New("busy")

// Client talks to one instance over HTTP on its socket, safe for concurrent use.
type Client struct {
	hc    *http.Client
	inst  Instance
	token string
}

// Dial makes a client of an instance found by Instances; its first request connects.
func Dial(inst Instance) *Client {
	var d net.Dialer
	addr, token, err := readEndpoint(inst.Socket)
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			if err != nil {
				return nil, err
			}
			return d.DialContext(ctx, endpointNet, addr)
		},
		DisableCompression: true,
	}
	return &Client{hc: &http.Client{Transport: tr}, inst: inst, token: token}
}

// Close closes the client's idle connections.
func (c *Client) Close() error {
	c.hc.CloseIdleConnections()
	return nil
}

// Hello asks the instance who it is; a busy one says so in its refusal.
func (c *Client) Hello(ctx context.Context) (Instance, error) {
	inst, err := callJSON[Instance](ctx, c, http.MethodGet, "/instance", nil, nil)
	if be, ok := errors.AsType[*busyError](err); ok && be.inst != nil {
		inst, err = *be.inst, nil
	}
	return inst, err
}

// Status asks for the instance's status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	return callJSON[Status](ctx, c, http.MethodGet, "/status", nil, nil)
}

// Rebuild runs a cycle of the server called name ("" = the only one); an
// error means no cycle ran.
func (c *Client) Rebuild(ctx context.Context, name string) (result.Build, error) {
	j, err := callJSON[BuildJSON](ctx, c, http.MethodPost, "/rebuild", url.Values{"name": {name}}, nil)
	if err != nil {
		return result.Build{}, err
	}
	return j.Result(), nil
}

// Tools is the tools/list result of a session of the instance's own.
func (c *Client) Tools(ctx context.Context) (json.RawMessage, error) {
	return callJSON[json.RawMessage](ctx, c, http.MethodGet, "/tools", nil, nil)
}

// Call is the tools/call result of tool name with args (nil for none) in
// a session of the instance's own; a failed tool is a result, not an error.
func (c *Client) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	return callJSON[json.RawMessage](ctx, c, http.MethodPost, "/call", url.Values{"name": {name}}, args)
}

// Logs writes the last tail (0 = all) kept log lines to w, then with follow
// the new ones until ctx ends or the instance stops (both nil).
func (c *Client) Logs(ctx context.Context, w io.Writer, follow bool, tail int) error {
	q := url.Values{"tail": {strconv.Itoa(tail)}, "follow": {strconv.FormatBool(follow)}}
	err := c.call(ctx, http.MethodGet, "/logs", q, nil, w)
	if follow && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	return err
}

// callJSON is call with a JSON answer, decoded into a T.
func callJSON[T any](ctx context.Context, c *Client, method, path string, q url.Values, body []byte) (T, error) {
	var v T
	err := c.call(ctx, method, path, q, body, &v)
	return v, err
}

// call sends a request and decodes the answer into out, or copies it when
// out is an io.Writer; any answer but 200 is an error.
func (c *Client) call(ctx context.Context, method, path string, q url.Values, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, "http://mcpflow"+path+"?"+q.Encode(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	if c.token != "" {
		req.Header.Set(tokenHeader, c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.fail(ctx, errors.Unwrap(err)) // a *url.Error: what went wrong is inside
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, MaxRequest))
		var e errorBody
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(resp.Status + ": " + string(b))
		}
		if resp.StatusCode == http.StatusConflict || resp.StatusCode == http.StatusServiceUnavailable {
			return &busyError{who: c.who(), msg: e.Error, inst: e.Instance}
		}
		return fmt.Errorf("mcpflow %s: %s", c.who(), e.Error)
	}
	if w, ok := out.(io.Writer); ok {
		_, err = io.Copy(w, resp.Body)
	} else {
		err = json.NewDecoder(resp.Body).Decode(out)
	}
	if err != nil {
		return c.fail(ctx, err)
	}
	return nil
}

// busyError is an instance's answer that it cannot take a request now.
type busyError struct {
	who, msg string
	inst     *Instance // who is busy, when it said
}

func (e *busyError) Error() string        { return fmt.Sprintf("mcpflow %s is busy: %s", e.who, e.msg) }
func (e *busyError) Is(target error) bool { return target == ErrBusy }

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

// Pick chooses the instance with this pid when pid > 0, else the only one.
func Pick(insts []Instance, pid int) (Instance, error) {
	if pid > 0 {
		if i := slices.IndexFunc(insts, func(in Instance) bool { return in.Pid == pid }); i >= 0 {
			return insts[i], nil
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
		pids = append(pids, fmt.Sprintf("%d (%s)", in.Pid, cmp.Or(in.Config, "-")))
	}
	return Instance{}, fmt.Errorf("%d mcpflow instances are running: pick one with --pid: %s", len(insts), strings.Join(pids, ", "))
}

// Statuses asks each instance for its status, leaving out those that stopped.
func Statuses(ctx context.Context, insts []Instance) []Status {
	out := make([]Status, 0, len(insts))
	for _, in := range insts {
		c := Dial(in)
		st, err := c.Status(ctx)
		c.Close()
		if err == nil {
			out = append(out, st)
		}
	}
	return out
}
