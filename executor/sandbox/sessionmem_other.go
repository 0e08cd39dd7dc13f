//go:build !linux

package sandbox

// MemoryBytes is the session's memory limit: without Linux its sandbox's
// memory is not read (see sessionmem_linux.go).
func (s *sessionSandbox) MemoryBytes() int64 { return s.p.lim.Memory }

// pause and resume do nothing without Linux (see sessionstop_linux.go).
func (s *sessionSandbox) pause() bool { return false }
func (s *sessionSandbox) resume()     {}

// held is not read without Linux.
func (s *sessionSandbox) held() (int64, bool) { return 0, false }

// running is true without Linux: no init counts beside a cell's end.
func (s *sessionSandbox) running() bool { return true }
