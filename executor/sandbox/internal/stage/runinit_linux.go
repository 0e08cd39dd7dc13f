package stage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A forked run's PID 1 is made by the maker, a copy of the fork server's
// init cloned once at its start: it runs no Go, only the few system calls
// of makeRunInits's requests (liveAsMaker), and each PID 1 is a clone of
// it that runs only those of liveAsRunInit. A PID 1 then costs a run a
// copy of the page tables of this small process, which writes nothing
// after its clones, and not one of the fork server's interpreter (whose
// clone, page faults and exit were about a fifth of what the pythons of
// pre-forked HumanEval programs took), nor the page faults and TLB
// flushes that every clone would cost the init's own threads. The fork
// server forks python into the PID 1's namespaces (protocol.ZygoteInit).

// runInit is a run's PID 1, made ahead of its run.
type runInit struct {
	pid   int
	pidfd int
}

// initsAhead is how many PID 1s the fork server's init keeps made ahead
// of the runs' requests.
const initsAhead = 2

// startMaker clones this process into the maker of the runs' PID 1s, whose
// namespaces are those of flags, and returns the init's end of its socket
// and the maker's pid. It must run before the init holds anything the
// maker may not: the maker closes every descriptor but its socket, and
// holds a copy of the init's memory as it was.
func startMaker(flags uintptr) (conn, pid int, err error) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, 0, fmt.Errorf("the maker's socket: %w", err)
	}
	planMakerUnmaps()
	runtime.LockOSThread() // its signal mask is changed across the clone
	maker, errno := cloneMaker(pair[1], flags)
	runtime.UnlockOSThread()
	unix.Close(pair[1])
	if errno != 0 {
		unix.Close(pair[0])
		return -1, 0, fmt.Errorf("start the maker of the runs' PID 1s: %w", errno)
	}
	return pair[0], int(maker), nil
}

// makeRunInits asks the maker (pid, its socket conn) for PID 1s ahead of
// the runs' requests, and sends each on inits. A request takes a network
// namespace from nets where one is there (see keepNetwork), which it
// closes once sent. Once a PID 1 cannot be made it kills the maker, which
// ends the fork server's init (the service then starts another fork
// server), and closes inits.
func makeRunInits(inits chan<- runInit, conn, pid int, nets <-chan int) {
	defer close(inits)
	defer func() { _ = unix.Kill(pid, unix.SIGKILL) }()
	var b [8]byte
	oob := make([]byte, unix.CmsgSpace(4))
	for {
		var rights []byte
		ns := -1
		select {
		case ns = <-nets:
			rights = unix.UnixRights(ns)
		default:
		}
		err := unix.Sendmsg(conn, []byte{1}, rights, nil, unix.MSG_NOSIGNAL)
		if ns >= 0 {
			unix.Close(ns)
		}
		if err != nil {
			return
		}
		n, oobn, _, _, err := unix.Recvmsg(conn, b[:], oob, unix.MSG_CMSG_CLOEXEC)
		for errors.Is(err, unix.EINTR) {
			n, oobn, _, _, err = unix.Recvmsg(conn, b[:], oob, unix.MSG_CMSG_CLOEXEC)
		}
		if err != nil || n != len(b) {
			return
		}
		fds := receivedFDs(oob[:oobn])
		made := int(int64(binary.NativeEndian.Uint64(b[:])))
		if made <= 0 || len(fds) != 1 {
			for _, fd := range fds {
				unix.Close(fd)
			}
			return
		}
		inits <- runInit{pid: made, pidfd: fds[0]}
	}
}

// cloneMaker clones this thread into a new process, the maker, which runs
// liveAsMaker with its end of the socket conn. The child is a copy of one
// thread of a Go program whose runtime it must not enter: it runs no code
// that may grow its stack, allocate or be instrumented, and takes no
// signal (they are blocked across the clone, as syscall.ForkExec does, and
// stay blocked in the maker and in every PID 1 it makes).
//
//go:norace
//go:nosplit
func cloneMaker(conn int, flags uintptr) (pid uintptr, errno syscall.Errno) {
	all, old := ^uint64(0), uint64(0)
	_, _, _ = syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, sigSetMask, uintptr(unsafe.Pointer(&all)), uintptr(unsafe.Pointer(&old)), 8, 0, 0)
	pid, _, errno = syscall.RawSyscall6(syscall.SYS_CLONE, uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
	if pid == 0 && errno == 0 {
		// Nothing of the init's memory but this stack and the thread's
		// TLS (see makerUnmaps).
		if tls, ok := threadPointer(); ok {
			unmapAround(uintptr(unsafe.Pointer(&all)), tls)
		}
		liveAsMaker(conn, flags)
	}
	_, _, _ = syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, sigSetMask, uintptr(unsafe.Pointer(&old)), 0, 8, 0, 0)
	return pid, errno
}

// makerUnmaps are the writable private mappings of the init as it clones
// the maker (makerUnmapCount of them), which the maker unmaps as it
// starts: what a clone copies is the page tables of the pages its parent
// wrote, and what its end tears down; with the init's heap, data and
// stacks (about 2.8 MiB, 700 pages), the maker's clone of each run's PID 1
// took about 3 % of the machine's CPU under pre-forked HumanEval at
// concurrency 2, and the PID 1's end more. The maker runs only
// liveAsMaker and liveAsRunInit, whose code is the binary's text, mapped
// from its file, and whose data is their frames on this goroutine's
// stack: makerKept either side of them stays mapped, as does makerKept
// either side of the thread's TLS (threadPointer). makerUnmaps is a page
// of its own, so that one mapping holds it whole, and that mapping comes
// last: nothing reads the list once it is unmapped. planMakerUnmaps
// fills them in before the clone; where it cannot, none.
var (
	makerUnmaps     *[makerPage / 16][2]uintptr
	makerUnmapCount int
)

// makerKept is how much of the maker's memory stays mapped either side
// of its frame and of its TLS: far more than the frames of liveAsMaker
// and of the nosplit calls under it, or glibc's thread control block.
const makerKept = 64 << 10

// makerPage is the page size munmap's bounds are aligned to; Linux's on
// amd64 and arm64 (as this package's kernel numbers assume) is at least
// this, and the addresses in /proc/self/maps are aligned to it.
const makerPage = 4 << 10

// planMakerUnmaps fills in makerUnmaps from /proc/self/maps: every private
// mapping this process can write (rw-p), anonymous or of a file's data,
// but the main thread's stack, which holds the arguments and environment
// that ps and /proc/PID/cmdline show of the maker and its PID 1s.
func planMakerUnmaps() {
	makerUnmapCount = 0
	if makerUnmaps == nil {
		page, err := unix.Mmap(-1, 0, makerPage, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return
		}
		makerUnmaps = (*[makerPage / 16][2]uintptr)(unsafe.Pointer(&page[0]))
	}
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return
	}
	self := uintptr(unsafe.Pointer(makerUnmaps))
	var last [2]uintptr
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 2 || f[1] != "rw-p" || len(f) == 6 && f[5] == "[stack]" {
			continue
		}
		los, his, _ := strings.Cut(f[0], "-")
		lo, err1 := strconv.ParseUint(los, 16, 64)
		hi, err2 := strconv.ParseUint(his, 16, 64)
		if err1 != nil || err2 != nil || lo >= hi {
			continue
		}
		r := [2]uintptr{uintptr(lo), uintptr(hi)}
		switch {
		case r[0] <= self && self < r[1]:
			last = r
		case makerUnmapCount < len(makerUnmaps)-1:
			makerUnmaps[makerUnmapCount] = r
			makerUnmapCount++
		}
	}
	if last[1] != 0 {
		makerUnmaps[makerUnmapCount] = last
		makerUnmapCount++
	}
}

// unmapAround unmaps makerUnmaps but makerKept either side of the
// addresses x and y.
//
//go:norace
//go:nosplit
func unmapAround(x, y uintptr) {
	if x > y {
		x, y = y, x
	}
	xlo, xhi := (x-makerKept)&^(makerPage-1), (x+makerKept)&^(makerPage-1)
	ylo, yhi := (y-makerKept)&^(makerPage-1), (y+makerKept)&^(makerPage-1)
	// Read once: the variables may be in a mapping unmapped before the
	// list's.
	list, n := makerUnmaps, min(makerUnmapCount, len(makerUnmaps))
	if list == nil {
		return
	}
	for i := range n {
		lo, hi := list[i][0], list[i][1]
		unmap(lo, min(hi, xlo))
		unmap(max(lo, xhi), min(hi, ylo))
		unmap(max(lo, yhi), hi)
	}
}

// unmap unmaps the pages from lo up to hi, if any.
//
//go:norace
//go:nosplit
func unmap(lo, hi uintptr) {
	if hi > lo {
		_, _, _ = syscall.RawSyscall6(syscall.SYS_MUNMAP, lo, hi-lo, 0, 0, 0, 0)
	}
}

// sigSetMask is rt_sigprocmask's SIG_SETMASK.
const sigSetMask = 2

// makerNoCloseRange is the maker's exit status where close_range failed.
const makerNoCloseRange = 3

// rawMsghdr and rawIovec are the kernel's struct msghdr and iovec on a
// 64-bit machine, with addresses as integers (no pointer the maker writes
// is the runtime's to know of).
type rawMsghdr struct {
	name       uintptr
	namelen    uint32
	_          uint32
	iov        uintptr
	iovlen     uint64
	control    uintptr
	controllen uint64
	flags      int32
	_          uint32
}

type rawIovec struct {
	base uintptr
	len  uint64
}

// liveAsMaker is the whole life of the maker: for each byte the init
// writes on conn, it moves into the network namespace that comes with the
// byte (one an earlier run left, see keepNetwork) or, without one, into a
// fresh one (made by it, which belongs to the fork server's user
// namespace, not the run's: the run is given no capability in it at any
// time), clones a PID 1 into it with the namespaces of flags, and answers
// with the PID 1's pid (in the init's PID namespace; a negative errno
// where it could not) and a pidfd of it. It ends with the init (or once
// the init closes conn); the kernel reaps the PID 1s.
//
//go:norace
//go:nosplit
func liveAsMaker(conn int, flags uintptr) {
	ignore := [4]uintptr{1} // struct sigaction: SIG_IGN, no flags, restorer or mask
	_, _, _ = syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(syscall.SIGCHLD), uintptr(unsafe.Pointer(&ignore)), 0, 8, 0, 0)
	_, _, _ = syscall.RawSyscall6(syscall.SYS_PRCTL, unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0, 0)
	// Nothing of the init's but conn (close_range: Linux 5.9; without it
	// the maker ends, and with it the fork server, whose runs then start
	// from scratch).
	var below syscall.Errno
	if conn > 0 {
		_, _, below = syscall.RawSyscall6(unix.SYS_CLOSE_RANGE, 0, uintptr(conn-1), 0, 0, 0, 0)
	}
	_, _, above := syscall.RawSyscall6(unix.SYS_CLOSE_RANGE, uintptr(conn+1), ^uintptr(0), 0, 0, 0, 0)
	if below != 0 || above != 0 {
		_, _, _ = syscall.RawSyscall6(syscall.SYS_EXIT_GROUP, makerNoCloseRange, 0, 0, 0, 0, 0)
	}
	var req [1]byte
	var reply int64
	var in, cmsg [24]byte // CmsgSpace(4): a struct cmsghdr and one descriptor
	reqIov := rawIovec{base: uintptr(unsafe.Pointer(&req[0])), len: 1}
	iov := rawIovec{base: uintptr(unsafe.Pointer(&reply)), len: 8}
	for {
		// The kernel sets ask.controllen to what it wrote in in: 0
		// without a descriptor.
		ask := rawMsghdr{iov: uintptr(unsafe.Pointer(&reqIov)), iovlen: 1, control: uintptr(unsafe.Pointer(&in[0])), controllen: uint64(len(in))}
		n, _, errno := syscall.RawSyscall6(syscall.SYS_RECVMSG, uintptr(conn), uintptr(unsafe.Pointer(&ask)), 0, 0, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if n != 1 || errno != 0 {
			_, _, _ = syscall.RawSyscall6(syscall.SYS_EXIT_GROUP, 0, 0, 0, 0, 0, 0)
		}
		msg := rawMsghdr{iov: uintptr(unsafe.Pointer(&iov)), iovlen: 1}
		pidfd := ^uintptr(0)
		joined := false
		if ask.controllen >= 20 && *(*uint64)(unsafe.Pointer(&in[0])) == 20 && *(*int32)(unsafe.Pointer(&in[8])) == unix.SOL_SOCKET && *(*int32)(unsafe.Pointer(&in[12])) == unix.SCM_RIGHTS {
			// A network namespace an earlier run left (keepNetwork).
			ns := uintptr(*(*int32)(unsafe.Pointer(&in[16])))
			_, _, errno = syscall.RawSyscall6(unix.SYS_SETNS, ns, unix.CLONE_NEWNET, 0, 0, 0, 0)
			joined = errno == 0
			_, _, _ = syscall.RawSyscall6(syscall.SYS_CLOSE, ns, 0, 0, 0, 0, 0)
		}
		errno = 0
		if !joined {
			_, _, errno = syscall.RawSyscall6(syscall.SYS_UNSHARE, unix.CLONE_NEWNET, 0, 0, 0, 0, 0)
		}
		pid := uintptr(0)
		if errno == 0 {
			pid, _, errno = syscall.RawSyscall6(syscall.SYS_CLONE, flags|uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
			if pid == 0 && errno == 0 {
				liveAsRunInit()
			}
		}
		if errno == 0 {
			pidfd, _, errno = syscall.RawSyscall6(unix.SYS_PIDFD_OPEN, pid, 0, 0, 0, 0, 0)
		}
		if errno != 0 {
			reply = -int64(errno)
		} else {
			reply = int64(pid)
			*(*uint64)(unsafe.Pointer(&cmsg[0])) = 20 // CmsgLen(4)
			*(*int32)(unsafe.Pointer(&cmsg[8])) = unix.SOL_SOCKET
			*(*int32)(unsafe.Pointer(&cmsg[12])) = unix.SCM_RIGHTS
			*(*int32)(unsafe.Pointer(&cmsg[16])) = int32(pidfd)
			msg.control, msg.controllen = uintptr(unsafe.Pointer(&cmsg[0])), uint64(len(cmsg))
		}
		_, _, _ = syscall.RawSyscall6(syscall.SYS_SENDMSG, uintptr(conn), uintptr(unsafe.Pointer(&msg)), 0, 0, 0, 0)
		if errno == 0 {
			_, _, _ = syscall.RawSyscall6(syscall.SYS_CLOSE, pidfd, 0, 0, 0, 0, 0)
		}
	}
}

// liveAsRunInit is the whole life of a run's PID 1: the kernel reaps each
// of its children (the run's orphans) at once (SIGCHLD is ignored, as in
// the maker), it lets nothing of the run read it (not dumpable), holds no
// descriptor, and waits, every signal blocked, for the fork server's init
// to kill it, which ends the run.
//
//go:norace
//go:nosplit
func liveAsRunInit() {
	_, _, _ = syscall.RawSyscall6(syscall.SYS_PRCTL, unix.PR_SET_DUMPABLE, 0, 0, 0, 0, 0)
	_, _, _ = syscall.RawSyscall6(unix.SYS_CLOSE_RANGE, 0, ^uintptr(0), 0, 0, 0, 0)
	for {
		_, _, _ = syscall.RawSyscall6(syscall.SYS_PPOLL, 0, 0, 0, 0, 0, 0)
	}
}

// idMaps is how a forked run's user namespace maps ids: its root to this
// init's, and uid (with its group) to base plus the run's slot.
type idMaps struct {
	uid, base int
}

// write maps the ids of pid's user namespace for a run of slot (-1: root
// alone, where the service is not root).
func (m idMaps) write(pid, slot int) error {
	ids := "0 0 1\n"
	if slot >= 0 {
		ids += fmt.Sprintf("%d %d 1\n", m.uid, m.base+slot)
	}
	for _, name := range []string{"uid_map", "gid_map"} {
		if err := os.WriteFile(fmt.Sprintf("/proc/%d/%s", pid, name), []byte(ids), 0); err != nil {
			return fmt.Errorf("map the run's ids: %w", err)
		}
	}
	return nil
}

// askReap tells the fork server (on zygote) that the python of the run
// whose PID 1 is init is its to reap: the init has read how python ended,
// or never will. The run's PID 1 ends only once python is reaped.
func askReap(zygote, init int) {
	_, _ = unix.Write(zygote, binary.LittleEndian.AppendUint64(nil, uint64(init)))
}
