package cache

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func write(t *testing.T, dir, name, text string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestKeyFollowsSourcesAndCommand(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.go", "package a")
	write(t, dir, "sub/b.go", "package b")
	files := []string{"sub/b.go", "a.go"}
	cmd := []string{"go build -o bin/x ."}
	k := Key(cmd, dir, files)
	if k2 := Key(cmd, dir, []string{"a.go", "sub/b.go", "a.go"}); k2 != k {
		t.Error("Key depends on the order of files or on duplicates")
	}
	if Key([]string{"go build ."}, dir, files) == k {
		t.Error("Key ignores the build command")
	}
	// A save with the same size: only the modification time changes.
	later := time.Now().Add(2 * time.Second)
	if err := os.Chtimes(filepath.Join(dir, "a.go"), later, later); err != nil {
		t.Fatal(err)
	}
	k3 := Key(cmd, dir, files)
	if k3 == k {
		t.Error("Key ignores a file's modification time")
	}
	write(t, dir, "sub/b.go", "package bb")
	if Key(cmd, dir, files) == k3 {
		t.Error("Key ignores a file's content change")
	}
	if err := os.Remove(filepath.Join(dir, "a.go")); err != nil {
		t.Fatal(err)
	}
	if Key(cmd, dir, files) == k3 {
		t.Error("Key ignores a deleted file")
	}
}

func TestStateRoundTripAndFresh(t *testing.T) {
	dir := t.TempDir()
	cache := Dir(dir)
	file := StateFile(cache, dir, "go build -o bin/x .")
	if file == StateFile(cache, dir, "go build -o bin/y .") {
		t.Error("two build configurations share a state file")
	}
	s, err := Load(file)
	if err != nil || s.Key != "" {
		t.Fatalf("missing state: %+v, %v", s, err)
	}
	out := filepath.Join(dir, "bin", "x")
	write(t, dir, "bin/x", "binary")
	s = State{Key: "k1", Time: time.Now(), Outputs: []string{"gen/a.js"}}
	s.SetOutput(out)
	if err := Save(file, s); err != nil {
		t.Fatal(err)
	}
	got, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(cache, ".gitignore")); err != nil || !strings.Contains(string(b), "\n*\n") {
		t.Errorf("the cache folder is not kept out of git: %q, %v", b, err)
	}
	if !got.Fresh("k1") {
		t.Errorf("a just-saved state is not fresh: %+v", got)
	}
	if got.Fresh("k2") {
		t.Error("fresh for another key")
	}
	if len(got.Outputs) != 1 || got.Outputs[0] != "gen/a.js" {
		t.Errorf("Outputs = %q", got.Outputs)
	}
	write(t, dir, "bin/x", "another binary")
	if got.Fresh("k1") {
		t.Error("fresh after the output was rewritten")
	}
	os.Remove(out)
	if got.Fresh("k1") {
		t.Error("fresh with the output gone")
	}
	var none State
	none.SetOutput(out)
	if none.Output != "" || none.Fresh("") {
		t.Errorf("a missing output is recorded: %+v", none)
	}
	if err := os.WriteFile(file, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := Load(file); err == nil || s.Key != "" {
		t.Errorf("a corrupt state loads: %+v, %v", s, err)
	}
}

func TestLockExcludes(t *testing.T) {
	cache := LockFile(StateFile(Dir(t.TempDir()), "go", "build"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l1, err := Acquire(ctx, cache, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l1.Awaited() {
		t.Error("Awaited with nobody waiting")
	}
	waiting := make(chan int)
	got := make(chan *Lock, 1)
	go func() {
		l2, err := Acquire(ctx, cache, func(holder int) { waiting <- holder })
		if err != nil {
			t.Error(err)
		}
		got <- l2
	}()
	select {
	case holder := <-waiting:
		if holder != os.Getpid() {
			t.Errorf("waiting for pid %d, want %d (the holder)", holder, os.Getpid())
		}
	case <-ctx.Done():
		t.Fatal("the second Acquire never waited")
	}
	if !l1.Awaited() {
		t.Error("not Awaited while another Acquire waits")
	}
	select {
	case <-got:
		t.Fatal("the second Acquire got the lock while the first held it")
	default:
	}
	l1.Release()
	l1.Release()
	select {
	case l2 := <-got:
		if l2.Awaited() {
			t.Error("Awaited once the waiter got the lock")
		}
		l2.Release()
	case <-ctx.Done():
		t.Fatal("the second Acquire did not get the lock after its release")
	}
}

func TestLockWaitEndsWithCtx(t *testing.T) {
	cache := LockFile(StateFile(Dir(t.TempDir()), "go", "build"))
	l1, err := Acquire(context.Background(), cache, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l1.Release()
	ctx, cancel := context.WithCancel(context.Background())
	_, err = Acquire(ctx, cache, func(int) { cancel() })
	if err != context.Canceled {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
