package stage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// Unix socket buffers are kernel memory in no process's resident set: one
// process of a run can queue gigabytes in socket pairs with a raised
// SO_SNDBUF (up to twice net.core.wmem_max each, a sysctl of the host that
// a network namespace does not own). A run's network namespace holds its
// own sockets only (AF_UNIX is the one family allowed), and sock_diag lists
// them with their memory: the supervisor adds that to the run's memory.

// Of linux/unix_diag.h.
const (
	udiagShowMeminfo = 0x20
	unixDiagMeminfo  = 5
	unixDiagMsgSize  = 16 // struct unix_diag_msg
)

// socketDiag is a NETLINK_SOCK_DIAG socket in a run's network namespace.
type socketDiag struct {
	fd  int
	seq uint32
	buf []byte
}

// openSocketDiag opens a sock_diag socket in the network namespace of the
// calling thread.
func openSocketDiag() (int, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return -1, fmt.Errorf("sock_diag socket: %w", err)
	}
	return fd, nil
}

func newSocketDiag(fd int) *socketDiag {
	return &socketDiag{fd: fd, buf: make([]byte, 64<<10)}
}

// memory is what the Unix sockets of the namespace hold: the memory
// charged to their receive and send queues and their ancillary data (a
// stream's queued data is charged to its sender only).
func (d *socketDiag) memory() (int64, error) {
	_, held, err := d.dump()
	return held, err
}

// dump lists the Unix sockets of the namespace: how many, and what they
// hold (see memory).
func (d *socketDiag) dump() (sockets int, held int64, err error) {
	d.seq++
	req := make([]byte, unix.SizeofNlMsghdr+24)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	ne.PutUint32(req[8:], d.seq)
	body := req[unix.SizeofNlMsghdr:]
	body[0] = unix.AF_UNIX
	ne.PutUint32(body[4:], ^uint32(0)) // every state
	ne.PutUint32(body[12:], udiagShowMeminfo)
	if err := unix.Sendto(d.fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, 0, fmt.Errorf("sock_diag request: %w", err)
	}
	for {
		n, _, err := unix.Recvfrom(d.fd, d.buf, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, 0, fmt.Errorf("sock_diag answer: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(d.buf[:n])
		if err != nil {
			return 0, 0, fmt.Errorf("sock_diag answer: %w", err)
		}
		for _, m := range msgs {
			if m.Header.Seq != d.seq {
				continue // what was left of an earlier dump
			}
			switch m.Header.Type {
			case unix.NLMSG_DONE:
				return sockets, held, nil
			case unix.NLMSG_ERROR:
				if len(m.Data) >= 4 {
					if errno := int32(ne.Uint32(m.Data)); errno != 0 {
						return 0, 0, fmt.Errorf("sock_diag: %w", syscall.Errno(-errno))
					}
				}
				return sockets, held, nil
			}
			sockets++
			held += socketMeminfo(m.Data)
		}
	}
}

// socketMeminfo sums the memory of one unix_diag_msg and its attributes.
func socketMeminfo(b []byte) int64 {
	if len(b) < unixDiagMsgSize {
		return 0
	}
	ne := binary.NativeEndian
	b = b[unixDiagMsgSize:]
	for len(b) >= 4 {
		l, typ := int(ne.Uint16(b)), ne.Uint16(b[2:])
		if l < 4 || l > len(b) {
			return 0
		}
		if typ == unixDiagMeminfo && l >= 4+4*unix.SK_MEMINFO_VARS {
			v := func(i int) int64 { return int64(ne.Uint32(b[4+4*i:])) }
			return v(unix.SK_MEMINFO_RMEM_ALLOC) + v(unix.SK_MEMINFO_WMEM_ALLOC) + v(unix.SK_MEMINFO_OPTMEM)
		}
		b = b[min((l+3)&^3, len(b)):]
	}
	return 0
}
