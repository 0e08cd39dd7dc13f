// Package procstat reads the stat file of a process (proc(5),
// /proc/PID/stat), and the machine's CPU times from /proc/stat
// (CPUTimes). A process's second field, the command name in parentheses,
// may itself hold spaces and parentheses, so the fields are counted from
// the last ')'.
package procstat

import (
	"bytes"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Stat is a stat file's text from its third field, the state, on. Its
// zero value is a stat that could not be read.
type Stat string

// Parse is the stat of a stat file's text, its fields read as they are
// asked for; "" where the text holds no ')'.
func Parse(text []byte) Stat {
	i := bytes.LastIndexByte(text, ')')
	if i < 0 {
		return ""
	}
	return Stat(text[i+1:])
}

// maxStat bounds a stat file: 52 fields of at most 20 digits each, and a
// name of at most 64 bytes.
const maxStat = 2048

// Read reads the stat file in dir, a /proc/PID directory, allocating only
// what it returns: the service reads a session's at every cell's end.
func Read(dir string) (Stat, error) {
	path := dir + "/stat"
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var buf [maxStat]byte
	n, err := unix.Read(fd, buf[:])
	if err != nil {
		return "", &os.PathError{Op: "read", Path: path, Err: err}
	}
	return Parse(buf[:n]), nil
}

// File is a process's stat file held open and read again in place: a
// read at offset 0 has the kernel write the file anew, without the path
// lookup, open and close of Read. Once the process is gone, its reads
// fail. Its methods are safe to call at once, Close among them.
type File struct{ f *os.File }

// Open opens the stat file in dir, a /proc/PID directory.
func Open(dir string) (*File, error) {
	f, err := os.Open(dir + "/stat")
	if err != nil {
		return nil, err
	}
	return &File{f}, nil
}

// Read reads the stat as it is now.
func (f *File) Read() (Stat, error) {
	var buf [maxStat]byte
	n, err := f.f.ReadAt(buf[:], 0)
	if n == 0 && err != nil {
		return "", err
	}
	return Parse(buf[:n]), nil
}

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// field is field n as proc(5) numbers them; "" where the stat has none.
func (s Stat) field(n int) string {
	i := 3
	for f := range strings.FieldsSeq(string(s)) {
		if i == n {
			return f
		}
		i++
	}
	return ""
}

// Int is field n as proc(5) numbers them (4 the parent, 5 the process
// group, 14 and 15 the user and system ticks, 52 the exit code); false
// where the stat has no such field or it is no number.
func (s Stat) Int(n int) (int64, bool) {
	f := s.field(n)
	if f == "" {
		return 0, false
	}
	v, err := strconv.ParseInt(f, 10, 64)
	return v, err == nil
}

// ClockTicks is the kernel's USER_HZ, the unit of a stat's CPU times (and
// of /proc/stat's): 100 on every Linux architecture Go runs on.
const ClockTicks = 100

// CPUTicks is the CPU time the process used so far, user and system, of
// every thread, in ClockTicks (fields 14 and 15); false where the stat
// has none.
func (s Stat) CPUTicks() (int64, bool) {
	user, ok := s.Int(14)
	sys, ok2 := s.Int(15)
	return user + sys, ok && ok2
}

// State is the process's state (R, S, T, Z...); 0 where unknown.
func (s Stat) State() byte {
	if f := s.field(3); len(f) == 1 {
		return f[0]
	}
	return 0
}
