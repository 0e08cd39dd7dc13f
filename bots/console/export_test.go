package console_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runblock/runblock/bots/internal/answer"
	"github.com/runblock/runblock/executor"
)

// TestExportWritesTheSession: "%export PATH" writes the session's cells,
// with their outputs, as a notebook; without a path it says how.
func TestExportWritesTheSession(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.ipynb")
	in := "```python\nprint(1)\n```\n\n%export\n\n%export " + path + "\n\n"
	var jobs []executor.Job
	b, out := open(t, strings.NewReader(in), okRunner("1\n", &jobs), nil)
	waitDone(t, b)
	got := out.String()
	for _, want := range []string{"Say where to write the notebook", answer.ExportText(1) + " Written to " + path + "."} {
		if !strings.Contains(got, want) {
			t.Fatalf("output lacks %q:\n%s", want, got)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var nb struct {
		Cells []struct {
			Source  []string `json:"source"`
			Count   int      `json:"execution_count"`
			Outputs []any    `json:"outputs"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(data, &nb); err != nil || len(nb.Cells) != 1 || nb.Cells[0].Count != 1 || len(nb.Cells[0].Outputs) != 1 {
		t.Fatalf("notebook %s (%v)", data, err)
	}
}
