package stage

import (
	"errors"
	"io"
	"os"
	"slices"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox/internal/policy"
	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
	"golang.org/x/sys/unix"
)

// resolveBeneath is how every path below the work dir is opened: never
// through a symlink (not even the last component), never out of the work
// dir, never onto another mount. A snippet's symlink to a host file is
// omitted, not read (judge0's CVE-2024-28185).
var resolveBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

func openBeneath(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat2(dirfd, name, &unix.OpenHow{
			Flags:   uint64(flags | unix.O_NOFOLLOW | unix.O_CLOEXEC),
			Resolve: uint64(resolveBeneath),
		})
		if !errors.Is(err, unix.EINTR) && !errors.Is(err, unix.EAGAIN) {
			return fd, err
		}
	}
}

// CollectFiles reads the regular files beneath dir, scratch names left
// out, in the order they appeared, within lim. It runs where every process
// of the snippet is dead: in the init, inside the sandbox's own mount
// namespace (it sees what the snippet saw, nothing of the host), or in the
// service on a host work dir, where openat2 keeps it beneath dir.
func CollectFiles(dir string, lim protocol.CollectLimits) ([]executor.File, []executor.OmittedFile, error) {
	root, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	defer unix.Close(root)
	return collectAt(root, lim)
}

// collectAt is CollectFiles of the directory open as root (a forked
// run's work dir, held open by the fork server's init past the run's end).
func collectAt(root int, lim protocol.CollectLimits) ([]executor.File, []executor.OmittedFile, error) {
	var found []candidate
	var omitted []executor.OmittedFile
	budget := 4 * policy.WorkInodes // entries looked at, at most
	// prefix is the directory's path as it comes back, raw as it is named.
	var walk func(fd int, prefix, raw string, depth int) error
	walk = func(fd int, prefix, raw string, depth int) error {
		f := os.NewFile(uintptr(fd), prefix)
		defer f.Close()
		if budget <= 0 {
			return nil
		}
		names, err := f.Readdirnames(budget)
		if err != nil && err != io.EOF {
			return err
		}
		budget -= len(names)
		slices.Sort(names)
		shown := shownNames(names)
		for _, name := range names {
			if scratch(name) {
				continue
			}
			rel := prefix + shown[name]
			var st unix.Stat_t
			if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				continue
			}
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFREG:
				if depth > CollectDepth {
					omitted = append(omitted, executor.OmittedFile{Path: rel, Size: st.Size, Reason: executor.OmitTooDeep})
					continue
				}
				found = append(found, candidate{path: rel, raw: raw + name, size: st.Size, mtime: st.Mtim.Nano()})
			case unix.S_IFDIR:
				if budget <= 0 {
					continue
				}
				sub, err := openBeneath(fd, name, unix.O_RDONLY|unix.O_DIRECTORY)
				if err != nil {
					// Named, not skipped (deep down, the descriptors
					// of the directories above may run out).
					reason := executor.OmitUnreadable
					if depth >= CollectDepth {
						reason = executor.OmitTooDeep
					}
					omitted = append(omitted, executor.OmittedFile{Path: rel + "/", Reason: reason})
					continue
				}
				if err := walk(sub, rel+"/", raw+name+"/", depth+1); err != nil {
					return err
				}
			case unix.S_IFLNK:
				omitted = append(omitted, executor.OmittedFile{Path: rel, Reason: executor.OmitSymlink})
			default:
				omitted = append(omitted, executor.OmittedFile{Path: rel, Reason: executor.OmitNotRegular})
			}
		}
		return nil
	}
	dup, err := unix.Dup(root)
	if err != nil {
		return nil, nil, err
	}
	if err := walk(dup, "", "", 0); err != nil {
		return nil, nil, err
	}
	slices.SortFunc(found, byAppearance)
	var files []executor.File
	left := lim.MaxBytes
	for _, c := range found {
		switch {
		case len(files) >= lim.MaxFiles:
			omitted = append(omitted, executor.OmittedFile{Path: c.path, Size: c.size, Reason: executor.OmitCount})
		case c.size > left:
			omitted = append(omitted, executor.OmittedFile{Path: c.path, Size: c.size, Reason: executor.OmitSize})
		default:
			content, reason := readBeneath(root, c.raw, left)
			if reason != "" {
				omitted = append(omitted, executor.OmittedFile{Path: c.path, Size: c.size, Reason: reason})
				continue
			}
			left -= int64(len(content))
			files = append(files, executor.File{Path: c.path, Size: int64(len(content)), Content: content})
		}
	}
	return files, omitted, nil
}

// readBeneath reads the regular, singly linked file rel beneath root, at
// most max bytes; reason says why not.
func readBeneath(root int, rel string, max int64) ([]byte, string) {
	fd, err := openBeneath(root, rel, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
		return nil, executor.OmitSymlink
	}
	if err != nil {
		return nil, executor.OmitUnreadable
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, executor.OmitUnreadable
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return nil, executor.OmitNotRegular
	case st.Nlink != 1:
		// A hard link may be a link to a file the snippet may not show.
		return nil, executor.OmitHardLink
	case st.Size > max:
		return nil, executor.OmitSize
	}
	content, err := io.ReadAll(io.LimitReader(f, max+1))
	switch {
	case err != nil:
		return nil, executor.OmitUnreadable
	case int64(len(content)) > max:
		return nil, executor.OmitSize
	}
	return content, ""
}

// ReadDisplays is a run's displays (protocol.ResultsFile) in the work dir
// dir, as python left them: nil when there are none, or when the file is
// not a regular file within protocol.DisplaysMax (the snippet can write
// anything there; the service parses what comes back).
func ReadDisplays(dir string) []byte {
	root, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(root)
	return readDisplaysAt(root)
}

func readDisplaysAt(root int) []byte {
	content, _ := readBeneath(root, protocol.ResultsFile, protocol.DisplaysMax)
	return content
}
