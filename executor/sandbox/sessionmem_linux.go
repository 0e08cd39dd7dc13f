package sandbox

import (
	"os"
	"path"
	"slices"
	"strconv"

	"github.com/runblock/runblock/executor/sandbox/internal/policy"
	"github.com/runblock/runblock/executor/sandbox/internal/stage"
	"github.com/runblock/runblock/internal/procstat"
	"golang.org/x/sys/unix"
)

// MemoryBytes is the memory the session's sandbox holds now, for the
// session manager's bound on all live sessions (session.MemoryReporter):
// every process of the sandbox (its init too), each by its proportional
// share of its anonymous and shared memory as the kernel sums it in its
// smaps_rollup (see stage.Proportional), and the use of its work dir and
// shared memory tmpfs. Where the namespaces are the sandbox's own, its
// processes are those of its PID namespace, as the sandbox's own /proc
// lists them (see sessionEldest); without namespaces, those of python's
// process group. Where they cannot be read (a service that may not read
// the sandbox's /proc), it is the session's memory limit.
func (s *sessionSandbox) MemoryBytes() int64 {
	if n, ok := s.memory(true, stage.Proportional); ok {
		return n
	}
	return s.p.lim.Memory
}

// held is what the session's sandbox holds as its init counts it against
// its limit (see stage.Counted: the share of each page is read only where
// what the processes hold resident is past the limit), its init aside;
// !ok where it cannot be read.
func (s *sessionSandbox) held() (int64, bool) {
	return s.memory(false, func(held int64, procs []string) (int64, bool) {
		return stage.Counted(held, procs, s.p.lim.Memory)
	})
}

// memory counts the session's sandbox with count, its init too when
// withInit.
func (s *sessionSandbox) memory(withInit bool, count func(held int64, procs []string) (int64, bool)) (int64, bool) {
	if !s.p.namespaced {
		// Only a sandbox started from scratch lacks namespaces.
		cold, ok := s.p.launch.(*coldLaunch)
		if !ok || cold.cmd.Process == nil {
			return 0, false
		}
		procs := processes("/proc", func(dir string) bool { return processGroup(dir) == cold.cmd.Process.Pid })
		if len(procs) == 0 {
			return 0, false
		}
		return count(0, procs)
	}
	root, procs := s.processes()
	if !withInit {
		procs = slices.DeleteFunc(procs, func(dir string) bool { return path.Base(dir) == "1" })
	}
	if len(procs) == 0 {
		return 0, false
	}
	var held int64
	for _, dir := range []string{policy.WorkDir, path.Join(policy.WorkDir, policy.ShmDir)} {
		var fs unix.Statfs_t
		if unix.Statfs(root+dir, &fs) == nil {
			held += int64(fs.Blocks-fs.Bfree) * fs.Bsize
		}
	}
	n, complete := count(held, procs)
	// The eldest's pid is another process's once the eldest is gone: then
	// what was read may be another's, and its namespace is not the
	// session's.
	eldest, pidNS := s.found()
	if ns, err := os.Readlink(eldest + "/ns/pid"); err != nil || ns != pidNS {
		return 0, false
	}
	return n, complete
}

// processes are the /proc/PID directories of the processes of the
// session's PID namespace, as its /proc lists them, and the root of its
// eldest process; none where they cannot be read.
func (s *sessionSandbox) processes() (root string, procs []string) {
	eldest, _ := s.found()
	if eldest == "" {
		return "", nil
	}
	root = eldest + "/root"
	return root, processes(root+"/proc", nil)
}

// found is the sandbox's eldest process (/proc/PID, as the service's /proc
// names it) and its PID namespace, once found (see sessionEldest); ""
// where it cannot be. The sandbox's /proc, mounted for that namespace,
// lists its processes, and only them, however they left their parents
// (setsid, the children of an exited thread: reparented within the
// namespace); it is reached through the eldest's root, which the snippet
// cannot change.
func (s *sessionSandbox) found() (eldest, pidNS string) {
	s.eldestMu.Lock()
	defer s.eldestMu.Unlock()
	if s.eldest == "" {
		var st unix.Stat_t
		if err := unix.Fstat(int(s.p.outR.Fd()), &st); err != nil {
			return "", ""
		}
		s.eldest, s.pidNS = sessionEldest("pipe:[" + strconv.FormatUint(st.Ino, 10) + "]")
	}
	return s.eldest, s.pidNS
}

// sessionEldest is the eldest process of the PID namespace of a process
// whose standard output is the pipe link (as /proc shows it) that is its
// ancestor, as the service's /proc names it ("/proc/PID"), and the
// namespace; "" when none is found: a cold run's init, PID 1 of the
// namespace; a forked run's python, which the fork server forked into the
// namespace of a PID 1 that is not its parent. It lists all of /proc,
// once per session: before the session's first cell only the sandbox's
// own processes hold its stdout.
func sessionEldest(link string) (eldest, pidNS string) {
	for _, dir := range processes("/proc", func(dir string) bool {
		l, err := os.Readlink(dir + "/fd/1")
		return err == nil && l == link
	}) {
		if pidNS, _ = os.Readlink(dir + "/ns/pid"); pidNS == "" {
			continue
		}
		// The eldest's parent is outside the namespace.
		for eldest = dir; ; {
			parent := "/proc/" + strconv.Itoa(parentOf(eldest))
			if ns, _ := os.Readlink(parent + "/ns/pid"); ns != pidNS {
				return eldest, pidNS
			}
			eldest = parent
		}
	}
	return "", ""
}

// processes are the PID directories of the proc mount at proc that
// match (see stage.Processes); none when proc cannot be read.
func processes(proc string, match func(dir string) bool) []string {
	procs, _ := stage.Processes(proc, match)
	return procs
}

// statField is field n (4: the parent, 5: the process group) of the stat
// file in dir, a /proc/PID directory; -1 when it cannot be read.
func statField(dir string, n int) int {
	s, err := procstat.Read(dir)
	v, ok := s.Int(n)
	if err != nil || !ok {
		return -1
	}
	return int(v)
}

// processState is the state of the process at dir (R, S, T, Z...), from
// its stat file; 0 when it cannot be read (the process is gone).
func processState(dir string) byte {
	s, _ := procstat.Read(dir)
	return s.State()
}

// parentOf is the parent of the process at dir; processGroup its process
// group.
func parentOf(dir string) int     { return statField(dir, 4) }
func processGroup(dir string) int { return statField(dir, 5) }
