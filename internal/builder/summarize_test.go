package builder

import (
	"fmt"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	tests := []struct {
		name   string
		output string
		max    int
		want   string
	}{
		{
			name: "go build",
			output: `go: downloading github.com/modelcontextprotocol/go-sdk v1.8.0
go: downloading github.com/google/jsonschema-go v0.4.3
# github.com/acme/weather
./main.go:12:5: undefined: fetchForecast
./main.go:20:2: declared and not used: unit
./tools.go:7:9: cannot use "sunny" (untyped string constant) as int value in return statement
`,
			want: `# github.com/acme/weather
./main.go:12:5: undefined: fetchForecast
./main.go:20:2: declared and not used: unit
./tools.go:7:9: cannot use "sunny" (untyped string constant) as int value in return statement`,
		},
		{
			name: "go build twice over the same package is deduplicated",
			output: `# github.com/acme/weather
./main.go:12:5: undefined: fetchForecast
# github.com/acme/weather [github.com/acme/weather.test]
./main.go:12:5: undefined: fetchForecast
./main_test.go:9:2: undefined: helper
`,
			want: `# github.com/acme/weather
./main.go:12:5: undefined: fetchForecast
# github.com/acme/weather [github.com/acme/weather.test]
./main_test.go:9:2: undefined: helper`,
		},
		{
			name: "cargo with a warning and an error",
			output: `   Compiling proc-macro2 v1.0.86
   Compiling unicode-ident v1.0.12
   Compiling weather v0.1.0 (/home/me/weather)
warning: unused variable: ` + "`unit`" + `
 --> src/main.rs:2:9
  |
2 |     let unit = "C";
  |         ^^^^ help: if this is intentional, prefix it with an underscore: ` + "`_unit`" + `
  |
  = note: ` + "`#[warn(unused_variables)]`" + ` on by default

error[E0308]: mismatched types
 --> src/main.rs:4:18
  |
4 |     let t: i32 = "hot";
  |            ---   ^^^^^ expected ` + "`i32`" + `, found ` + "`&str`" + `
  |            |
  |            expected due to this

For more information about this error, try ` + "`rustc --explain E0308`" + `.
warning: ` + "`weather`" + ` (bin "weather") generated 1 warning
error: could not compile ` + "`weather`" + ` (bin "weather") due to 1 previous error; 1 warning emitted
`,
			want: `error[E0308]: mismatched types
 --> src/main.rs:4:18
  |
4 |     let t: i32 = "hot";
  |            ---   ^^^^^ expected ` + "`i32`" + `, found ` + "`&str`" + `
  |            |
  |            expected due to this
error: could not compile ` + "`weather`" + ` (bin "weather") due to 1 previous error; 1 warning emitted`,
		},
		{
			name: "tsc through npm",
			output: `
> weather-server@1.0.0 build
> tsc -p .

src/index.ts(14,7): error TS2322: Type 'string' is not assignable to type 'number'.
src/tools.ts(3,10): error TS2305: Module '"./api"' has no exported member 'forecast'.
npm WARN lifecycle weather-server@1.0.0~build: cannot run in wd
npm ERR! code ELIFECYCLE
npm ERR! errno 2
npm ERR! weather-server@1.0.0 build: ` + "`tsc -p .`" + `
npm ERR! A complete log of this run can be found in:
npm ERR!     /root/.npm/_logs/2024-05-01T10_00_00_000Z-debug.log
`,
			want: `src/index.ts(14,7): error TS2322: Type 'string' is not assignable to type 'number'.
src/tools.ts(3,10): error TS2305: Module '"./api"' has no exported member 'forecast'.`,
		},
		{
			name: "tsc pretty",
			output: "src/index.ts:14:7 - error TS2322: Type 'string' is not assignable to type 'number'.\n\n" +
				"14 const n: number = \"x\";\n         ~\n\n\nFound 1 error in src/index.ts:14\n\n",
			want: "src/index.ts:14:7 - error TS2322: Type 'string' is not assignable to type 'number'.",
		},
		{
			name: "python traceback",
			output: `Collecting mcp
  Using cached mcp-1.2.0-py3-none-any.whl
Traceback (most recent call last):
  File "/app/server.py", line 30, in <module>
    main()
  File "/app/server.py", line 24, in main
    register(tools)
  File "/app/tools.py", line 8, in register
    return tools + undefined_name
           ^^^^^^^^^^^^^^^^^^^^^^^
NameError: name 'undefined_name' is not defined
`,
			want: `Traceback (most recent call last):
  File "/app/server.py", line 30, in <module>
    main()
  File "/app/server.py", line 24, in main
    register(tools)
  File "/app/tools.py", line 8, in register
    return tools + undefined_name
           ^^^^^^^^^^^^^^^^^^^^^^^
NameError: name 'undefined_name' is not defined`,
		},
		{
			name: "python syntax error",
			output: `  File "/app/server.py", line 3
    def handler(
               ^
SyntaxError: '(' was never closed
`,
			want: `  File "/app/server.py", line 3
    def handler(
               ^
SyntaxError: '(' was never closed`,
		},
		{
			name: "go panic",
			output: `panic: runtime error: index out of range [5] with length 3

goroutine 1 [running]:
main.main()
	/home/me/weather/main.go:8 +0x1d
exit status 2
`,
			want: `panic: runtime error: index out of range [5] with length 3
goroutine 1 [running]:
main.main()
	/home/me/weather/main.go:8 +0x1d`,
		},
		{
			name: "gcc with a warning",
			output: `main.c: In function 'main':
main.c:3:9: warning: unused variable 'x' [-Wunused-variable]
    3 |     int x;
      |         ^
main.c:4:5: error: 'y' undeclared (first use in this function)
    4 |     y = 2;
      |     ^
make: *** [Makefile:2: all] Error 1
`,
			want: `main.c:4:5: error: 'y' undeclared (first use in this function)
    4 |     y = 2;
      |     ^`,
		},
		{
			name:   "ansi colors are stripped",
			output: "\x1b[1m\x1b[31merror\x1b[0m: cannot find value `x`\n",
			want:   "error: cannot find value `x`",
		},
		{
			name: "no diagnostics: the last lines",
			output: `   Compiling weather v0.1.0
something went sideways


the tool gave up
`,
			want: "something went sideways\n\nthe tool gave up",
		},
		{
			name:   "no diagnostics, bounded",
			output: "first line\nsecond line\nthird line\nfour\nfive\n",
			max:    len("… (3 earlier lines)\nfour\nfive"),
			want:   "… (3 earlier lines)\nfour\nfive",
		},
		{
			name:   "diagnostics bounded at a line boundary",
			output: "a.go:1:1: one\na.go:2:1: two\na.go:3:1: three\na.go:4:1: four\n",
			max:    len("a.go:1:1: one\na.go:2:1: two\n… (2 more lines)") + 3,
			want:   "a.go:1:1: one\na.go:2:1: two\n… (2 more lines)",
		},
		{
			name:   "noise only",
			output: "   Compiling a v0.1.0\n   Compiling b v0.1.0\n",
			want:   "   Compiling a v0.1.0\n   Compiling b v0.1.0",
		},
		{
			name:   "empty",
			output: "",
			want:   "",
		},
		{
			name:   "urls and addresses are not locations",
			output: "listening on http://localhost:8080\nconnecting to 127.0.0.1:5432\n",
			want:   "listening on http://localhost:8080\nconnecting to 127.0.0.1:5432",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			max := tt.max
			if max == 0 {
				max = 4096
			}
			got := summarize(tt.output, max)
			if got != tt.want {
				t.Errorf("summarize() =\n%s\n--- want ---\n%s", got, tt.want)
			}
			if len(got) > max {
				t.Errorf("len = %d > max %d", len(got), max)
			}
		})
	}
}

func TestSummarizeNeverExceedsMax(t *testing.T) {
	var b strings.Builder
	for i := range 200 {
		fmt.Fprintf(&b, "./pkg/file%d.go:%d:3: undefined: thing%d — ünïcödé\n", i, i, i)
	}
	long := strings.Repeat("é", 500)
	for _, out := range []string{b.String(), "./a.go:1:1: " + long, "plain " + long, "x"} {
		for _, max := range []int{1, 2, 5, 10, 19, 20, 25, 64, 100, 1000} {
			got := summarize(out, max)
			if len(got) > max {
				t.Errorf("max %d: len %d: %q", max, len(got), got)
			}
			if !utf8Valid(got) {
				t.Errorf("max %d: invalid UTF-8: %q", max, got)
			}
		}
	}
	got := summarize(b.String(), 1000)
	if !strings.HasPrefix(got, "./pkg/file0.go:0:3:") || !strings.Contains(got, " more lines)") {
		t.Errorf("want the first diagnostics and a note, got:\n%s", got)
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }
