package stage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// smapsShare reads the /proc/PID/smaps file at path: the memory of the
// process counted so that each page counts once in its run. A mapping
// counts its proportional share (Pss: a page mapped by n processes counts
// 1/n in each), the hugetlb pages it maps, and, where it maps a file, only
// its anonymous pages (written to a private mapping), at most its share:
// the pages of the run's work dir and shared memory tmpfs are counted by
// their use, and the other files are the read-only system's. The files of
// the kernel's own shared memory mount (shmem, the device of a memfd:
// MAP_SHARED|MAP_ANONYMOUS, memfd_create, System V shared memory) are the
// run's memory, and count by their share. found: the file lists a mapping
// (a zombie's lists none); !ok when it exists but cannot be read.
func smapsShare(path string, shmem uint64) (n int64, found, ok bool) {
	b, err := os.ReadFile(path)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) {
		return 0, false, true // gone
	}
	if err != nil {
		return 0, false, false
	}
	var kB, pss int64
	share := true // of the current mapping: it counts its whole Pss
	for line := range bytes.Lines(b) {
		f := bytes.Fields(line)
		if len(f) < 2 {
			continue
		}
		if !bytes.HasSuffix(f[0], []byte(":")) {
			// A mapping: range perms offset major:minor inode [path].
			found = true
			share = len(f) < 5 || string(f[4]) == "0" || mappingDevice(f[3]) == shmem
			continue
		}
		v, _ := strconv.ParseInt(string(f[1]), 10, 64)
		switch string(f[0]) {
		case "Pss:":
			if share {
				kB += v
			}
			pss = v
		case "Anonymous:":
			if !share {
				kB += min(v, pss)
			}
		case "Shared_Hugetlb:", "Private_Hugetlb:":
			kB += v
		}
	}
	return kB << 10, found, true
}

// mappingDevice is the device of a mapping's major:minor (hexadecimal)
// field of smaps; 0 where it cannot be read.
func mappingDevice(field []byte) uint64 {
	major, minor, ok := bytes.Cut(field, []byte(":"))
	if !ok {
		return 0
	}
	ma, err1 := strconv.ParseUint(string(major), 16, 32)
	mi, err2 := strconv.ParseUint(string(minor), 16, 32)
	if err1 != nil || err2 != nil {
		return 0
	}
	return unix.Mkdev(uint32(ma), uint32(mi))
}

// shmemDevice is the device of the kernel's internal shared memory mount,
// that of a memfd; read once per process, as a cold run's init must read
// it before its seccomp filter denies memfd_create.
var shmemDevice = sync.OnceValues(memfdDevice)

// memfdDevice is the device of a new memfd.
func memfdDevice() (uint64, error) {
	fd, err := unix.MemfdCreate("runblock-shmem", unix.MFD_CLOEXEC)
	if err != nil {
		return 0, fmt.Errorf("memfd_create: %w", err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, fmt.Errorf("stat a memfd: %w", err)
	}
	return st.Dev, nil
}
