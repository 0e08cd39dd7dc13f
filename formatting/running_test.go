package formatting

import (
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
)

// TestRenderRunning: the live view of a run still going says it runs and
// for how long (whole seconds), above its output so far.
func TestRenderRunning(t *testing.T) {
	for _, tt := range []struct {
		p    Platform
		want string
	}{
		{Discord, "**Running** · 3 s\n```\n1\n2\n```"},
		{Slack, "*Running* · 3 s\n```\n1\n2\n```"},
	} {
		res := executor.Result{Success: true, Stdout: "1\n2\n", Duration: 3700 * time.Millisecond}
		if got := RenderRun(tt.p, Extraction{}, res, RenderOptions{Running: true}).Text; got != tt.want {
			t.Errorf("%v: got %q, want %q", tt.p, got, tt.want)
		}
	}
}
