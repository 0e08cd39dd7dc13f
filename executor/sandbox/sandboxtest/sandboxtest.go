// Package sandboxtest gives tests of real sandboxes what they share: the
// interpreters they need beyond the default one, and the links of /proc.
package sandboxtest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Python313 is the path of a Python 3.13 interpreter, which colours
// tracebacks when asked: python3.13 on PATH, or, when that is a pyenv shim
// of a version pyenv has not selected, the interpreter pyenv names for it.
// It skips the test where there is none.
func Python313(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("python3.13")
	if err != nil {
		t.Skip("no python3.13 on PATH: coloured tracebacks need Python 3.13 or later")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, cmd := range [][]string{{path, "-c", "import sys; print(sys.executable)"}, {"pyenv", "whence", "--path", "python3.13"}} {
		out, err := exec.CommandContext(ctx, cmd[0], cmd[1:]...).Output()
		if first, _, _ := strings.Cut(string(out), "\n"); err == nil && first != "" {
			return first
		}
	}
	t.Skipf("python3.13 on PATH (%s) does not run, nor does pyenv name one", path)
	return ""
}

// Readlink is the target of the symbolic link at path (a namespace's
// link in /proc, say); the test fails where it cannot be read.
func Readlink(t testing.TB, path string) string {
	t.Helper()
	l, err := os.Readlink(path)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
