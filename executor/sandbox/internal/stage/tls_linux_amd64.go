package stage

import (
	"syscall"
	"unsafe"
)

// archGetFS is arch_prctl's ARCH_GET_FS (asm/prctl.h).
const archGetFS = 0x1003

// threadPointer is this thread's TLS base, its FS: the maker keeps the
// memory around it mapped (see makerUnmaps), as the kernel writes there
// after every switch to the thread where glibc registered its rseq area
// (cgo builds), and kills a process whose area is gone.
//
//go:norace
//go:nosplit
func threadPointer() (uintptr, bool) {
	var fs uintptr
	_, _, errno := syscall.RawSyscall6(syscall.SYS_ARCH_PRCTL, archGetFS, uintptr(unsafe.Pointer(&fs)), 0, 0, 0, 0)
	return fs, errno == 0
}
