// Package procstat reads the stat file of a process (proc(5),
// /proc/PID/stat). Its second field, the command name in parentheses,
// may itself hold spaces and parentheses, so the fields are counted from
// the last ')'.
package procstat

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// Stat is a stat file's fields from the third, the state, on: field n of
// proc(5) is Stat[n-3]. Its zero value is a stat that could not be read.
type Stat []string

// Parse reads the fields of a stat file's text; nil where it holds no
// ')'.
func Parse(text []byte) Stat {
	i := bytes.LastIndexByte(text, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(text[i+1:]))
}

// Read reads the stat file in dir, a /proc/PID directory.
func Read(dir string) (Stat, error) {
	b, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return nil, err
	}
	return Parse(b), nil
}

// Int is field n as proc(5) numbers them (4 the parent, 5 the process
// group, 14 and 15 the user and system ticks, 52 the exit code); false
// where the stat has no such field or it is no number.
func (s Stat) Int(n int) (int64, bool) {
	if n < 3 || n-3 >= len(s) {
		return 0, false
	}
	v, err := strconv.ParseInt(s[n-3], 10, 64)
	return v, err == nil
}

// State is the process's state (R, S, T, Z...); 0 where unknown.
func (s Stat) State() byte {
	if len(s) > 0 && len(s[0]) == 1 {
		return s[0][0]
	}
	return 0
}
