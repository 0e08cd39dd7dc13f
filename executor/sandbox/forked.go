package sandbox

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/runblock/runblock/executor"
)

// forkedLaunch is a run the fork server forked: its init is no child of
// this process; it is killed by closing its lifeline, and known to have
// ended when its report pipe is at EOF (its report is whole, or it is
// gone). release tells the fork server the run is gone.
type forkedLaunch struct {
	lifeline *os.File // the write end
	close    sync.Once
	done     func()
	released sync.Once
}

func (f *forkedLaunch) kill() { f.close.Do(func() { f.lifeline.Close() }) }

// unreported: an init that did not report was killed (by us), and python
// with it.
func (*forkedLaunch) unreported(res *executor.Result) {
	res.ExitCode, res.Signal = -1, "SIGKILL"
}

func (*forkedLaunch) setupError(stderr string, read bool) error {
	if !read {
		return errors.New("the fork server's run ended before it was ready")
	}
	return fmt.Errorf("the fork server's run ended before it was ready: %s", stderr)
}

func (f *forkedLaunch) release() { f.released.Do(f.done) }
