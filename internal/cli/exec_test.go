package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/internal/config"
)

func TestExecCommand(t *testing.T) {
	requirePython(t)
	dir := t.TempDir()
	write := func(name, code string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(code), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := write("ok.py", "print('hello')\n")
	fails := write("fails.py", "1/0\n")
	slow := write("slow.py", "import time\nprint('before', flush=True)\ntime.sleep(30)\n")
	env := config.Env{"RUNBLOCK_ALLOW_UNISOLATED": "1"}

	t.Run("json", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{"exec", ok, "--json"}, env, nil, &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		var res map[string]any
		if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
			t.Fatalf("not one JSON object: %q: %v", stdout.String(), err)
		}
		for _, k := range []string{"success", "stdout", "stderr", "error", "timeout", "memory_exceeded", "output_truncated", "exit_code", "signal", "duration_ms"} {
			if _, has := res[k]; !has {
				t.Errorf("JSON lacks %q", k)
			}
		}
		if res["success"] != true || res["stdout"] != "hello\n" {
			t.Errorf("result %v", res)
		}
	})
	t.Run("failing snippet exits 1", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{"exec", fails}, env, nil, &stdout, &stderr); code != 1 {
			t.Fatalf("exit %d, want 1: %s", code, stderr.String())
		}
		if !strings.Contains(stdout.String(), "ZeroDivisionError") {
			t.Errorf("stdout %q lacks the error line", stdout.String())
		}
	})
	t.Run("stdin and timeout flag", func(t *testing.T) {
		code, err := os.ReadFile(slow)
		if err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{"exec", "--json", "--timeout", "300ms", "-"}, env, bytes.NewReader(code), &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		var res executor.Result
		if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
			t.Fatal(err)
		}
		if !res.Timeout || !strings.Contains(res.Stdout, "before") {
			t.Errorf("result %+v: want a timeout with the partial output", res)
		}
	})
	t.Run("json on refusal", func(t *testing.T) {
		big := write("big.py", strings.Repeat("x = 1\n", 200))
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{"exec", "--json", big}, config.Env{"RUNBLOCK_ALLOW_UNISOLATED": "1", "RUNBLOCK_MAX_CODE_BYTES": "100"}, nil, &stdout, &stderr); code != 125 {
			t.Errorf("exit %d, want 125 (could not run)", code)
		}
		var res map[string]string
		if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
			t.Fatalf("not one JSON object: %q: %v", stdout.String(), err)
		}
		if res["code"] != "too_large" || res["error"] == "" {
			t.Errorf("refusal %v, want code too_large and an error", res)
		}
	})
	t.Run("json on usage error", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{"exec", "--json"}, env, nil, &stdout, &stderr); code != 2 {
			t.Errorf("exit %d, want 2", code)
		}
		var res map[string]string
		if err := json.Unmarshal(stdout.Bytes(), &res); err != nil || res["code"] != "usage" {
			t.Errorf("stdout %q: want one JSON object with code usage (%v)", stdout.String(), err)
		}
	})
	t.Run("stdin file", func(t *testing.T) {
		in := write("in.txt", "41\n")
		echo := write("echo.py", "print(int(input()) + 1)\n")
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{"exec", "--stdin", in, echo}, env, nil, &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		if !strings.HasSuffix(stdout.String(), "\n42\n") {
			t.Errorf("stdout %q, want 42", stdout.String())
		}
	})
	t.Run("whole output", func(t *testing.T) {
		many := write("many.py", "for i in range(100): print(i)\n")
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{"exec", many}, env, nil, &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		if !strings.Contains(stdout.String(), "\n99") || !strings.Contains(stdout.String(), "\n50\n") {
			t.Errorf("plain exec cut the output: %q", stdout.String())
		}
	})
	t.Run("chat settings do not stop exec", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		chat := config.Env{"RUNBLOCK_ALLOW_UNISOLATED": "1", "SLACK_SIGNING_SECRET": "8f14e45fceea167a5a36dedd4bea2543", "DISCORD_BOT_TOKEN": "garbage"}
		if code := run(context.Background(), []string{"exec", ok}, chat, nil, &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	})
	t.Run("missing file", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{"exec", filepath.Join(dir, "nope.py")}, env, nil, &stdout, &stderr); code != 125 {
			t.Errorf("exit %d, want 125 (could not run)", code)
		}
	})
}

// TestSaveFilesEscapesNames: exec's listing of a run's files cannot be
// forged by a name (a newline, an escape sequence), and the files keep
// their real names on disk.
func TestSaveFilesEscapesNames(t *testing.T) {
	dir := t.TempDir()
	name := "a.txt (text/plain, 1 bytes)\n  /etc/passwd\x1b[2J"
	var out bytes.Buffer
	err := saveFiles(&out, dir, executor.Result{Files: []executor.File{{Path: name, MIME: "text/plain", Size: 1, Content: []byte("a")}},
		FilesOmitted: []executor.OmittedFile{{Path: "b\nforged", Reason: executor.OmitCount}}})
	if err != nil {
		t.Fatal(err)
	}
	want := "files saved in " + dir + ":\n" +
		`  a.txt (text/plain, 1 bytes)\n  /etc/passwd\x1b[2J (text/plain, 1 bytes)` + "\n" +
		`  not returned: b\nforged (over the file count limit)` + "\n"
	if out.String() != want {
		t.Errorf("got\n%q\nwant\n%q", out.String(), want)
	}
	if data, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(data) != "a" {
		t.Errorf("the file under its real name: %q, %v", data, err)
	}
}

// TestExecExitStatus: plain exec exits with the snippet's status, 124 on
// a timeout and 137 on the memory limit; exec --json exits 0 whenever it
// printed a result, which carries the status.
func TestExecExitStatus(t *testing.T) {
	requirePython(t)
	dir := t.TempDir()
	env := config.Env{"RUNBLOCK_ALLOW_UNISOLATED": "1"}
	for _, tc := range []struct {
		name, code string
		args       []string
		want       int
	}{
		{"success", "print('hi')\n", nil, 0},
		{"uncaught exception", "1/0\n", nil, 1},
		{"SystemExit(3)", "raise SystemExit(3)\n", nil, 3},
		{"sys.exit(0) after output", "import sys\nprint('x')\nsys.exit(0)\n", nil, 0},
		{"timeout", "while True: pass\n", []string{"--timeout", "300ms"}, 124},
		{"memory", "x = bytearray(512 << 20)\nx[::4096] = b'x' * len(x[::4096])\n", []string{"--memory", "64MiB"}, 137},
		{"killed by a signal", "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n", nil, 128 + 15},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".py")
			if err := os.WriteFile(p, []byte(tc.code), 0o600); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), append([]string{"exec", p}, tc.args...), env, nil, &stdout, &stderr); code != tc.want {
				t.Errorf("exec: exit %d, want %d; stdout %q, stderr %q", code, tc.want, stdout.String(), stderr.String())
			}
			stdout.Reset()
			if code := run(context.Background(), append([]string{"exec", "--json", p}, tc.args...), env, nil, &stdout, &stderr); code != 0 {
				t.Errorf("exec --json: exit %d, want 0 with a result; stderr %q", code, stderr.String())
			}
			var res executor.Result
			if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
				t.Errorf("exec --json: not a result: %q: %v", stdout.String(), err)
			}
		})
	}
}

// TestExecShowsValues: exec prints what a cell displays and its last
// value where they were shown, and --json carries them as results.
func TestExecShowsValues(t *testing.T) {
	requirePython(t)
	p := filepath.Join(t.TempDir(), "cell.py")
	if err := os.WriteFile(p, []byte("print('a', end='')\ndisplay(1)\nprint('b')\n6 * 7\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := config.Env{"RUNBLOCK_ALLOW_UNISOLATED": "1"}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"exec", p}, env, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "a\n1\nb\nOut:\n42\n") || strings.Count(stdout.String(), "42") != 1 {
		t.Errorf("stdout %q, want a, 1, b, then Out: 42 once, on lines of their own", stdout.String())
	}
	stdout.Reset()
	if code := run(context.Background(), []string{"exec", "--json", p}, env, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var res executor.Result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 2 || res.Results[0].Data["text/plain"] != "1" || res.Results[0].At != 1 ||
		res.Results[1].Data["text/plain"] != "42" || !res.Results[1].Value || res.Stdout != "ab\n" {
		t.Errorf("result %+v", res)
	}
}

// TestExecNotebook: exec runs a notebook's code cells in order as one
// session, prints each under [n], stops at the first that fails, and
// with --out writes the executed notebook and the files beside it.
func TestExecNotebook(t *testing.T) {
	requirePython(t)
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	env := config.Env{"RUNBLOCK_ALLOW_UNISOLATED": "1"}
	nb := write("nb.ipynb", `{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
		{"cell_type": "markdown", "id": "m", "metadata": {}, "source": "# Title"},
		{"cell_type": "code", "id": "a", "metadata": {}, "execution_count": null, "outputs": [], "source": ["x = 41\n", "open('out.txt', 'w').write('z')"]},
		{"cell_type": "code", "id": "b", "metadata": {}, "execution_count": null, "outputs": [], "source": "print('hi')\nx + 1"},
		{"cell_type": "code", "id": "c", "metadata": {}, "execution_count": null, "outputs": [], "source": "1 / 0"},
		{"cell_type": "code", "id": "d", "metadata": {}, "execution_count": null, "outputs": [], "source": "print('never')"}]}`)
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"exec", "--out", out, nb}, env, nil, &stdout, &stderr); code != 1 {
		t.Fatalf("exit %d, want 1 (the third cell fails): %s %s", code, stdout.String(), stderr.String())
	}
	got := stdout.String()
	for _, want := range []string{"[1]\nOK · ", "[2]\nOK · ", "\nhi\nOut[2]:\n42\n", "[3]\nError · ", "ZeroDivisionError", "notebook saved as " + filepath.Join(out, "nb.ipynb"), "out.txt"} {
		if !strings.Contains(got, want) {
			t.Errorf("stdout lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "never") || strings.Contains(got, "[4]") {
		t.Errorf("a cell after the failed one ran:\n%s", got)
	}
	if b, err := os.ReadFile(filepath.Join(out, "out.txt")); err != nil || string(b) != "z" {
		t.Errorf("out.txt: %q %v", b, err)
	}
	b, err := os.ReadFile(filepath.Join(out, "nb.ipynb"))
	if err != nil {
		t.Fatal(err)
	}
	var written struct {
		Cells []struct {
			Count   *int `json:"execution_count"`
			Outputs []struct {
				Type  string              `json:"output_type"`
				Data  map[string][]string `json:"data"`
				EName string              `json:"ename"`
			} `json:"outputs"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(b, &written); err != nil || len(written.Cells) != 5 {
		t.Fatalf("written notebook %s: %v", b, err)
	}
	second := written.Cells[2]
	if second.Count == nil || *second.Count != 2 || len(second.Outputs) != 2 || second.Outputs[1].Type != "execute_result" || second.Outputs[1].Data["text/plain"][0] != "42" {
		t.Errorf("the second code cell: %s", b)
	}
	if c := written.Cells[3]; len(c.Outputs) != 1 || c.Outputs[0].EName != "ZeroDivisionError" {
		t.Errorf("the failed cell: %s", b)
	}
	if c := written.Cells[4]; c.Count != nil || len(c.Outputs) != 0 {
		t.Errorf("the cell that did not run: %s", b)
	}

	bad := write("bad.ipynb", `{"nbformat": 3, "worksheets": []}`)
	stdout.Reset()
	stderr.Reset()
	if code := run(context.Background(), []string{"exec", bad}, env, nil, &stdout, &stderr); code != exitNotRun || !strings.Contains(stderr.String(), "nbformat 3") {
		t.Errorf("exit %d, stderr %q: want %d and why", code, stderr.String(), exitNotRun)
	}
}
