package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/internal/config"
)

func TestDoctorCommand(t *testing.T) {
	requirePython(t)
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"doctor", "--json"}, config.Env{"RUNBLOCK_ALLOW_UNISOLATED": "1"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var rep sandbox.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("%q: %v", stdout.String(), err)
	}
	if rep.Tier == "" || rep.Python == "" || len(rep.Layers) == 0 {
		t.Errorf("report %+v", rep)
	}
	if !strings.Contains(stdout.String(), `"fork_server":{"active":`) {
		t.Errorf("the JSON report lacks the fork server: %s", stdout.String())
	}

	stdout.Reset()
	off := config.Env{"RUNBLOCK_ALLOW_UNISOLATED": "1", "RUNBLOCK_FORKSERVER": "off"}
	if code := run(context.Background(), []string{"doctor"}, off, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "\nfork server: off (RUNBLOCK_FORKSERVER=off)") {
		t.Errorf("doctor with RUNBLOCK_FORKSERVER=off says:\n%s", stdout.String())
	}
}

func TestForkServerLine(t *testing.T) {
	tests := []struct {
		name     string
		rep      sandbox.ForkServerReport
		disabled bool
		want     string
	}{
		{"active", sandbox.ForkServerReport{Active: true}, false, "fork server: on (each run is a fork of it)"},
		{"active with detail", sandbox.ForkServerReport{Active: true, Detail: "each run is a fork; preloaded: numpy"}, false, "fork server: on (each run is a fork; preloaded: numpy)"},
		{"turned off", sandbox.ForkServerReport{Detail: "off (RUNBLOCK_FORKSERVER=off): each run starts python from scratch"}, true, "fork server: off (RUNBLOCK_FORKSERVER=off): each run starts python from scratch"},
		{"failed", sandbox.ForkServerReport{Detail: "unavailable, each run starts python from scratch: no user namespaces"}, false, "fork server: unavailable, each run starts python from scratch: no user namespaces"},
		{"turned off, unexplained", sandbox.ForkServerReport{}, true, "fork server: off (RUNBLOCK_FORKSERVER=off): each run starts a sandbox from scratch"},
		{"unexplained", sandbox.ForkServerReport{}, false, "fork server: unavailable, each run starts a sandbox from scratch"},
	}
	for _, tt := range tests {
		if got := forkServerLine(tt.rep, tt.disabled); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}
