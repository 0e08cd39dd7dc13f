package stage

import (
	"encoding/binary"
	"errors"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// exitWatcher tells each forked run's supervisor when python touches its
// work dir's times, as guard.py's _runblock_exit does just before python
// exits (see watch.exit). It is one inotify instance for every run of the
// fork server's init, read by one goroutine, with a watch per run's work
// dir: an instance of each run's own would hold the run's answer about 10
// ms at its close (the kernel waits for a grace period as it destroys an
// instance, where removing a watch leaves that to a worker), and live
// sessions would use up the instances a user may have (128 by default).
type exitWatcher struct {
	fd     int // the inotify instance, non-blocking
	closed int // an eventfd that close makes readable, to end serve
	done   chan struct{}
	mu     sync.Mutex
	runs   map[int32]int // a watch's descriptor: its run's eventfd
}

// newExitWatcher starts the watcher, which serves until close (the init
// never closes it: it serves as long as the init lives); nil where
// inotify cannot be used (the runs' ends are then read once python is
// dead).
func newExitWatcher() *exitWatcher {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	closed, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(fd)
		return nil
	}
	x := &exitWatcher{fd: fd, closed: closed, done: make(chan struct{}), runs: map[int32]int{}}
	go x.serve()
	return x
}

// close ends serve and closes the instance.
func (x *exitWatcher) close() {
	_, _ = unix.Write(x.closed, eventOne[:])
	<-x.done
	unix.Close(x.fd)
	unix.Close(x.closed)
}

// serve passes each touch on to its run's eventfd, until close.
func (x *exitWatcher) serve() {
	defer close(x.done)
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	fds := []unix.PollFd{{Fd: int32(x.fd), Events: unix.POLLIN}, {Fd: int32(x.closed), Events: unix.POLLIN}}
	for {
		if _, err := unix.Poll(fds, -1); err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		n, err := unix.Read(x.fd, buf)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return
		}
		for b := buf[:n]; len(b) >= unix.SizeofInotifyEvent; {
			wd := int32(binary.NativeEndian.Uint32(b))
			mask := binary.NativeEndian.Uint32(b[4:])
			next := unix.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(b[12:]))
			if next > len(b) {
				break
			}
			b = b[next:]
			if mask&unix.IN_ATTRIB == 0 {
				continue
			}
			x.mu.Lock()
			if ev, ok := x.runs[wd]; ok {
				_, _ = unix.Write(ev, eventOne[:])
			}
			x.mu.Unlock()
		}
	}
}

// eventOne is what an eventfd is written to count one event.
var eventOne = [8]byte{1}

// watch watches the work dir open at work: the returned eventfd is
// readable once its times were touched, and stop ends the watch and
// closes it. -1 (and a stop that does nothing) where x is nil or the
// watch cannot be made.
func (x *exitWatcher) watch(work int) (ev int, stop func()) {
	if x == nil {
		return -1, func() {}
	}
	ev, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return -1, func() {}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	wd, err := unix.InotifyAddWatch(x.fd, "/proc/self/fd/"+strconv.Itoa(work), unix.IN_ATTRIB|unix.IN_ONLYDIR)
	if err != nil {
		unix.Close(ev)
		return -1, func() {}
	}
	x.runs[int32(wd)] = ev
	return ev, func() {
		x.mu.Lock()
		defer x.mu.Unlock()
		delete(x.runs, int32(wd))
		_, _ = unix.InotifyRmWatch(x.fd, uint32(wd))
		unix.Close(ev)
	}
}
