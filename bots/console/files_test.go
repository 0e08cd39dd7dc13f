package console_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runblock/runblock/bots/console"
	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/executor"
)

func TestFilesAreSavedAndTheirPathsPrinted(t *testing.T) {
	dir := t.TempDir()
	r := &fakerunner.Runner{Func: func(context.Context, executor.Job) (executor.Result, error) {
		return executor.Result{Success: true, Stdout: "done\n",
			Files: []executor.File{
				{Path: "figure-1.png", Size: 4, MIME: "image/png", Content: []byte("\x89PNG")},
				{Path: "out/summary.csv", Size: 4, MIME: "text/csv", Content: []byte("a,b\n")},
			},
			FilesOmitted: []executor.OmittedFile{{Path: "big.csv", Size: 9 << 20, Reason: "over the total size limit"}},
		}, nil
	}}
	in := "```python\nplot()\n```\n\n```python\nplot()\n```\n\n"
	b, out := open(t, strings.NewReader(in), r, func(c *console.Config) { c.FilesDir = dir })
	waitDone(t, b)
	got := out.String()
	for _, run := range []string{"cell-1", "cell-2"} {
		for _, f := range []struct{ path, content string }{{"figure-1.png", "\x89PNG"}, {"out/summary.csv", "a,b\n"}} {
			p := filepath.Join(dir, run, f.path)
			data, err := os.ReadFile(p)
			if err != nil || string(data) != f.content {
				t.Errorf("%s: %q, %v", p, data, err)
			}
			if !strings.Contains(got, p+" (") {
				t.Errorf("output does not name %s:\n%s", p, got)
			}
		}
	}
	for _, want := range []string{"2 files saved in " + filepath.Join(dir, "cell-1") + ":", "1 file not attached: big.csv (9 MiB, over the total size limit)"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}

func TestFilesGoToAFreshTempDir(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	r := &fakerunner.Runner{Func: func(context.Context, executor.Job) (executor.Result, error) {
		return executor.Result{Success: true, Files: []executor.File{{Path: "a.txt", Size: 1, MIME: "text/plain", Content: []byte("a")}}}, nil
	}}
	b, out := open(t, strings.NewReader("```python\nx()\n```\n\n"), r, nil)
	waitDone(t, b)
	_, after, ok := strings.Cut(out.String(), "1 file saved in ")
	dir, _, _ := strings.Cut(after, ":")
	if !ok || !strings.HasPrefix(dir, os.Getenv("TMPDIR")) {
		t.Fatalf("no fresh directory named:\n%s", out.String())
	}
	if data, err := os.ReadFile(filepath.Join(dir, "a.txt")); err != nil || string(data) != "a" {
		t.Errorf("a.txt: %q, %v", data, err)
	}
}

// TestSavedFileNamesEscaped: a file name cannot forge a line of the
// listing or reach the terminal as an escape sequence.
func TestSavedFileNamesEscaped(t *testing.T) {
	dir := t.TempDir()
	name := "a.txt (text/plain, 1 bytes)\n  /etc/passwd\x1b[2J\u202etxt.exe"
	r := &fakerunner.Runner{Func: func(context.Context, executor.Job) (executor.Result, error) {
		return executor.Result{Success: true, Files: []executor.File{{Path: name, Size: 1, MIME: "text/plain", Content: []byte("a")}},
			FilesOmitted: []executor.OmittedFile{{Path: "b\nforged", Reason: "over the file count limit"}}}, nil
	}}
	b, out := open(t, strings.NewReader("```python\nx()\n```\n\n"), r, func(c *console.Config) { c.FilesDir = dir })
	waitDone(t, b)
	got := out.String()
	if strings.Contains(got, "\n  /etc/passwd") || strings.Contains(got, "\nforged") || strings.ContainsAny(got, "\x1b\u202e") {
		t.Errorf("a name reached the console raw:\n%q", got)
	}
	if want := `a.txt (text/plain, 1 bytes)\n  /etc/passwd\x1b[2J\u202etxt.exe (text/plain, 1 bytes)`; !strings.Contains(got, want) {
		t.Errorf("output lacks %q:\n%q", want, got)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "cell-1", name)); err != nil || string(data) != "a" {
		t.Errorf("the file under its real name: %q, %v", data, err)
	}
}

// TestCutOutputIsSaved: a run whose output the view cuts has its whole
// output saved beside the run's files, and the reply names the file.
func TestCutOutputIsSaved(t *testing.T) {
	dir := t.TempDir()
	var long strings.Builder
	for i := range 100 {
		fmt.Fprintf(&long, "line %d\n", i)
	}
	r := &fakerunner.Runner{Func: func(context.Context, executor.Job) (executor.Result, error) {
		return executor.Result{Success: true, Stdout: long.String(),
			Files: []executor.File{{Path: "a.txt", Size: 1, MIME: "text/plain", Content: []byte("a")}}}, nil
	}}
	b, out := open(t, strings.NewReader("```python\nx()\n```\n\n"), r, func(c *console.Config) { c.FilesDir = dir })
	waitDone(t, b)
	got := out.String()
	p := filepath.Join(dir, "cell-1-output.txt")
	if data, err := os.ReadFile(p); err != nil || string(data) != long.String() {
		t.Errorf("%s: %q, %v", p, data, err)
	}
	for _, want := range []string{"line 3\n", "whole output saved in " + p + "\n", "1 file saved in " + filepath.Join(dir, "cell-1") + ":"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "line 99\n") {
		t.Errorf("the view was not cut:\n%s", got)
	}
}
