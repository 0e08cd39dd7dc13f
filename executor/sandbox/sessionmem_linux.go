package sandbox

import (
	"bytes"
	"os"
	"path"
	"strconv"

	"github.com/runblock/runblock/executor/sandbox/internal/policy"
	"github.com/runblock/runblock/executor/sandbox/internal/stage"
	"golang.org/x/sys/unix"
)

// MemoryBytes is the memory the session's sandbox holds now, for the
// session manager's bound on all live sessions (session.MemoryReporter):
// every process of the sandbox (its init too), counted by the share of
// each page as the sandbox's own counter counts a run past its limit, and
// the use of its work dir and shared memory tmpfs. Where the namespaces
// are the sandbox's own, its processes are those of its PID namespace,
// found by the process that holds its stdout (once: before the first
// cell, only the sandbox's own do); without namespaces, those of python's
// process group. Where they cannot be read (a service that may not read
// the sandbox's /proc), it is the session's memory limit.
func (s *session) MemoryBytes() int64 {
	s.memMu.Lock()
	defer s.memMu.Unlock()
	if n, ok := s.memory(); ok {
		return n
	}
	return s.p.lim.Memory
}

// memory counts the session's sandbox; s.memMu is held.
func (s *session) memory() (int64, bool) {
	if !s.p.namespaced {
		// Only a sandbox started from scratch lacks namespaces.
		cold, ok := s.p.launch.(*coldLaunch)
		if !ok || cold.cmd.Process == nil {
			return 0, false
		}
		pids := processes(func(pid string) bool { return processGroup(pid) == cold.cmd.Process.Pid })
		if len(pids) == 0 {
			return 0, false
		}
		return stage.SharedMemory(0, pids)
	}
	if s.pidNS == "" {
		var st unix.Stat_t
		if err := unix.Fstat(int(s.p.outR.Fd()), &st); err != nil {
			return 0, false
		}
		s.pidNS = pidNamespaceOfPipe("pipe:[" + strconv.FormatUint(st.Ino, 10) + "]")
		if s.pidNS == "" {
			return 0, false
		}
	}
	pids := processes(func(pid string) bool {
		ns, err := os.Readlink("/proc/" + pid + "/ns/pid")
		return err == nil && ns == s.pidNS
	})
	if len(pids) == 0 {
		return 0, false
	}
	var held int64
	for _, dir := range []string{policy.WorkDir, path.Join(policy.WorkDir, policy.ShmDir)} {
		var fs unix.Statfs_t
		if unix.Statfs("/proc/"+pids[0]+"/root"+dir, &fs) == nil {
			held += int64(fs.Blocks-fs.Bfree) * fs.Bsize
		}
	}
	return stage.SharedMemory(held, pids)
}

// pidNamespaceOfPipe is the PID namespace of a process whose standard
// output is the pipe link (as /proc shows it); "" when none is found.
func pidNamespaceOfPipe(link string) string {
	for _, pid := range processes(func(pid string) bool {
		l, err := os.Readlink("/proc/" + pid + "/fd/1")
		return err == nil && l == link
	}) {
		if ns, err := os.Readlink("/proc/" + pid + "/ns/pid"); err == nil {
			return ns
		}
	}
	return ""
}

// processes are the pids of /proc that match.
func processes(match func(pid string) bool) []string {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	var pids []string
	for _, name := range names {
		if name[0] >= '1' && name[0] <= '9' && match(name) {
			pids = append(pids, name)
		}
	}
	return pids
}

// processGroup is pid's process group, from its stat file; -1 when it
// cannot be read.
func processGroup(pid string) int {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return -1
	}
	// pid (comm) state ppid pgrp ...: comm may hold anything but ')'.
	f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
	if len(f) < 3 {
		return -1
	}
	g, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return -1
	}
	return g
}
