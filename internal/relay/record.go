package relay

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/internal/ops/statedir"
	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// First says how the relay serves clients before the first server is up.
type First struct {
	// Grace is how long messages the record does not answer wait for the
	// first server; 0 = as long as the client waits (ClientWait).
	Grace time.Duration
	// Record is the file of what the server said at its last good start
	// ("" = none; through statedir), from which the relay answers the
	// handshake and the lists at once, if its Key is Key and it is valid.
	Record string
	Key    string // what the record must have been written for: the run command and config
	// Sources is the fingerprint of what the build reads now (nil: none).
	// A record written for other sources (an edit made while nothing ran)
	// answers only once the first build outlasts the client's wait.
	Sources func() string
	// OneShot is how long the requests of mcpflow tools and call
	// (wire.OneShotClient) wait for the first server: build.timeout and a
	// handshake; 0 = no bound of the relay's own.
	OneShot time.Duration
}

// ClientWait is how long a client waits for a server, less a margin, by
// its clientInfo.name: Claude Code 30 s, Codex 10 s, others about 5 s.
func ClientWait(name string) time.Duration {
	name = strings.ToLower(name)
	switch {
	case strings.Contains(name, "claude"):
		return 25 * time.Second
	case strings.Contains(name, "codex"):
		return 8 * time.Second
	default:
		return 4 * time.Second
	}
}

// record is what the server said at its last good start.
type record struct {
	Key        string                     `json:"key"`
	Sources    string                     `json:"sources,omitempty"` // First.Sources when it was written
	Initialize json.RawMessage            `json:"initialize,omitempty"`
	Discover   json.RawMessage            `json:"discover,omitempty"`
	Lists      map[string]json.RawMessage `json:"lists,omitempty"` // list field -> JSON array
	stale      bool                       // written for other sources
}

// The list methods a record answers, and the field of their results.
var recordLists = map[string]string{
	"tools/list":               "tools",
	"prompts/list":             "prompts",
	"resources/list":           "resources",
	"resources/templates/list": "resourceTemplates",
}

// loadRecord reads the record at path, if valid and written for key;
// stale when written for other sources.
func loadRecord(path, key, sources string, log *slog.Logger) *record {
	b, err := statedir.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		log.Warn("the record of the server's last start is not used", "file", path, "err", err)
		return nil
	}
	var rec record
	if err = json.Unmarshal(b, &rec); err == nil && rec.Key == "" {
		err = errors.New("it is no record")
	}
	if err == nil && rec.Key != key {
		log.Debug("the record of the server's last start is of another config", "file", path)
		return nil
	}
	if err == nil {
		err = rec.valid()
	}
	if err != nil {
		log.Warn("the record of the server's last start is not used (it is rewritten at the next good start)", "file", path, "err", err)
		return nil
	}
	if rec.stale = rec.Sources != sources; rec.stale {
		log.Debug("the sources changed since the record of the server's last start: the first lists wait for the build", "file", path)
	}
	return &rec
}

type discoverResult struct {
	SupportedVersions []string                   `json:"supportedVersions"`
	Capabilities      json.RawMessage            `json:"capabilities"`
	Instructions      string                     `json:"instructions"`
	Meta              map[string]json.RawMessage `json:"_meta"`
}

// valid checks every part of a record read from a file.
func (rec *record) valid() error {
	if rec.Initialize != nil {
		var res struct {
			ProtocolVersion string                     `json:"protocolVersion"`
			Capabilities    map[string]json.RawMessage `json:"capabilities"`
			ServerInfo      *struct{ Name string }
		}
		if !isObject(rec.Initialize) || json.Unmarshal(rec.Initialize, &res) != nil || res.ProtocolVersion == "" || res.Capabilities == nil || res.ServerInfo == nil {
			return errors.New("initialize: not an initialize result")
		}
	}
	if rec.Discover != nil {
		var d discoverResult
		if !isObject(rec.Discover) || json.Unmarshal(rec.Discover, &d) != nil || !isObject(d.Capabilities) {
			return errors.New("discover: not a server/discover result")
		}
		if info := d.Meta[mcp.MetaKeyServerInfo]; info != nil && !isObject(info) {
			return errors.New("discover: serverInfo is not an object")
		}
	}
	for field, items := range rec.Lists {
		if !slices.Contains(slices.Collect(maps.Values(recordLists)), field) {
			return fmt.Errorf("lists: %q is no list", field)
		}
		var list []json.RawMessage
		if t := bytes.TrimSpace(items); len(t) == 0 || t[0] != '[' || json.Unmarshal(items, &list) != nil {
			return fmt.Errorf("lists.%s: not an array", field)
		}
		if slices.ContainsFunc(list, func(it json.RawMessage) bool { return !isObject(it) }) {
			return fmt.Errorf("lists.%s: an item is not an object", field)
		}
	}
	return nil
}

// isObject reports whether b is a JSON object (b is valid JSON).
func isObject(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{'
}

// modernOnly: result fields of 2026-07-28 alone, never for a legacy client.
var modernOnly = []string{"resultType", "ttlMs", "cacheScope"}

// answer is the record's result for a request, if it has one: the
// handshake (initialize in the client's protocol version) and the lists
// (all on the first page, with ownTools added).
func (rec *record) answer(env wire.Envelope, ownTools []byte) ([]byte, bool) {
	if rec == nil {
		return nil, false
	}
	switch env.Method {
	case "initialize":
		asked := protocolVersion(env.Params)
		res := rec.initializeResult(asked)
		if res == nil {
			return nil, false
		}
		if slices.Contains(mcp.SupportedProtocolVersions(), asked) && !wire.IsModern(asked) {
			res["protocolVersion"] = mustJSON(asked)
		}
		for _, k := range modernOnly {
			delete(res, k)
		}
		return mustJSON(res), true
	case "server/discover":
		return rec.Discover, rec.Discover != nil
	}
	field, ok := recordLists[env.Method]
	if !ok || rec.Lists[field] == nil || env.Params != nil && bytes.Contains(env.Params, []byte(`"cursor"`)) {
		return nil, false
	}
	items := rec.Lists[field]
	if field == "tools" && len(ownTools) > 0 {
		items = appendItems(items, ownTools)
	}
	return []byte(`{"` + field + `":` + string(items) + `}`), true
}

// protocolVersion is the version an initialize request asks for.
func protocolVersion(params []byte) string {
	var p struct{ ProtocolVersion string }
	_ = json.Unmarshal(params, &p)
	return p.ProtocolVersion
}

// initializeResult is the recorded initialize answer, or one from discover.
func (rec *record) initializeResult(asked string) map[string]json.RawMessage {
	var res map[string]json.RawMessage
	if rec.Initialize != nil {
		if json.Unmarshal(rec.Initialize, &res) != nil {
			return nil
		}
		return res
	}
	var d discoverResult
	if rec.Discover == nil || json.Unmarshal(rec.Discover, &d) != nil || d.Capabilities == nil {
		return nil
	}
	info := d.Meta[mcp.MetaKeyServerInfo]
	legacy := slices.DeleteFunc(d.SupportedVersions, wire.IsModern)
	if info == nil || len(legacy) == 0 {
		return nil // a server of 2026-07-28 only: the era bridge serves a legacy client
	}
	version := slices.Max(legacy)
	if slices.Contains(legacy, asked) {
		version = asked
	}
	res = map[string]json.RawMessage{"protocolVersion": mustJSON(version), "capabilities": d.Capabilities, "serverInfo": info}
	if d.Instructions != "" {
		res["instructions"] = mustJSON(d.Instructions)
	}
	return res
}

// firstAnswer answers a request before the first server is up from the
// record, if it can. Otherwise the first request that is not a call arms
// First.Grace, past which mcpflow answers alone. s.mu is held.
func (s *Session) firstAnswer(msg []byte, env wire.Envelope) bool {
	r := s.r
	rec := r.rec.current()
	if rec != nil && rec.stale && !s.late {
		rec = nil // the build may finish within the client's wait
	}
	if rec != nil && (env.Method == "subscriptions/listen" || env.Method == "ping") {
		s.answerDown(msg, env) // taken, as while no server runs
		return true
	}
	res, ok := rec.answer(env, r.ownTools)
	if !ok {
		if !s.graceArmed && env.Method != "tools/call" {
			s.graceArmed = true
			grace := cmp.Or(r.cfg.First.Grace, ClientWait(env.ClientName()))
			if s.oneShot = env.ClientName() == wire.OneShotClient; s.oneShot {
				grace = r.cfg.First.OneShot
			}
			if grace > 0 {
				time.AfterFunc(grace, func() { r.firstServerLate(s, grace) })
			}
		}
		return false
	}
	switch env.Method {
	case "initialize":
		s.hs.selfInit, s.hs.initResult, s.hs.initDecided = true, res, true
		if s.hs.initID != nil && bytes.Equal(s.hs.initID, env.ID) {
			s.hs.initID = nil
		}
	case "server/discover":
		s.hs.selfDiscover = true
		s.reply(env.ID, wire.ResultResponse(env.ID, res))
		return true
	case "tools/list":
		s.view.noteTools(true, []byte(`{"tools":`+string(rec.Lists["tools"])+`}`))
	default:
		if items := rec.Lists[recordLists[env.Method]]; items != nil {
			var list []json.RawMessage
			_ = json.Unmarshal(items, &list)
			s.view.served[strings.TrimSuffix(env.Method, "/list")] = viewOf(list)
			s.view.hear(env.Method)
		}
	}
	r.log.Debug("answered from the record of the server's last start", "method", env.Method, "stale", rec.stale)
	s.reply(env.ID, wire.ResultResponse(env.ID, wire.Complete(res, s.modern())))
	return true
}

// answerLate answers what the session holds from a record of other
// sources, once the first build outlasted the client's wait (never
// mcpflow tools' and call's: they say the build still runs); it reports
// whether no request but a call is left waiting (list_changed follows
// the first start).
func (s *Session) answerLate() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rec := s.r.rec.current(); rec == nil || !rec.stale || s.phase != phaseHold || s.oneShot {
		return false
	}
	s.late = true
	for _, m := range s.held.take() {
		switch {
		case m.env.IsNotification():
			s.clientNotification(m.msg, m.env)
		case !m.env.IsRequest() || !s.firstAnswer(m.msg, m.env):
			s.held.put(m)
		}
	}
	return !slices.ContainsFunc(s.held.q, func(m queued) bool { return m.env.IsRequest() && m.env.Method != "tools/call" })
}

// recorded is an answer of the server's, for the record.
type recorded struct {
	method    string
	firstPage bool
	result    []byte
}

// records keeps the record (First.Record) and writes it, under no relay lock.
type records struct {
	path, key string
	sources   string // what the sources were at the last restart
	log       *slog.Logger
	write     sync.Mutex // one write of the file at a time
	mu        sync.Mutex // guards rec, which is never changed once set
	rec       *record    // nil when none
}

// stamp notes the sources a restart starts from (First.Sources), for
// the answers kept from then on. (A scan that ends after the new
// server's answers were kept leaves the record of the older sources:
// the next start waits for its build, which the cache then skips.)
func (rs *records) stamp(sources func() string) {
	if sources == nil || rs.path == "" {
		return
	}
	k := sources()
	rs.write.Lock()
	defer rs.write.Unlock()
	rs.sources = k
}

func (rs *records) current() *record {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.rec
}

// keep records the answers that hold the handshake or a whole list.
func (rs *records) keep(answers []recorded) {
	if rs.path == "" || len(answers) == 0 {
		return
	}
	rs.write.Lock()
	defer rs.write.Unlock()
	rec := &record{Key: rs.key}
	if old := rs.current(); old != nil {
		*rec = *old
	}
	changed := rec.Sources != rs.sources || rec.stale
	rec.Sources, rec.stale = rs.sources, false
	rec.Lists = maps.Clone(rec.Lists)
	if rec.Lists == nil {
		rec.Lists = map[string]json.RawMessage{}
	}
	for _, a := range answers {
		changed = rec.note(a) || changed
	}
	if !changed {
		return
	}
	rs.mu.Lock()
	rs.rec = rec
	rs.mu.Unlock()
	b, err := json.Marshal(rec)
	if err == nil {
		err = statedir.WriteFile(rs.path, b) // whole or not at all
	}
	if err != nil {
		rs.log.Warn("could not write the record of the server's answers", "file", rs.path, "err", err)
	}
}

// note puts one answer in the record; it reports whether it changed it.
func (rec *record) note(a recorded) bool {
	if a.result == nil {
		return false
	}
	var was, now []byte
	switch a.method {
	case "initialize":
		was, rec.Initialize, now = rec.Initialize, a.result, a.result
	case "server/discover":
		was, rec.Discover, now = rec.Discover, a.result, a.result
	default:
		field, ok := recordLists[a.method]
		if !ok || !a.firstPage || jsonscan.Member(a.result, "nextCursor") != nil {
			return false
		}
		items := jsonscan.Member(a.result, field)
		if items == nil || items[0] != '[' {
			return false
		}
		now = bytes.Clone(items)
		was, rec.Lists[field] = rec.Lists[field], now
	}
	return was == nil || !bytes.Equal(was, now)
}
