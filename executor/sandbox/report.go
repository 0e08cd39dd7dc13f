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

// readReport reads an init's report from r: its one line, ended by a
// newline (JSON, which holds none before its end), or what came until EOF
// or a read error (the service closed it) where none ends it. A forked
// run's init reports while python's teardown goes on and closes r after
// it: the report is there before the EOF. At most
// protocol.ReportMaxBytes of lim; whatever is past that is read and
// dropped, so that the init never blocks writing it.
func readReport(r io.Reader, lim protocol.CollectLimits) ([]byte, error) {
	b, _ := bufio.NewReader(io.LimitReader(r, protocol.ReportMaxBytes(lim)+1)).ReadBytes('\n')
	if int64(len(b)) > protocol.ReportMaxBytes(lim) {
		_, _ = io.Copy(io.Discard, r)
		return nil, errReportTooLarge
	}
	return b, nil
}
