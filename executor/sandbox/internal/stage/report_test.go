package stage

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
)

// TestReportBounded: whatever the init collected, its report fits
// protocol.ReportMaxBytes (all the service reads of it), decodes, and
// names what it cut as omitted.
func TestReportBounded(t *testing.T) {
	lim := protocol.CollectLimits{MaxFiles: 4, MaxBytes: 1 << 20}
	long := strings.Repeat("\x01\xff", protocol.ReportMaxPath) // escapes to 6 bytes a byte
	many := func(n int, path string) []executor.OmittedFile {
		out := make([]executor.OmittedFile, n)
		for i := range out {
			out[i] = executor.OmittedFile{Path: path, Reason: executor.OmitCount}
		}
		return out
	}
	tests := []struct {
		name      string
		st        protocol.InitStatus
		files     int
		named     int
		notNamed  string
		errPrefix string
	}{
		{name: "small", st: protocol.InitStatus{Files: []executor.File{{Path: "a", Content: []byte("x")}}, Omitted: many(2, "b")}, files: 1, named: 2},
		{name: "thousands of escaped names", st: protocol.InitStatus{Omitted: many(5000, long)}, named: protocol.ReportMaxOmitted, notNamed: protocol.NotNamedPath(4900)},
		{name: "files over the caps", st: protocol.InitStatus{Files: []executor.File{
			{Path: "a", Content: make([]byte, 1<<20)}, {Path: "b", Content: []byte("b")}, {Path: "c"}, {Path: "d"}, {Path: "e"},
			{Path: long, Content: []byte("long")},
		}}, files: 4, named: 2},
		{name: "long error", st: protocol.InitStatus{Error: strings.Repeat("\x00", 1<<20)}, errPrefix: "\x00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := encodeReport(tt.st, lim)
			if int64(len(b)) > protocol.ReportMaxBytes(lim) {
				t.Fatalf("report of %d bytes, over the bound of %d", len(b), protocol.ReportMaxBytes(lim))
			}
			var st protocol.InitStatus
			if err := json.Unmarshal(b, &st); err != nil {
				t.Fatal(err)
			}
			named := len(st.Omitted)
			if tt.notNamed != "" {
				last := st.Omitted[len(st.Omitted)-1]
				if last.Path != tt.notNamed || last.Reason != executor.OmitNotNamed {
					t.Fatalf("last omitted entry %+v, want %q", last, tt.notNamed)
				}
				named--
			}
			if len(st.Files) != tt.files || named != tt.named {
				t.Fatalf("%d files and %d named omitted, want %d and %d", len(st.Files), named, tt.files, tt.named)
			}
			for _, o := range st.Omitted {
				// JSON reads each byte that is not UTF-8 back as U+FFFD.
				if len(o.Path) > 3*protocol.ReportMaxPath {
					t.Fatalf("omitted path of %d bytes", len(o.Path))
				}
			}
			if len(st.Error) > protocol.ReportMaxError || !strings.HasPrefix(st.Error, tt.errPrefix) {
				t.Fatalf("error of %d bytes: %.20q", len(st.Error), st.Error)
			}
		})
	}
}
