package sandbox

import (
	"context"
	"testing"

	"github.com/runblock/runblock/executor"
)

// TestStrictGuard: without kernel isolation the guard keeps the original
// list, with clear errors instead of None.
func TestStrictGuard(t *testing.T) {
	pl := guardPlan(t)
	for _, tt := range []struct{ code, errLine string }{
		{"import os\nos.getcwd()", "PermissionError: os.getcwd is disabled in runblock (no kernel isolation: strict guard)"},
		{"import shutil\nshutil.rmtree('x')", "PermissionError: shutil.rmtree is disabled in runblock (no kernel isolation: strict guard)"},
		{"import subprocess\nsubprocess.run(['true'])", "PermissionError: subprocess.Popen is disabled in runblock (no kernel isolation: strict guard)"},
		{"exit()", "PermissionError: exit is disabled in runblock (no kernel isolation: strict guard)"},
	} {
		p, err := spawn(context.Background(), pl, limits{Timeout: 10e9, Memory: 256 << 20}, 1<<16, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.run(context.Background(), executor.Request{Code: tt.code})
		if err != nil {
			t.Fatal(err)
		}
		if res.Error != tt.errLine {
			t.Errorf("%q: error %q, want %q\n%s", tt.code, res.Error, tt.errLine, res.Stderr)
		}
	}
}

// guardPlan is the plan of a run with no kernel layer, the guard alone,
// of the python on PATH.
func guardPlan(t *testing.T) *plan {
	t.Helper()
	py, err := findPython(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	pl, err := newPlan(py, layerSet{})
	if err != nil {
		t.Fatal(err)
	}
	return pl
}
