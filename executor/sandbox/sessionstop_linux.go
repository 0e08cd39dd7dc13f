package sandbox

import (
	"path"
	"strconv"

	"golang.org/x/sys/unix"
)

// stopRounds bounds how often hold lists the session's processes again
// for ones a process forked before its stop reached it.
const stopRounds = 16

// hold stops (unix.SIGSTOP) or continues (unix.SIGCONT) every process of
// the session's sandbox but its init: between cells nothing the session
// left running (a thread, a child, a daemon in a session of its own) uses
// the CPU, and the next cell continues them before it is sent. SIGSTOP
// cannot be caught, blocked or ignored, and stops every thread of a
// process; a process stopped within a write finishes it once continued.
// The init (PID 1 of the sandbox, which supervises it or holds its
// namespaces) is never stopped. Where the namespaces are the sandbox's
// own, the processes are those of its PID namespace (see processes),
// signalled through their directories of the sandbox's /proc; without
// them, those of python's process group. It reports whether every
// process was signalled: false where they cannot be found, or where a
// stop found new processes still after stopRounds. s.mu is held.
func (s *sessionSandbox) hold(sig unix.Signal) bool {
	list, send := s.holdable()
	if list == nil {
		return false
	}
	done := map[string]bool{}
	for range stopRounds {
		more := false
		for _, dir := range list() {
			if done[dir] {
				continue
			}
			done[dir] = true
			more = true
			send(dir, sig)
		}
		// A process continued cannot have forked a child that a stop
		// must reach: continuing takes one round.
		if !more || sig != unix.SIGSTOP {
			return true
		}
	}
	return false
}

// holdable lists the /proc/PID directories of the session's processes
// that hold stops, and sends one of them a signal; nil where they cannot
// be found.
func (s *sessionSandbox) holdable() (list func() []string, send func(dir string, sig unix.Signal)) {
	if !s.p.namespaced {
		cold, ok := s.p.launch.(*coldLaunch)
		if !ok || cold.cmd.Process == nil {
			return nil, nil
		}
		group := cold.cmd.Process.Pid
		return func() []string {
				return processes("/proc", func(dir string) bool { return processGroup(dir) == group })
			}, func(dir string, sig unix.Signal) {
				if pid, err := strconv.Atoi(path.Base(dir)); err == nil {
					_ = unix.Kill(pid, sig)
				}
			}
	}
	eldest, _ := s.found()
	if eldest == "" {
		return nil, nil
	}
	proc := eldest + "/root/proc"
	return func() []string {
		return processes(proc, func(dir string) bool { return path.Base(dir) != "1" })
	}, signalDir
}

// signalDir sends sig to the process whose /proc/PID directory is dir, in
// any mount of proc (pidfd_send_signal takes such a directory as a
// pidfd): the sandbox's /proc names its processes by their pids in its
// own namespace, which are not the host's.
func signalDir(dir string, sig unix.Signal) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return // gone
	}
	defer unix.Close(fd)
	_ = unix.PidfdSendSignal(fd, sig, nil, 0)
}

// pause stops the session's processes once its cell ended (and from its
// start until its first cell), and reports whether all are stopped;
// resume continues them before the next cell is sent (see hold).
func (s *sessionSandbox) pause() bool { return s.hold(unix.SIGSTOP) }
func (s *sessionSandbox) resume()     { s.hold(unix.SIGCONT) }

// running reports whether a process of the session's sandbox but its init
// is still there and not a zombie (as python is while the session lives,
// stopped or not); true where they cannot be listed. Once the init killed
// them (its memory count beside a cell's end) it is false, until the init
// has reaped them.
func (s *sessionSandbox) running() bool {
	list, _ := s.holdable()
	if list == nil {
		return true
	}
	for _, dir := range list() {
		if st := processState(dir); st != 0 && st != 'Z' && st != 'X' {
			return true
		}
	}
	return false
}
