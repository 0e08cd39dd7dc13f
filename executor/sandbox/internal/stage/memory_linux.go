package stage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// counter is the one memory counter of a run, cold or forked: what the run
// holds is the memory of every thread group of its PID namespace but its
// init's (see countRun), the use of its work dir and shared memory tmpfs,
// and the buffers of its network namespace's sockets.
type counter struct {
	diag      *socketDiag // of the run's network namespace
	work, shm int         // the run's work dir and shared memory tmpfs, open
	// proc is the run's own /proc, mounted for its PID namespace, which
	// lists the processes of that namespace and only them, however they
	// left their parents: a cold run's init's /proc, or a forked run's
	// (see superviseForked). Its 1, the run's init, is not counted.
	proc string
	// seen are the processes of the run (its init aside) the last count
	// found, by their pids in the run's PID namespace.
	seen []string
}

// count is what the run holds, and whether every process could be read
// (see countRun: past limit, the run is counted again by the share of
// each page, beside walking, which is called then and the function it
// returns once that count is done; nil: nothing beside).
func (c *counter) count(limit int64, walking func() (done func())) (total int64, complete, recounted bool) {
	held, _ := c.diag.memory() // 0 where the kernel has no unix_diag
	held += c.tmpfs()
	procs, err := Processes(c.proc, func(dir string) bool { return dir[len(c.proc)+1:] != "1" })
	if err != nil {
		return held, false, false
	}
	c.seen = c.seen[:0]
	for _, dir := range procs {
		c.seen = append(c.seen, dir[len(c.proc)+1:])
	}
	return countRun(held, procs, limit, walking)
}

// Processes are the PID directories of the proc mount at proc
// (proc/PID), or the thread directories of a process's task directory,
// that match; all of them when match is nil; an error where
// proc cannot be opened (a read that fails ends the listing). The
// directory is read into a buffer here, and only the PID directories'
// names are kept: a run's init lists its processes at every count, and
// the service a session's several times at every cell's end, and what a
// listing allocates is their garbage.
func Processes(proc string, match func(dir string) bool) ([]string, error) {
	fd, err := unix.Open(proc, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: proc, Err: err}
	}
	defer unix.Close(fd)
	var procs []string
	var buf [8192]byte
	for {
		n, err := unix.Getdents(fd, buf[:])
		if err != nil || n <= 0 {
			return procs, nil
		}
		for b := buf[:n]; len(b) >= direntName; {
			// linux_dirent64: its length at 16, its name at 19, ended by a NUL.
			reclen := int(binary.NativeEndian.Uint16(b[16:]))
			if reclen < direntName || reclen > len(b) {
				return procs, nil
			}
			name := b[direntName:reclen]
			name = name[:max(bytes.IndexByte(name, 0), 0)]
			b = b[reclen:]
			if len(name) == 0 || name[0] < '1' || name[0] > '9' {
				continue
			}
			if dir := proc + "/" + string(name); match == nil || match(dir) {
				procs = append(procs, dir)
			}
		}
	}
}

// direntName is where a linux_dirent64's name starts.
const direntName = 19

// tmpfs is the use of the run's work dir and shared memory tmpfs: a
// floor of what the run holds, read in two system calls.
func (c *counter) tmpfs() int64 {
	var n int64
	for _, fd := range []int{c.work, c.shm} {
		var fs unix.Statfs_t
		if unix.Fstatfs(fd, &fs) == nil {
			n += int64(fs.Blocks-fs.Bfree) * fs.Bsize
		}
	}
	return n
}

// countRun is the memory of a run that holds held (the use of its tmpfs
// and its socket buffers) and the thread groups at procs (their /proc/PID
// directories); !complete when one
// of them could not be read. Their resident anonymous and shared memory
// is cheap to read but counts a shared page in every process that maps it,
// and a page of the run's tmpfs again in each of its mappings; so past
// limit the run is counted again by the proportional share of each mapping
// (see smapsShare), which counts every page once. That walks the page
// tables, and is done only where the cheap count would kill (recounted);
// a run it spares is close to its limit as its tmpfs fills (it counts its
// mapped pages once, by its use), so is counted again soon after. Held
// alone past limit needs no second count. The walk takes long where a
// process maps much of the tmpfs; walking, when not nil, is called as it
// starts and what it returns as it ends.
func countRun(held int64, procs []string, limit int64, walking func() (done func())) (total int64, complete, recounted bool) {
	buf := make([]byte, 4096)
	rss := func(path string) (int64, bool, bool) { return memoryLines(path, rssKeys, buf) }
	resident := make([]int64, len(procs))
	total, complete = held, true
	for i, dir := range procs {
		n, ok := groupMemory(dir, "status", rss)
		resident[i] = n
		total += n
		complete = complete && ok
	}
	shmem, err := shmemDevice()
	if total <= limit || err != nil {
		return total, complete, false // where err != nil, the resident count: never below the share
	}
	if held > limit {
		return held, complete, false
	}
	if walking != nil {
		defer walking()()
	}
	share := func(path string) (int64, bool, bool) { return smapsShare(path, shmem) }
	total = held
	for i, dir := range procs {
		n, ok := groupMemory(dir, "smaps", share)
		if !ok {
			n = resident[i] // a process the count may not read (not dumpable) counts all it holds
		}
		total += n
	}
	return total, complete, true
}

// rssKeys are the lines of /proc/PID/status that the cheap count sums
// (hugetlb pages are in neither Rss line).
var rssKeys = [][]byte{[]byte("RssAnon:"), []byte("RssShmem:"), []byte("HugetlbPages:")}

// A memoryFile reads the memory in the /proc file at path of one process:
// found, that the file shows the process's memory (a zombie's does not);
// !ok when it exists but cannot be read.
type memoryFile func(path string) (n int64, found, ok bool)

// groupMemory reads file of the thread group at dir (/proc/PID) with
// read; !ok when it exists but cannot be read. A
// leader that exited while its other threads run is a zombie whose own
// files show no memory (its mm is gone from it, not from the group): then
// the first live thread's file under dir/task counts, as threads share one
// mm.
func groupMemory(dir, file string, read memoryFile) (int64, bool) {
	n, found, ok := read(dir + "/" + file)
	if found || !ok {
		return n, ok
	}
	d, err := os.Open(dir + "/task")
	if err != nil {
		return 0, true // gone
	}
	tids, _ := d.Readdirnames(-1)
	d.Close()
	for _, tid := range tids {
		if n, found, ok = read(dir + "/task/" + tid + "/" + file); found || !ok {
			return n, ok
		}
	}
	return 0, true // a zombie, or gone
}

// memoryLines sums the lines of keys (in kB) in a /proc file; found: any
// of them is there (not in a zombie's file); !ok when it exists but cannot
// be read.
func memoryLines(path string, keys [][]byte, buf []byte) (kB int64, found, ok bool) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) {
		return 0, false, true // gone
	}
	if err != nil {
		return 0, false, false
	}
	n, _ := unix.Read(fd, buf)
	unix.Close(fd)
	// Line by line, in buf: a session's every cell counts (see Counted),
	// and what a count allocates is the service's garbage.
	for text := buf[:max(n, 0)]; len(text) > 0; {
		var line []byte
		line, text, _ = bytes.Cut(text, []byte("\n"))
		for _, key := range keys {
			if value, ok := bytes.CutPrefix(line, key); ok {
				found = true
				kB += leadingNumber(value)
			}
		}
	}
	return kB << 10, found, true
}

// leadingNumber is the decimal number that value starts with past its
// blanks ("  1234 kB": 1234); 0 where it starts with none.
func leadingNumber(value []byte) int64 {
	var n int64
	for _, c := range bytes.TrimLeft(value, " \t") {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int64(c-'0')
	}
	return n
}

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

// Counted is the memory of the thread groups at procs (their /proc/PID
// directories, in any mount of proc) plus held (the use of their tmpfs),
// counted against limit as a run's counter counts it (see countRun): by
// what they hold resident, and past limit by the proportional share of
// each mapping, each page once; !complete when one of them could not be
// read. The service checks a live session's sandbox so once a cell ended.
func Counted(held int64, procs []string, limit int64) (total int64, complete bool) {
	total, complete, _ = countRun(held, procs, limit, nil)
	return total, complete
}

// rollupKeys are the lines of /proc/PID/smaps_rollup that Proportional
// sums: the proportional share of anonymous and shared memory pages, and
// the hugetlb pages (the files of the read-only system are not counted).
var rollupKeys = [][]byte{[]byte("Pss_Anon:"), []byte("Pss_Shmem:"), []byte("Shared_Hugetlb:"), []byte("Private_Hugetlb:")}

// Proportional is the memory of the thread groups at procs plus held, each
// by its proportional share of its anonymous and shared memory, which the
// kernel sums in smaps_rollup in one walk of its page tables, without
// writing out every mapping as smaps does. A page of a tmpfs they map
// counts in held too, so that it may count over what the run's counter
// would, never under; a process whose smaps_rollup may not be read counts
// what it holds resident. !complete when one of them could not be read at
// all. The service reports a live session's memory so.
func Proportional(held int64, procs []string) (total int64, complete bool) {
	buf := make([]byte, 4096)
	rollup := func(path string) (int64, bool, bool) { return memoryLines(path, rollupKeys, buf) }
	rss := func(path string) (int64, bool, bool) { return memoryLines(path, rssKeys, buf) }
	total, complete = held, true
	for _, dir := range procs {
		n, ok := groupMemory(dir, "smaps_rollup", rollup)
		if !ok {
			n, ok = groupMemory(dir, "status", rss)
		}
		total += n
		complete = complete && ok
	}
	return total, complete
}
