package sandbox

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
	"time"

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

// TestReadReportEndsAtItsLine: the report is read when its line has
// come, not when the init closes the pipe: a forked run's init reports
// while python's teardown still goes on, and closes it after.
func TestReadReportEndsAtItsLine(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	line := []byte(`{"exited":true,"exit_code":0,"signal":0}` + "\n")
	if _, err := w.Write(line); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := readReport(r, protocol.CollectLimits{})
		got <- b
	}()
	select {
	case b := <-got:
		if !bytes.Equal(b, line) {
			t.Fatalf("read %q, want %q", b, line)
		}
	case <-time.After(time.Minute):
		w.Close() // ends the read
		t.Fatal("the report was not read until its pipe closed")
	}
}

// TestReadReportLeavesLittle: a run's report, a line of about a hundred
// bytes, leaves the service's collector well under a KiB: it is read in
// small chunks, not through bufio's default 4 KiB buffer.
func TestReadReportLeavesLittle(t *testing.T) {
	line := `{"exited":true,"exit_code":0,"signal":0,"peak":1234567}` + "\n"
	read := func() {
		if b, err := readReport(strings.NewReader(line), protocol.CollectLimits{}); err != nil || string(b) != line {
			t.Fatalf("read %q, %v", b, err)
		}
	}
	if per := bytesPerRun(read); per > 1<<10 {
		t.Errorf("a report's read allocates %d bytes, want under 1 KiB", per)
	}
}

// TestDrainKeepsTheReportPastTheOutputGrace: an output pipe that an
// escaped process keeps open is closed at outputGrace, but the report of
// an init that is gone is read whole however late its reader runs (here,
// only after that close). Cut with the output, a cold run's report of
// many files once reached the service without its end.
func TestDrainKeepsTheReportPastTheOutputGrace(t *testing.T) {
	p := &proc{initDone: make(chan struct{})}
	ends, err := p.pipes(true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ends.close()
		for _, f := range append(p.readEnds, p.initR, p.stdin, p.request) {
			f.Close()
		}
	})
	lim := protocol.CollectLimits{MaxFiles: 4, MaxBytes: 1 << 20}
	line := append(bytes.Repeat([]byte("x"), 32<<10), '\n')
	if _, err := ends.init.Write(line); err != nil {
		t.Fatal(err)
	}
	ends.init.Close() // the init wrote its report and ended
	outDone := make(chan struct{})
	go func() {
		defer close(outDone)
		_, _ = io.Copy(io.Discard, p.outR) // until drain closes it
	}()
	go func() {
		defer close(p.initDone)
		<-outDone
		p.initStatus, p.reportErr = readReport(p.initR, lim)
	}()
	p.drain(outDone)
	<-p.initDone
	if p.reportErr != nil || !bytes.Equal(p.initStatus, line) {
		t.Fatalf("read %d bytes of the report (error %v), want all %d", len(p.initStatus), p.reportErr, len(line))
	}
}
