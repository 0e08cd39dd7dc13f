package console_test

import (
	"context"
	"encoding/base64"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runblock/runblock/bots/console"
	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/executor"
)

// TestCellShowsItsValueAndImages: a cell's value is printed after its
// output as "Out[n]:", and an image it displayed is saved as its files
// are.
func TestCellShowsItsValueAndImages(t *testing.T) {
	dir := t.TempDir()
	png := base64.StdEncoding.EncodeToString([]byte("\x89PNG"))
	r := &fakerunner.Runner{Func: func(context.Context, executor.Job) (executor.Result, error) {
		return executor.Result{Success: true, Stdout: "hi\n", Results: []executor.Display{
			{Data: map[string]string{"text/plain": "<PIL.Image.Image image mode=RGB size=8x8>", "image/png": png}, At: 3},
			{Data: map[string]string{"text/plain": "42"}, Value: true, At: 3},
		}}, nil
	}}
	b, out := open(t, strings.NewReader("```python\nx + 1\n```\n\n"), r, func(c *console.Config) { c.FilesDir = dir })
	waitDone(t, b)
	if got := out.String(); !strings.Contains(got, "hi\nOut[1]:\n42\n") {
		t.Fatalf("output:\n%s", got)
	}
	var saved []string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			saved = append(saved, filepath.Base(path))
		}
		return nil
	})
	if strings.Join(saved, " ") != "display-1.png" {
		t.Fatalf("saved %v, want the displayed image", saved)
	}
}
