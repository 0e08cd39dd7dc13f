package sandbox

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
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
	idle     atomic.Bool // told protocol.LifelineIdle, not yet LifelineBusy
}

func (f *forkedLaunch) kill() { f.close.Do(func() { f.lifeline.Close() }) }

// lifelineWait bounds a write on the lifeline: one that does not go at
// once finds the fork server's init not reading (stopped, stuck).
const lifelineWait = time.Second

// tell writes b (protocol.LifelineIdle or LifelineBusy) on the lifeline,
// for the fork server's init; an error where it cannot be told (the run
// killed, its init not reading).
func (f *forkedLaunch) tell(b byte) error {
	if err := f.lifeline.SetWriteDeadline(time.Now().Add(lifelineWait)); err != nil {
		return err
	}
	_, err := f.lifeline.Write([]byte{b})
	return err
}

// sleep tells the run's init that nothing of the run can run until wake
// (see protocol.LifelineIdle): it stops counting the run's memory, and
// blocks. The caller makes sure of that: a pooled run waits for its
// snippet, a session's processes are stopped.
func (f *forkedLaunch) sleep() bool {
	if f.idle.Load() {
		return true
	}
	ok := f.tell(protocol.LifelineIdle) == nil
	f.idle.Store(ok)
	return ok
}

// wake tells the run's init, before the run goes on, that it counts the
// run again, at its pace. An error is a run that cannot go on counted.
func (f *forkedLaunch) wake() error {
	if !f.idle.Load() {
		return nil
	}
	if err := f.tell(protocol.LifelineBusy); err != nil {
		return fmt.Errorf("wake the run's init: %w", err)
	}
	f.idle.Store(false)
	return nil
}

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
