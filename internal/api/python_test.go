package api_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/executor/wire"
	"github.com/runblock/runblock/internal/api"
)

// python opens a Service in front of a real sandbox.
func python(t *testing.T) *service {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	ex, err := sandbox.New(ctx, sandbox.Config{Timeout: 2 * time.Second, MaxCodeBytes: 1 << 20, AllowUnisolated: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("executor: %v", err)
	}
	t.Cleanup(func() { ex.Close() })
	return open(t, ex, executor.Config{Concurrency: 2}, api.Config{Limits: wire.Limits{Timeout: 2 * time.Second, MaxCodeBytes: 256 << 10}})
}

// TestSnekboxBodies posts the request bodies of snekbox's documentation and
// of python-discord's bot, and checks the fields those clients read.
func TestSnekboxBodies(t *testing.T) {
	s := python(t)
	timeit := `["-m", "timeit", "-n", "10", "-r", "1", "-s", "import math", "math.sqrt(2)"]`
	for _, tc := range []struct {
		name, body string
		stdout     string // a regexp
		returncode float64
	}{
		{"input", `{"input": "print('Hello')"}`, `^Hello\n$`, 0},
		{"args -c", `{"args": ["-c", "print('Hello')"]}`, `^Hello\n$`, 0},
		{"file", `{"args": ["main.py"], "files": [{"path": "main.py", "content": "` + b64("import sys\nprint('Hello', sys.argv)") + `"}]}`, `^Hello \['main.py'\]\n$`, 0},
		{"bot eval", `{"args": ["-c", "import helper; print(helper.X)"], "files": [{"path": "helper.py", "content": "` + b64("X = 42") + `"}], "executable_path": "/snekbin/python/3.12/bin/python"}`, `^42\n$`, 0},
		{"bot timeit", `{"args": ` + timeit + `, "executable_path": "/snekbin/python/3.13/bin/python"}`, `^10 loops, best of 1: .* per loop\n$`, 0},
		{"nested file", `{"args": ["-c", "print(open('data/in.txt').read())"], "files": [{"path": "data/in.txt", "content": "` + b64("payload") + `"}]}`, `^payload\n$`, 0},
		{"argv", `{"args": ["-c", "import sys; print(sys.argv)", "a", "b"]}`, `^\['-c', 'a', 'b'\]\n$`, 0},
		{"error merged", `{"input": "print('before')\n1/0"}`, `(?s)^before\n.*ZeroDivisionError: division by zero\n$`, 1},
		{"traceback", `{"args": ["main.py"], "files": [{"path": "main.py", "content": "` + b64("def f():\n    raise ValueError('x')\nf()") + `"}]}`, `(?s)^Traceback.*File "main.py", line 3.*ValueError: x\n$`, 1},
		{"exit", `{"input": "raise SystemExit(3)"}`, `^$`, 3},
		{"a script, not a cell", `{"input": "1 + 1\ndisplay(2)"}`, `(?s)NameError: name 'display' is not defined\n$`, 1},
		{"timeout", `{"input": "while True: pass"}`, ``, 137},
		{"memory", `{"input": "x = bytearray(1 << 30)"}`, ``, 137},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, s.url+"/eval", tc.body)
			if resp.status != http.StatusOK {
				t.Fatalf("status %d: %s", resp.status, resp.body)
			}
			m := resp.json(t)
			stdout, _ := m["stdout"].(string)
			if !regexp.MustCompile(tc.stdout).MatchString(stdout) || m["returncode"] != tc.returncode {
				t.Errorf("stdout %q returncode %v, want %q and %v", stdout, m["returncode"], tc.stdout, tc.returncode)
			}
			if strings.Contains(stdout, "_runblock") {
				t.Errorf("the launcher shows in the output: %q", stdout)
			}
			if files, ok := m["files"].([]any); !ok || len(files) != 0 {
				t.Errorf("files = %v, want []", m["files"])
			}
		})
	}
}

// TestPistonBodies posts the bodies of Piston's documentation and of a
// widely used client (no Content-Type, args, compile_timeout, -1 limits).
func TestPistonBodies(t *testing.T) {
	s := python(t)
	rt := do(t, http.MethodGet, s.url+"/api/v2/runtimes", "")
	if rt.status != http.StatusOK || !regexp.MustCompile(`^\[\{"language":"python","version":"3\.\d+\.\d+","aliases":\["py","py3","python3"\]\}\]`).Match(rt.body) {
		t.Fatalf("runtimes: %d %s", rt.status, rt.body)
	}
	version := regexp.MustCompile(`3\.\d+\.\d+`).FindString(string(rt.body))
	for _, tc := range []struct {
		name, body     string
		stdout, stderr string // regexps
		code           any
		signal         any
	}{
		{"documented", `{"language": "py", "version": "3.10.0", "files": [{"name": "my_cool_code.py", "content": "import sys\nprint(sys.argv[1:])\nprint(input())"}], "stdin": "line", "args": ["1", "2", "3"], "compile_timeout": 10000, "run_timeout": 3000, "compile_memory_limit": -1, "run_memory_limit": -1}`,
			`^\['1', '2', '3'\]\nline\n$`, `^$`, 0.0, nil},
		{"client", `{"language":"python","version":"*","files":[{"content":"print(40+2)"}],"args":[],"stdin":"","compile_timeout":10000,"run_timeout":3000,"compile_memory_limit":-1,"run_memory_limit":-1}`,
			`^42\n$`, `^$`, 0.0, nil},
		{"beside", `{"language":"python","version":"3.12","files":[{"name":"main.py","content":"from lib import f\nf()"},{"name":"lib.py","content":"def f(): print('from lib')"}]}`,
			`^from lib\n$`, `^$`, 0.0, nil},
		{"error", `{"language":"python3","version":"*","files":[{"content":"1/0"}]}`,
			`^$`, `ZeroDivisionError: division by zero\n$`, 1.0, nil},
		{"a script, not a cell", `{"language":"python","version":"*","files":[{"content":"1 + 1\ndisplay(2)"}]}`,
			`^$`, `NameError: name 'display' is not defined\n$`, 1.0, nil},
		{"timeout", `{"language":"python","version":"*","files":[{"content":"while True: pass"}],"run_timeout":300}`,
			`^$`, ``, nil, "SIGKILL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, s.url+"/api/v2/execute", tc.body)
			if resp.status != http.StatusOK {
				t.Fatalf("status %d: %s", resp.status, resp.body)
			}
			m := resp.json(t)
			if m["language"] != "python" || m["version"] != version {
				t.Errorf("language %v version %v, want python %s", m["language"], m["version"], version)
			}
			run, _ := m["run"].(map[string]any)
			stdout, _ := run["stdout"].(string)
			stderr, _ := run["stderr"].(string)
			output, _ := run["output"].(string)
			if !regexp.MustCompile(tc.stdout).MatchString(stdout) || !regexp.MustCompile(tc.stderr).MatchString(stderr) {
				t.Errorf("stdout %q stderr %q, want %q and %q", stdout, stderr, tc.stdout, tc.stderr)
			}
			if output != stdout+stderr {
				t.Errorf("output %q is not stdout and stderr", output)
			}
			if run["code"] != tc.code || run["signal"] != tc.signal {
				t.Errorf("code %v signal %v, want %v and %v", run["code"], run["signal"], tc.code, tc.signal)
			}
			for _, f := range []string{"code", "signal"} {
				if _, ok := run[f]; !ok {
					t.Errorf("run lacks %q (null when not set)", f)
				}
			}
		})
	}
}

// TestNativeFiles runs a snippet with files beside it through /v1/run.
func TestNativeFiles(t *testing.T) {
	s := python(t)
	resp := post(t, s.url+"/v1/run", `{"code":"import sys; print(open('a.txt').read(), open('b.bin','rb').read(), sys.argv)","args":["x"],"files":[{"path":"a.txt","content":"text"},{"path":"b.bin","content":"`+b64("\x00\x01")+`","encoding":"base64"}]}`, "Content-Type", "application/json")
	m := resp.json(t)
	if resp.status != http.StatusOK || m["stdout"] != "text b'\\x00\\x01' ['-c', 'x']\n" || m["success"] != true {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
}

// TestNativeResults: /v1/run answers a cell's displays and last value as
// Jupyter MIME bundles in "results", in order, streamed or not.
func TestNativeResults(t *testing.T) {
	s := python(t)
	body := `{"code":"print('hi')\ndisplay('a')\nx = 41\nx + 1"}`
	want := `[{"data":{"text/plain":"'a'"},"stdout_offset":3},{"data":{"text/plain":"42"},"value":true,"stdout_offset":3}]`
	resp := post(t, s.url+"/v1/run", body, "Content-Type", "application/json")
	var got struct {
		Stdout  string          `json:"stdout"`
		Results json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(resp.body, &got); err != nil || resp.status != http.StatusOK {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
	if got.Stdout != "hi\n" || string(got.Results) != want {
		t.Errorf("stdout %q results %s, want %s", got.Stdout, got.Results, want)
	}
	st := postStream(t, s.url, body, nil, "Content-Type", "application/json")
	if err := json.Unmarshal(st.last, &got); err != nil || string(got.Results) != want {
		t.Errorf("streamed: last line %s, want results %s", st.last, want)
	}
	// With files and arguments the launcher runs the code: its value too.
	resp = post(t, s.url+"/v1/run", `{"code":"import sys\ndisplay(sys.argv)\nopen('a.txt').read()","args":["x"],"files":[{"path":"a.txt","content":"text"}]}`)
	want = `[{"data":{"text/plain":"['-c', 'x']"},"stdout_offset":0},{"data":{"text/plain":"'text'"},"value":true,"stdout_offset":0}]`
	if err := json.Unmarshal(resp.body, &got); err != nil || resp.status != http.StatusOK || string(got.Results) != want {
		t.Errorf("launched: status %d, results %s, want %s: %s", resp.status, got.Results, want, resp.body)
	}
}

// TestLaunchedCellAwaits: a launched cell (code with arguments or files,
// which the sandbox runs through its launcher) awaits at its top level
// and shows its value, as a snippet's cell and a notebook do, and its
// traceback starts in the code, not in the launcher or asyncio; a
// launched script, as python -c, does not take await.
func TestLaunchedCellAwaits(t *testing.T) {
	s := python(t)
	var got struct {
		Success bool            `json:"success"`
		Stderr  string          `json:"stderr"`
		Results json.RawMessage `json:"results"`
	}
	resp := post(t, s.url+"/v1/run", `{"code":"import asyncio, sys\nawait asyncio.sleep(0)\nawait asyncio.sleep(0, sys.argv[1])","args":["awaited"]}`)
	want := `[{"data":{"text/plain":"'awaited'"},"value":true,"stdout_offset":0}]`
	if err := json.Unmarshal(resp.body, &got); err != nil || !got.Success || string(got.Results) != want {
		t.Errorf("an awaiting launched cell: status %d, results %s, want %s: %s", resp.status, got.Results, want, resp.body)
	}
	resp = post(t, s.url+"/v1/run", `{"code":"import asyncio\nawait asyncio.sleep(0)\n1/0","args":["x"]}`)
	if err := json.Unmarshal(resp.body, &got); err != nil || got.Success || !strings.Contains(got.Stderr, "ZeroDivisionError") ||
		strings.Contains(got.Stderr, "asyncio") || strings.Contains(got.Stderr, "_runblock") {
		t.Errorf("a failing awaiting cell: its traceback %q: %s", got.Stderr, resp.body)
	}
	resp = post(t, s.url+"/v1/run", `{"code":"import asyncio\nawait asyncio.sleep(0)","args":["x"],"script":true}`)
	if err := json.Unmarshal(resp.body, &got); err != nil || got.Success || !strings.Contains(got.Stderr, "SyntaxError") {
		t.Errorf("an awaiting launched script: %s, want python's SyntaxError", resp.body)
	}
}
