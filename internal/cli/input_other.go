//go:build !linux

package cli

import "golang.org/x/sys/unix"

// ioctlReadTermios reads a terminal's attributes: see classify.
const ioctlReadTermios = unix.TIOCGETA
