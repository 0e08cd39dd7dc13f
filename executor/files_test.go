package executor_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/runblock/runblock/executor"
)

// TestCheckInputPaths: the one table of the input-file rules that the
// sandbox, every API and `exec --file` apply.
func TestCheckInputPaths(t *testing.T) {
	tests := []struct {
		paths  []string
		index  int // of the bad path, -1: all good
		reason string
	}{
		{[]string{"a.txt", "data/b.csv", "x/y/z"}, -1, ""},
		{[]string{"ok", "a\tb"}, 1, "control characters"},
		{[]string{`a\b`}, 0, `not clean (use "a/b")`},
		{[]string{" lead"}, 0, `not clean (use "lead")`},
		{[]string{strings.Repeat("n", 300)}, 0, "longer than 255 bytes"},
		{[]string{"1/2/3/4/5/6/7/8/9"}, 0, "more than 8 levels deep"},
		{[]string{"a", "b", "a"}, 2, "given twice"},
		{[]string{"a", "a/b"}, 1, `inside input file "a"`},
		{[]string{"d/e/f", "d"}, 0, `inside input file "d"`},
		{[]string{"/abs"}, 0, `relative to the work dir (use "abs")`},
		{[]string{"../up"}, 0, `inside the work dir, no .. (use "up")`},
		{[]string{"a//b"}, 0, `not clean (use "a/b")`},
		{[]string{""}, 0, "empty"},
		{[]string{"."}, 0, "empty"},
		{[]string{"nul\x00"}, 0, "control characters"},
		{[]string{"\xff"}, 0, "not UTF-8"},
	}
	for _, tt := range tests {
		err := executor.CheckInputPaths(tt.paths)
		if tt.index < 0 {
			if err != nil {
				t.Errorf("%q: %v", tt.paths, err)
			}
			continue
		}
		var pe *executor.PathError
		if executor.ErrorCode(err) != executor.ErrInvalid || !errors.As(err, &pe) {
			t.Errorf("%q: %v, want an invalid path", tt.paths, err)
			continue
		}
		if pe.Index != tt.index || !strings.Contains(pe.Reason, tt.reason) {
			t.Errorf("%q: path %d %q, want path %d %q", tt.paths, pe.Index, pe.Reason, tt.index, tt.reason)
		}
	}
}
