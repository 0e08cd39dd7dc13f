package sandbox

import (
	"bytes"
	"testing"

	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
)

// TestReadReportBounded: the service reads an init's report whole up to
// protocol.ReportMaxBytes, and refuses one over it, read to its end (so
// the init never blocks writing).
func TestReadReportBounded(t *testing.T) {
	lim := protocol.CollectLimits{MaxFiles: 4, MaxBytes: 1 << 20}
	max := int(protocol.ReportMaxBytes(lim))
	within := bytes.Repeat([]byte("x"), max)
	if got, err := readReport(bytes.NewReader(within), lim); err != nil || !bytes.Equal(got, within) {
		t.Fatalf("a report of the bound's size: %d bytes back, %v", len(got), err)
	}
	r := bytes.NewReader(bytes.Repeat([]byte("x"), max+10))
	if _, err := readReport(r, lim); err != errReportTooLarge {
		t.Fatalf("read a report over its bound: %v", err)
	}
	if r.Len() != 0 {
		t.Fatalf("%d bytes of a report over its bound left unread", r.Len())
	}
}
