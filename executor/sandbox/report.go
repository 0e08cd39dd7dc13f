package sandbox

import (
	"errors"
	"io"

	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
)

// errReportTooLarge: an init's report passed its bound, which the stage's
// encodeReport does not let happen.
var errReportTooLarge = errors.New("the sandbox's report is over its bound")

// readReport reads an init's report from r until EOF or a read error (the
// service closed it: what came is the report): at most
// protocol.ReportMaxBytes of lim, and whatever is past that is read and
// dropped, so that the init never blocks writing it.
func readReport(r io.Reader, lim protocol.CollectLimits) ([]byte, error) {
	b, _ := io.ReadAll(io.LimitReader(r, protocol.ReportMaxBytes(lim)+1))
	if int64(len(b)) > protocol.ReportMaxBytes(lim) {
		_, _ = io.Copy(io.Discard, r)
		return nil, errReportTooLarge
	}
	return b, nil
}
