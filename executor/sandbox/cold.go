package sandbox

import (
	"context"
	"fmt"
	"os/exec"
	"syscall"

	"github.com/runblock/runblock/executor"
	"golang.org/x/sys/unix"
)

// coldLaunch is a sandbox started from scratch: its init is a process this
// one started, which is killed by canceling its command's context and
// known to have ended when cmd.Wait returns.
type coldLaunch struct {
	cmd    *exec.Cmd
	cancel context.CancelFunc
	err    error // cmd.Wait's, once the channel start returned is closed
}

// start starts the init; the channel is closed once it was waited for.
func (c *coldLaunch) start() (<-chan struct{}, error) {
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	waited := make(chan struct{})
	go func() {
		c.err = c.cmd.Wait()
		close(waited)
	}()
	return waited, nil
}

func (c *coldLaunch) kill() {
	if c.cancel != nil {
		c.cancel()
	}
}

// unreported reads how python ended from the wait status: without
// namespaces it is the sandbox's process; with them its init, killed (by
// us) before it could report.
func (c *coldLaunch) unreported(res *executor.Result) {
	state := c.cmd.ProcessState
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.ExitCode = -1
		res.Signal = unix.SignalName(ws.Signal())
		return
	}
	res.ExitCode = state.ExitCode()
}

func (c *coldLaunch) setupError(stderr string, read bool) error {
	switch {
	case !read:
		return fmt.Errorf("sandbox ended before it was ready: %v", c.err)
	case stderr != "":
		return fmt.Errorf("%v: %s", c.err, stderr)
	}
	return fmt.Errorf("%v", c.err)
}

func (*coldLaunch) release() {}
