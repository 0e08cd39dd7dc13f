package bench

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func python(t *testing.T) interpreter {
	t.Helper()
	py, err := resolvePython(context.Background(), "python3")
	if err != nil {
		t.Skipf("no python3: %v", err)
	}
	return py
}

func TestResolvePython(t *testing.T) {
	py := python(t)
	if !filepath.IsAbs(py.Path) {
		t.Errorf("resolved path %q is not absolute", py.Path)
	}
	if !strings.HasPrefix(py.Version, "3.") {
		t.Errorf("version = %q, want 3.x", py.Version)
	}
	if _, err := resolvePython(context.Background(), filepath.Join(t.TempDir(), "no-python")); err == nil {
		t.Error("resolving a missing interpreter: want an error")
	}
}

func TestBare(t *testing.T) {
	b := bare{python: python(t).Path, dir: t.TempDir()}
	tests := []struct {
		name    string
		code    string
		timeout time.Duration
		wantOK  bool
		wantOut string
	}{
		{"hello", helloCode, 10 * time.Second, true, helloOut},
		{"exception", "print('a')\n1/0", 10 * time.Second, false, "a\n"},
		{"isolated mode ignores the environment", "import sys; print(sys.flags.isolated, sys.flags.no_site)", 10 * time.Second, true, "1 1\n"},
		{"killed at its timeout", "while True: pass", 200 * time.Millisecond, false, ""},
		{"stdout kept bounded", "print('x' * 100000)", 10 * time.Second, true, strings.Repeat("x", 4096)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, out, err := b.run(context.Background(), tt.code, tt.timeout)
			if err != nil {
				t.Fatal(err)
			}
			if ok != tt.wantOK || out != tt.wantOut {
				t.Errorf("run = %v, %.50q; want %v, %.50q", ok, out, tt.wantOK, tt.wantOut)
			}
		})
	}
	if _, _, err := (bare{python: filepath.Join(t.TempDir(), "none"), dir: t.TempDir()}).run(context.Background(), helloCode, time.Second); err == nil {
		t.Error("missing interpreter: want an error")
	}
}

func TestHumanEval(t *testing.T) {
	progs, err := humanEval(bytes.NewReader(humanEvalData))
	if err != nil {
		t.Fatal(err)
	}
	if len(progs) != 164 {
		t.Errorf("%d programs, want 164", len(progs))
	}
	first := progs[0]
	if !strings.HasPrefix(first, "from typing import List\n\n\ndef has_close_elements(") || !strings.HasSuffix(first, "\ncheck(has_close_elements)\n") {
		t.Errorf("program 0 is not prompt + solution + test + check:\n%s", first)
	}
	b := bare{python: python(t).Path, dir: t.TempDir()}
	for _, i := range []int{0, 163} {
		ok, _, err := b.run(context.Background(), progs[i], 10*time.Second)
		if err != nil || !ok {
			t.Errorf("HumanEval/%d with bare python: ok=%v err=%v", i, ok, err)
		}
	}
}

func TestHumanEvalBadData(t *testing.T) {
	var notJSON bytes.Buffer
	zw := gzip.NewWriter(&notJSON)
	_, _ = zw.Write([]byte("{\"prompt\": 1}\n"))
	_ = zw.Close()
	for name, data := range map[string][]byte{"not gzip": []byte(`{"prompt": ""}`), "not a problem": notJSON.Bytes()} {
		if _, err := humanEval(bytes.NewReader(data)); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}

func TestFindShared(t *testing.T) {
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	deep := filepath.Join(repo, "a", "b")
	for _, d := range []string{deep, filepath.Join(root, "shared")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(repo, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(deep)
	if got, want := findShared(), filepath.Join(root, "shared"); got != want {
		t.Errorf("findShared from %s = %q, want %q", deep, got, want)
	}
	if err := os.Remove(filepath.Join(root, "shared")); err != nil {
		t.Fatal(err)
	}
	if got := findShared(); got != "" {
		t.Errorf("findShared without ../shared = %q, want \"\"", got)
	}
}

// TestPlotModules: a python that lacks a module the plot needs gives the
// one line the plot's skip says, naming the module and what to set; one
// that has them gives none.
func TestPlotModules(t *testing.T) {
	py := python(t)
	if err := hasModules(context.Background(), py.Path, "json", "math"); err != nil {
		t.Errorf("json and math: %v, want none", err)
	}
	err := hasModules(context.Background(), py.Path, "json", "nosuch_module_xyz")
	if err == nil || err.Error() != "ModuleNotFoundError: No module named 'nosuch_module_xyz'" {
		t.Errorf("a missing module: %v, want the import's last line", err)
	}
	if err := hasModules(context.Background(), py.Path, "numpy", "matplotlib"); err == nil {
		t.Skipf("%s has numpy and matplotlib: the plot is not skipped", py.Path)
	}
	b := newBenchmark(Options{})
	why := b.plotModules(context.Background(), py.Path)
	if !strings.HasPrefix(why, py.Path+": ModuleNotFoundError: No module named ") || !strings.Contains(why, "RUNBLOCK_PYTHON=/usr/bin/python3") || strings.Contains(why, "\n") {
		t.Errorf("plot skipped because %q, want one line naming the module and RUNBLOCK_PYTHON", why)
	}
}
