package stage

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/runblock/runblock/executor/sandbox/internal/policy"
	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
	"golang.org/x/sys/unix"
)

// The one supervisor of a run, started from scratch or forked: it lets
// python run the snippet, accounts the run's memory (one counter for
// both, see counter), kills the run past its limit, and reads how python
// ended. What differs between the two paths is where the supervisor
// stands: a cold run's init is python's parent, PID 1 of the run's
// namespaces, and reaps it (coldRun); the fork server's init stands
// outside the run's namespaces, reads python's end from its stat file (as
// python exits, see watch.exit, or from its zombie, which the fork server
// reaps once asked) and kills the run through the run's own PID 1
// (forkedRun).

// A supervised run is what the supervisor does differently on the two
// paths.
type supervised interface {
	// end reaps what the supervisor must reap, and gives python's wait
	// status once python ended (exited: python's pidfd says it did).
	end(exited bool) (ws unix.WaitStatus, ended bool, err error)
	// kill ends every process of the run (but the supervisor), and
	// returns once they are dead.
	kill()
	// alone reports whether pids, the processes of the run (its init
	// aside) a count found after python ended, are python alone: nothing
	// of the run can then change its work dir or hold memory any more,
	// and signal may end it without waiting for its teardown.
	alone(pids []string) bool
	// signal sends every process of the run its kill, and returns.
	signal()
	// exiting reports whether python has begun its exit, so that end
	// reads how it ended (see watch.exit), before the kernel has freed
	// its memory.
	exiting() bool
}

// errLifeline: the service closed a run's lifeline, to kill it.
var errLifeline = errors.New("killed by the service")

// lifeline reads what the service wrote on a run's lifeline fd, which
// poll found ready with revents: whether the run is idle after it (the
// last of protocol.LifelineIdle and LifelineBusy read; idle as it was
// when neither came), or errLifeline when the service closed it, whatever
// it wrote before: that close ends the run.
func lifeline(fd int, revents int16, idle bool) (bool, error) {
	if revents&unix.POLLHUP != 0 {
		return idle, errLifeline
	}
	var b [64]byte
	n, err := unix.Read(fd, b[:])
	if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
		return idle, nil
	}
	if err != nil || n == 0 {
		return idle, errLifeline
	}
	for _, c := range b[:n] {
		switch c {
		case protocol.LifelineIdle:
			idle = true
		case protocol.LifelineBusy:
			idle = false
		}
	}
	return idle, nil
}

// watch is what the supervisor watches of a run.
type watch struct {
	pidfd    int // python's
	lifeline int // closed by the service to kill the run, or told it idles (see lifeline); -1: none
	// idle bounds a wait with nothing to count, in milliseconds (-1:
	// none): a cold run's init reaps the run's orphans at least so often.
	idle   int
	memory *counter
	limit  int64 // the run's memory limit; 0: not counted here (a cgroup's)
	// exit is a descriptor that python's touch of its work dir as it
	// exits makes ready (guard.py's _runblock_exit; an eventfd of the
	// init's exitWatcher; -1: none). The kernel frees a process's memory
	// before its end shows: about half of a pre-forked print('hello').
	// Ready, it asks the run whether python is exiting, and reads how
	// python ended without waiting for that. Where python is not (the
	// snippet touched the work dir itself), it is watched no more:
	// python's end is then read once it is dead.
	exit int
	// children is a descriptor that every SIGCHLD makes ready (a cold
	// run's init, the parent of python and of the run's orphans: see
	// childEnds; -1: none). Ready, the run reaps what ended.
	children int
}

// supervise lets python run the snippet (start, when not nil, lets it
// begin), waits for python to end, accounting the run's memory, then
// kills the run and returns how python ended; past the memory limit it
// kills the run at once, with the memory verdict. When the lifeline
// closes it kills the run and returns errLifeline. While the service says
// the run is idle (protocol.LifelineIdle: nothing of it can run) it counts
// nothing and blocks until python ends or the lifeline speaks again.
func (w watch) supervise(r supervised, start func() error) (protocol.InitStatus, error) {
	var st protocol.InitStatus
	var idle bool
	wait := w.idle
	if w.limit > 0 {
		// Counted once before the snippet exists, so that every run,
		// however short, is counted while python lives (the canary's
		// peak is how the start-up check knows the count works).
		st.Peak, _, _ = w.memory.count(w.limit, nil)
		wait = memoryWait(w.limit, st.Peak)
	}
	if start != nil {
		if err := start(); err != nil {
			r.kill()
			return st, err
		}
	}
	// Their order: python's pidfd, the lifeline, the exit watch, the
	// children's ends; a descriptor of -1 is not polled.
	fds := []unix.PollFd{{Fd: int32(w.pidfd), Events: unix.POLLIN}, {Fd: int32(w.lifeline), Events: unix.POLLIN}, {Fd: int32(w.exit), Events: unix.POLLIN},
		{Fd: int32(w.children), Events: unix.POLLIN}}
	// Set only as the tmpfs check kills the run, which then ends.
	var over atomic.Int64
	walking := w.checkTmpfs(r, &over)
	// due is when the next count (or, with no count here, the next wait
	// for orphans) is due: what wakes the wait before it does not put it
	// off.
	later := func() time.Time { return time.Now().Add(time.Duration(wait) * time.Millisecond) }
	due := later()
	for {
		timeout := -1
		if !idle && wait >= 0 {
			timeout = max(0, int((time.Until(due)+time.Millisecond-1)/time.Millisecond))
		}
		_, err := unix.Poll(fds, timeout)
		if err != nil && !errors.Is(err, unix.EINTR) {
			r.kill()
			return st, fmt.Errorf("poll: %w", err)
		}
		if fds[1].Revents != 0 {
			// A run that goes on is counted at its pace, not at once:
			// nothing of it ran while it idled, and what it held then was
			// counted (see protocol.LifelineBusy).
			if idle, err = lifeline(w.lifeline, fds[1].Revents, idle); err != nil {
				r.kill()
				return st, err
			}
			due = later()
		}
		if fds[3].Revents != 0 {
			drain(w.children)
		}
		exited := fds[0].Revents != 0
		if fds[2].Revents != 0 {
			drain(w.exit)
			if exited = exited || r.exiting(); !exited {
				fds[2].Fd = -1
			}
		}
		ws, ended, err := r.end(exited)
		if err != nil {
			r.kill()
			return st, err
		}
		if ended {
			var used int64
			if w.limit > 0 {
				used, _, _ = w.memory.count(w.limit, nil) // before the kill: what the rest of the run still holds
			}
			if w.limit > 0 && r.alone(w.memory.seen) {
				// The report goes out while the run's init and
				// namespaces are torn down, not after.
				r.signal()
			} else {
				r.kill()
			}
			setEnd(&st, ws)
			if w.limit > 0 {
				countEnd(&st, used, w.limit)
			}
			return st, nil
		}
		if idle || time.Now().Before(due) {
			continue
		}
		if w.limit == 0 {
			due = later()
			continue
		}
		used, complete, recounted := w.memory.count(w.limit, walking)
		used = max(used, over.Load())
		st.Peak = max(st.Peak, used)
		if used > w.limit {
			st.Memory = true
			st.Exited, st.Signal = false, int(unix.SIGKILL)
			r.kill()
			return st, nil
		}
		wait = memoryWait(w.limit, used)
		if !complete || recounted {
			// A process changing its uid, or a run spared by the recount
			// (see countRun): look again soon.
			wait = int(policy.MemoryPollMin.Milliseconds())
		}
		due = later()
	}
}

// checkTmpfs is what runs beside a count by share (see countRun), which
// walks the page tables of the run's processes: it takes long where a
// process maps much of the run's tmpfs, and the process may fill the
// tmpfs meanwhile, past the limit and up to the tmpfs's size, where a
// page fault is a SIGBUS (policy.ShmDir): on a loaded machine, a snippet
// filled 45 MiB of shared memory during one such count. So another thread
// reads the tmpfs's use every MemoryPollMin while the walk goes on; past
// limit, it kills the run and leaves what it read in over.
func (w watch) checkTmpfs(r supervised, over *atomic.Int64) func() (done func()) {
	return func() func() {
		stop, stopped := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(stopped)
			tick := time.NewTicker(policy.MemoryPollMin)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if n := w.memory.tmpfs(); n > w.limit {
						over.Store(n)
						r.signal()
						return
					}
				}
			}
		}()
		return func() {
			close(stop)
			<-stopped
		}
	}
}

// drain reads what is queued on fd, a non-blocking descriptor whose
// content is not needed (the exit watch's eventfd).
func drain(fd int) {
	var b [4096]byte
	for {
		if n, err := unix.Read(fd, b[:]); n <= 0 && !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// setEnd records how python ended.
func setEnd(st *protocol.InitStatus, ws unix.WaitStatus) {
	st.Exited, st.ExitCode = ws.Exited(), ws.ExitStatus()
	if ws.Signaled() {
		st.Signal = int(ws.Signal())
	}
}

// countEnd records the count of what a run holds once python ended (its
// work dir and shared memory tmpfs, and what its other processes still
// hold, before they are killed): past limit, the run gets the memory
// verdict though python exited on its own. A snippet that goes past its
// limit and exits before the next count must not succeed.
func countEnd(st *protocol.InitStatus, used, limit int64) {
	st.Peak = max(st.Peak, used)
	st.Memory = used > limit
}

// memoryWait is how long the run may go unaccounted, in milliseconds:
// until it could have allocated what is left at policy.MemoryRate.
func memoryWait(limit, used int64) int {
	next := time.Duration(float64(limit-used) / float64(policy.MemoryRate) * float64(time.Second))
	return int(min(max(next, policy.MemoryPollMin), policy.MemoryPoll).Milliseconds())
}
