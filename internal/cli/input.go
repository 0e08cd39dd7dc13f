package cli

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// input is what serve's standard input is, which decides what the console
// does with it.
type input int

const (
	// inputStream is a pipe, a regular file, a socket or a reader that is
	// no file: the console reads messages until its end.
	inputStream input = iota
	// inputTerminal is someone at a terminal: a banner, a prompt, and
	// Ctrl-C cancels the run.
	inputTerminal
	// inputNone is any other device, such as the /dev/null of a container
	// started without -i: nothing will ever come.
	inputNone
)

// classify tells what r is. A character device is a terminal only when it
// answers the terminal's ioctl: /dev/null is a character device too.
func classify(r io.Reader) input {
	f, ok := r.(*os.File)
	if !ok {
		return inputStream
	}
	st, err := f.Stat()
	if err != nil {
		return inputNone
	}
	switch m := st.Mode(); {
	case m.IsRegular(), m&(os.ModeNamedPipe|os.ModeSocket) != 0:
		return inputStream
	case m&os.ModeCharDevice != 0:
		if _, err := unix.IoctlGetTermios(int(f.Fd()), ioctlReadTermios); err == nil {
			return inputTerminal
		}
	}
	return inputNone
}
