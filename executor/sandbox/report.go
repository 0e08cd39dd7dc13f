package sandbox

import (
	"bufio"
	"errors"
	"io"

	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
)

// errReportTooLarge: an init's report passed its bound, which the stage's
// encodeReport does not let happen.
var errReportTooLarge = errors.New("the sandbox's report is over its bound")

// reportChunk is what readReport reads at a time: io.ReadAll's first
// read, where bufio's default of 4 KiB made every run's report leave the
// service's collector 4.2 KiB, not 0.6 (a run's report is a line of about
// a hundred bytes; one with files is read in more chunks).
const reportChunk = 512

// readReport reads an init's report from r: its one line, ended by a
// newline (JSON, which holds none before its end), or what came until EOF
// or a read error (the service closed it) where none ends it. A forked
// run's init reports while python's teardown goes on and closes r after
// it: the report is there before the EOF. At most
// protocol.ReportMaxBytes of lim; whatever is past that is read and
// dropped, so that the init never blocks writing it.
func readReport(r io.Reader, lim protocol.CollectLimits) ([]byte, error) {
	b, _ := bufio.NewReaderSize(io.LimitReader(r, protocol.ReportMaxBytes(lim)+1), reportChunk).ReadBytes('\n')
	if int64(len(b)) > protocol.ReportMaxBytes(lim) {
		_, _ = io.Copy(io.Discard, r)
		return nil, errReportTooLarge
	}
	return b, nil
}
