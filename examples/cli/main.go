// Command cli is a small command-line program in the "CLI tools" shape
// that mcpflow serves as MCP tools: `cli schema --json` prints its tool
// list (schema.json, embedded), and each tool is a subcommand printing
// JSON. Edit schema.json or a subcommand and rebuild: mcpflow serves the
// change with no restart.
//
// When EXAMPLE_CLI_STATE names a directory, each call records itself there
// (running/<pid> while it runs, one line in calls.log with the number of
// calls running when it started) so a test can see how many ran at once.
package main

import (
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

//go:embed schema.json
var schema []byte

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: cli schema --json | greet | add | args | slow | count | fail | big")
		os.Exit(2)
	}
	defer record()()
	cmd, args := os.Args[1], os.Args[2:]
	switch cmd {
	case "schema":
		os.Stdout.Write(schema)
	case "greet":
		greet(args)
	case "add":
		add(args)
	case "args":
		emit(map[string]any{"argv": args})
	case "slow":
		slow(args)
	case "hold":
		time.Sleep(time.Minute)
	case "count":
		var in struct{ Text string }
		if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
			die(2, "count: reading stdin: %v", err)
		}
		emit(map[string]any{"words": len(strings.Fields(in.Text))})
	case "fail":
		n, _ := strconv.Atoi(first(args))
		fmt.Println("partial output")
		fmt.Fprintln(os.Stderr, "something went wrong")
		os.Exit(n)
	case "big":
		n, _ := strconv.Atoi(first(args))
		os.Stdout.WriteString(strings.Repeat("x", n))
	default:
		die(2, "unknown command %q", cmd)
	}
}

func greet(args []string) {
	fs := flag.NewFlagSet("greet", flag.ExitOnError)
	name := fs.String("name", "", "who")
	times := fs.Int("times", 1, "how many times")
	loud := fs.Bool("loud", false, "shout")
	var tags []string
	fs.Func("tag", "a tag (repeatable)", func(s string) error { tags = append(tags, s); return nil })
	fs.Parse(args)
	g := "Hello, " + *name + "!"
	if *loud {
		g = strings.ToUpper(g)
	}
	out := make([]string, *times)
	for i := range out {
		out[i] = g
	}
	emit(map[string]any{"greeting": strings.Join(out, " "), "tags": tags})
}

func add(args []string) {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	sum := 0.0
	for _, a := range args {
		f, err := strconv.ParseFloat(a, 64)
		if err != nil {
			die(2, "add: %q is not a number", a)
		}
		sum += f
	}
	emit(map[string]any{"sum": sum})
}

func slow(args []string) {
	fs := flag.NewFlagSet("slow", flag.ExitOnError)
	secs := fs.Float64("seconds", 1, "how long")
	child := fs.Bool("child", false, "leave a child process running too")
	fs.Parse(args)
	if *child {
		c := exec.Command(os.Args[0], "hold")
		if err := c.Start(); err != nil {
			die(1, "slow: %v", err)
		}
		if dir := os.Getenv("EXAMPLE_CLI_STATE"); dir != "" {
			os.WriteFile(filepath.Join(dir, "child.pid"), []byte(strconv.Itoa(c.Process.Pid)), 0o644)
		}
	}
	end := time.Now().Add(time.Duration(*secs * float64(time.Second)))
	for i := 1; time.Now().Before(end); i++ {
		fmt.Fprintf(os.Stderr, "step %d\n", i)
		time.Sleep(50 * time.Millisecond)
	}
	emit(map[string]any{"slept": *secs})
}

func emit(v any) {
	b, _ := json.Marshal(v)
	os.Stdout.Write(append(b, '\n'))
}

func first(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

func die(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(code)
}

// record notes this call in $EXAMPLE_CLI_STATE and returns its undo.
func record() func() {
	dir := os.Getenv("EXAMPLE_CLI_STATE")
	if dir == "" || os.Args[1] == "schema" || os.Args[1] == "hold" {
		return func() {}
	}
	run := filepath.Join(dir, "running")
	os.MkdirAll(run, 0o755)
	me := filepath.Join(run, strconv.Itoa(os.Getpid()))
	os.WriteFile(me, nil, 0o644)
	if f, err := os.OpenFile(filepath.Join(dir, "pids"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		fmt.Fprintln(f, os.Getpid())
		f.Close()
	}
	entries, _ := os.ReadDir(run)
	if f, err := os.OpenFile(filepath.Join(dir, "calls.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		fmt.Fprintln(f, len(entries))
		f.Close()
	}
	return func() { os.Remove(me) }
}
