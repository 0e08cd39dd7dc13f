package sandbox

import (
	"bytes"
	"compress/zlib"
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/runblock/runblock/executor/sandbox/internal/policy"
	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
	"golang.org/x/sys/unix"
)

//go:embed guard.py
var guardSource string

// forkserverSource holds the fork server's functions, which guard.py calls
// in its "forkserver" mode; compiled into the guard, before it.
//
//go:embed forkserver.py
var forkserverSource string

// layerSet selects the isolation layers of a tier.
type layerSet struct {
	Namespaces bool // user, mount, PID, network, IPC, UTS, cgroup; minimal root; fresh /proc
	Landlock   bool
	Seccomp    bool
	Locker     bool // without namespaces: re-exec as the locker (no_new_privs, Landlock, seccomp)
}

// python is the interpreter found at start.
type python struct {
	// Executable is the binary to run: the real one, not a shim, except in
	// a virtualenv, whose python must be run by its path in the venv (a
	// symlink to Real) for the venv's prefix and packages to be used.
	Executable string   `json:"executable"`
	Real       string   `json:"-"`
	Venv       bool     `json:"venv"`
	Version    string   `json:"version"`
	Prefixes   []string `json:"prefixes"`
	Site       []string `json:"site"`
	// Code is guard.py compiled by this interpreter (docstrings left
	// out), its marshal data: loading it is cheaper than compiling the
	// source in every sandbox. Guard is the same for the fork server's
	// command line: as this interpreter answers it, base64 of Code; then
	// base64 of Code compressed (zlib), which keeps it well within one
	// argument (TestGuardFitsAnArgument).
	Guard string `json:"guard"`
	Code  []byte `json:"-"`
}

// guardLoader is python's -c program in a sandbox started from scratch: it
// reads the compiled guard, whose size is its first argument, from the
// request pipe, where the service writes it first (see spawn), and runs
// it. (On the command line, as 42 KB of hex, the guard cost every start
// ~5 ms of CPU here: the init's spec and python's argv both carried it.)
var guardLoader = fmt.Sprintf(`import marshal, posix, sys
n, b = int(sys.argv.pop(%d)), b""
while len(b) < n:
    c = posix.read(%d, n - len(b))
    if not c:
        raise SystemExit("runblock: the guard did not arrive")
    b += c
exec(marshal.loads(b))`, protocol.LoaderArg, protocol.FDRequest)

// forkServerLoader is the fork server's -c program: it starts once, so it
// takes the compiled guard on its command line, compressed, as base64. The fork
// server's init gets it within its stage spec, one argument, which the
// kernel bounds to 128 KiB (MAX_ARG_STRLEN; TestGuardFitsAnArgument).
var forkServerLoader = fmt.Sprintf("import binascii, marshal, sys, zlib; exec(marshal.loads(zlib.decompress(binascii.a2b_base64(sys.argv.pop(%d)))))", protocol.LoaderArg)

// findPython resolves name (or python3 on PATH) to the real interpreter by
// asking it: python3 on PATH may be a shim script.
func findPython(ctx context.Context, name string) (python, error) {
	if name == "" {
		name = "python3"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return python{}, fmt.Errorf("find python %q: %w", name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	const probe = `import base64, json, marshal, platform, site, sys
guard = base64.b64encode(marshal.dumps(compile(sys.stdin.read(), "<runblock>", "exec", optimize=2))).decode()
site.venv(None)  # -S leaves a virtualenv's prefix and packages to site
print(json.dumps({"executable": sys.executable, "version": platform.python_version(),
    "venv": sys.prefix != sys.base_prefix,
    "prefixes": sorted({sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}),
    "site": site.getsitepackages(), "guard": guard}))`
	cmd := exec.CommandContext(ctx, path, "-I", "-S", "-c", probe)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	cmd.Stdin = strings.NewReader(forkserverSource + guardSource)
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		return python{}, fmt.Errorf("run %s: %w", path, err)
	}
	var py python
	if err := json.Unmarshal(out, &py); err != nil {
		return python{}, fmt.Errorf("read %s's answer: %w", path, err)
	}
	if py.Code, err = base64.StdEncoding.DecodeString(py.Guard); err != nil {
		return python{}, fmt.Errorf("read %s's compiled guard: %w", path, err)
	}
	var z bytes.Buffer
	w, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	_, _ = w.Write(py.Code)
	_ = w.Close()
	py.Guard = base64.StdEncoding.EncodeToString(z.Bytes())
	if py.Real, err = filepath.EvalSymlinks(py.Executable); err != nil {
		return python{}, fmt.Errorf("resolve %s: %w", py.Executable, err)
	}
	if !py.Venv {
		// Run the real binary: a python that is a symlink into a directory
		// the sandbox does not bind would not start there.
		py.Executable = py.Real
	}
	return py, nil
}

// plan is how sandboxes of one tier are built.
type plan struct {
	layers   layerSet
	seccomp  []byte // see seccompFilter
	py       python
	hostUID  int            // first host uid (and gid) of the snippets, -1: the service's own
	uidSlots int            // the snippets' host uids are hostUID + [0, uidSlots)
	uidSeq   *atomic.Uint64 // shared by copies of the plan (the pool's)
	mapRoot  bool
	cgroup   *cgroupTree // delegated cgroup v2 subtree, nil: none
	noCgroup string      // why cgroup is nil
	binds    []string
	files    []string
	symlinks map[string]string
	// fontCache is the host directory of matplotlib's prebuilt font cache,
	// "" when there is none; preload is RUNBLOCK_PRELOAD.
	fontCache string
	preload   string
	// caps bound the files that come back (RUNBLOCK_MAX_FILES,
	// RUNBLOCK_MAX_FILES_BYTES); 0 files: none come back.
	caps protocol.CollectLimits
	// unguarded is Config.unguarded: the guard refuses nothing.
	unguarded bool
}

// transfer bounds what the collector reads: twice the caps, see
// protocol.CollectLimits.
func (p *plan) transfer() protocol.CollectLimits {
	return protocol.CollectLimits{MaxFiles: 2 * p.caps.MaxFiles, MaxBytes: 2 * p.caps.MaxBytes}
}

func newPlan(py python, layers layerSet) (*plan, error) {
	p := &plan{layers: layers, py: py, hostUID: -1, uidSeq: new(atomic.Uint64), symlinks: map[string]string{}}
	if layers.Seccomp {
		var err error
		if p.seccomp, err = seccompFilter(); err != nil {
			return nil, err
		}
	}
	if os.Geteuid() == 0 {
		base, n := hostIDs(idMap("uid_map"), idMap("gid_map"))
		// Without a mount namespace the snippet sees the host's tree, so it
		// can only drop to another uid when that uid can reach python.
		if n > 0 && (layers.Namespaces || othersCanReach(py.Executable)) {
			p.mapRoot, p.hostUID, p.uidSlots = layers.Namespaces, base, n
		}
	}
	for _, dir := range policy.SystemDirs {
		fi, err := os.Lstat(dir)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(dir); err == nil {
				p.symlinks[dir] = target
			}
		case fi.IsDir():
			p.binds = append(p.binds, dir)
		}
	}
	for _, dir := range append(py.Prefixes, filepath.Dir(py.Executable), filepath.Dir(py.Real)) {
		if !p.covered(dir) {
			p.binds = append(p.binds, dir)
		}
	}
	for _, file := range policy.SystemFiles {
		if _, err := os.Stat(file); err == nil {
			p.files = append(p.files, file)
		}
	}
	return p, nil
}

// hostIDs picks the host ids of a root service's snippets from its user
// namespace's uid_map and gid_map: policy.HostUID and the HostUIDs after
// it where both map them (the initial namespace maps every id), else the
// largest other range both map, its top HostUIDs ids (rootless Podman,
// Docker userns-remap);
// n = 0 when they map no id but root's (unshare --map-root-user).
func hostIDs(uidMap, gidMap string) (base, n int) {
	type idRange struct{ lo, hi int64 } // ids [lo, hi) of this namespace
	parse := func(m string) []idRange {
		var rs []idRange
		for _, line := range strings.Split(m, "\n") {
			var inside, outside, count int64
			if _, err := fmt.Sscan(line, &inside, &outside, &count); err == nil {
				rs = append(rs, idRange{inside, inside + count})
			}
		}
		return rs
	}
	var best idRange
	for _, u := range parse(uidMap) {
		for _, g := range parse(gidMap) {
			r := idRange{max(u.lo, g.lo, 1), min(u.hi, g.hi)}
			if r.lo <= int64(policy.HostUID) && int64(policy.HostUID+policy.HostUIDs) <= r.hi {
				return policy.HostUID, policy.HostUIDs
			}
			if r.hi-r.lo > best.hi-best.lo {
				best = r
			}
		}
	}
	// The top of the range: low ids of a container's own image (bin,
	// daemon, ...) may own files.
	n = int(min(best.hi-best.lo, int64(policy.HostUIDs), math.MaxInt32-best.lo))
	return int(best.hi) - n, n
}

// idMap reads /proc/self/uid_map or gid_map; without /proc (not Linux),
// every id is the host's.
func idMap(name string) string {
	b, err := os.ReadFile("/proc/self/" + name)
	if err != nil {
		return "0 0 4294967295"
	}
	return string(b)
}

// runUID is the host uid of the next sandbox's snippet (-1: the
// service's own): one of the plan's slots in turn, so concurrent sandboxes
// have distinct uids.
func (p *plan) runUID() int {
	if p.hostUID < 0 {
		return -1
	}
	return p.hostUID + int(p.uidSeq.Add(1)%uint64(p.uidSlots))
}

// othersCanReach reports whether any uid may traverse to and run path.
func othersCanReach(path string) bool {
	for dir := path; ; dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		if dir == "/" {
			return true
		}
	}
}

func (p *plan) covered(dir string) bool {
	for _, b := range p.binds {
		if dir == b || strings.HasPrefix(dir, b+"/") {
			return true
		}
	}
	return false
}

// accounted: the run's memory is bounded as a whole, by its cgroup or by
// the init.
func (p *plan) accounted() bool { return p.cgroup != nil || p.layers.Namespaces }

// spec is the stage spec for one sandbox working in dir.
func (p *plan) spec(lim limits, dir string) protocol.StageSpec {
	lim.Accounted, lim.Tmpfs = p.accounted(), p.layers.Namespaces
	mode := "isolated"
	if p.layers == (layerSet{}) {
		mode = "strict"
	}
	mode = p.guardMode(mode)
	fontCache := p.fontCache
	if p.layers.Namespaces && fontCache != "" {
		fontCache = policy.FontCacheDir
	}
	spec := protocol.StageSpec{
		Python:  p.py.Executable,
		Args:    slices.Concat(policy.PythonFlags, []string{"-c", guardLoader, strconv.Itoa(len(p.py.Code))}, protocol.GuardArgv(rlimitArg(lim), mode, fontCache, p.preload, p.py.Site)),
		Env:     env(dir),
		Dir:     dir,
		Seccomp: p.seccomp,
	}
	if p.layers.Namespaces {
		spec.Binds, spec.Files, spec.Symlinks = p.binds, p.files, p.symlinks
		spec.FontCache = p.fontCache
		spec.Collect = p.transfer()
		spec.WorkBytes = min(policy.WorkBytes, lim.Memory)
		spec.ShmBytes = lim.Memory + lim.Memory/8 // see policy.ShmDir
		if p.cgroup == nil {
			spec.MemoryBytes = lim.Memory
		}
		spec.SetGroups = p.mapRoot
		if p.mapRoot {
			spec.UID, spec.GID = policy.UID, policy.UID
		}
	}
	if p.layers.Landlock {
		ro := append([]string{}, p.binds...)
		files := slices.Clone(policy.ReadFiles)
		var list []string
		if p.layers.Namespaces {
			// The root holds nothing but what the sandbox was given.
			list = []string{"/"}
			ro = append(ro, "/etc", "/proc")
		} else {
			// The locker execs python in place: "self" is python then too.
			files = append(files, append(p.files, "/proc/self/status")...)
			if p.fontCache != "" {
				ro = append(ro, p.fontCache)
			}
		}
		spec.Landlock = &protocol.LandlockSet{ListDirs: list, RODirs: ro, RWDirs: []string{dir}, ROFiles: files, RWFiles: policy.WriteFiles}
	}
	return spec
}

// guardMode is the guard's MODE argument for mode: with "+unguarded"
// when the plan's guard refuses nothing (see guard.py).
func (p *plan) guardMode(mode string) string {
	if p.unguarded {
		return mode + "+unguarded"
	}
	return mode
}

// env is the snippet's environment with its work dir in dir.
func env(dir string) []string {
	env := slices.Clone(policy.Env)
	for _, k := range slices.Sorted(maps.Keys(policy.WorkDirEnv)) {
		env = append(env, k+"="+filepath.Join(dir, policy.WorkDirEnv[k]))
	}
	return env
}

// rlimit is one resource limit, set as soft = hard.
type rlimit struct {
	name     string // RLIMIT_ name, as resource.RLIMIT_<name> in python
	resource int
	value    uint64
}

// rlimits are the policy's limits of a sandbox for lim (without RLIMIT_AS
// where the OS refuses it). lim.Accounted and lim.Tmpfs must be set.
func rlimits(lim limits) []rlimit {
	var rls []rlimit
	for _, r := range policy.Rlimits {
		if r.Resource == unix.RLIMIT_AS && !addressSpaceLimit {
			continue
		}
		rls = append(rls, rlimit{r.Name, r.Resource, r.Value(lim)})
	}
	return rls
}

// rlimitValue is the value of resource in rlimits(lim), 0 when not set.
func rlimitValue(lim limits, resource int) uint64 {
	for _, rl := range rlimits(lim) {
		if rl.resource == resource {
			return rl.value
		}
	}
	return 0
}

// rlimitArg passes the rlimits to the guard, which sets them before it says
// "ready": before any snippet code exists in the process, and for good, as
// the sandbox uid cannot raise a hard limit. (Setting them in Go before
// execve would need a second Go stage per run, ~4 ms of CPU.)
func rlimitArg(lim limits) string {
	parts := make([]string, 0, 6)
	for _, rl := range rlimits(lim) {
		parts = append(parts, fmt.Sprintf("%d:%d", rl.resource, rl.value))
	}
	return strings.Join(parts, ",")
}
