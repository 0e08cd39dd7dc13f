//go:build linux

package sandbox

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
)

// TestStageStartsBeforeTheService: a process re-executed as a stage
// becomes it as package stage is initialized, before the packages that
// import it (this one, the service's) are: their initialization took
// most of a stage's start in runblock's binary. The stage here is the
// locker without its spec, which reports that on its status descriptor
// and exits.
func TestStageStartsBeforeTheService(t *testing.T) {
	const importer = "init github.com/runblock/runblock/executor/sandbox @"
	inits := func(argv0 string, args ...string) (trace, status string) {
		t.Helper()
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var stderr bytes.Buffer
		cmd := exec.Command("/proc/self/exe", args...)
		cmd.Args[0] = argv0
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
		cmd.Stderr = &stderr
		cmd.ExtraFiles = make([]*os.File, protocol.FDStatus-2)
		cmd.ExtraFiles[protocol.FDStatus-3] = w
		err = cmd.Run()
		w.Close()
		out, _ := io.ReadAll(r)
		if argv0 == protocol.LockerMarker && err == nil {
			t.Errorf("the locker without a spec exited 0")
		}
		return stderr.String(), string(out)
	}
	trace, _ := inits(os.Args[0], "-test.run=^$")
	if !strings.Contains(trace, importer) {
		t.Fatalf("this package's initialization is not in the trace of a test binary, so this test tells nothing:\n%s", trace)
	}
	trace, status := inits(protocol.LockerMarker)
	if status != "error: missing stage spec\n" {
		t.Errorf("the locker said %q, want that its spec is missing", status)
	}
	if strings.Contains(trace, importer) {
		var ours []string
		for line := range strings.Lines(trace) {
			if strings.Contains(line, "/runblock/") {
				ours = append(ours, line)
			}
		}
		t.Errorf("the stage started after the packages that import it were initialized:\n%s", strings.Join(ours, ""))
	}
}
