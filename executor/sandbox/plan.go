package sandbox

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

//go:embed guard.py
var guardSource string

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
	// Guard is guard.py compiled by this interpreter, as hex of its
	// marshal data: loading it is cheaper than compiling the source in
	// every sandbox.
	Guard string `json:"guard"`
}

// guardLoader is python's -c program: it runs the compiled guard passed as
// the first argument, which the guard then no longer sees.
const guardLoader = "import marshal, sys; exec(marshal.loads(bytes.fromhex(sys.argv.pop(1))))"

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
	const probe = `import json, marshal, platform, site, sys
guard = marshal.dumps(compile(sys.stdin.read(), "<runblock>", "exec")).hex()
site.venv(None)  # -S leaves a virtualenv's prefix and packages to site
print(json.dumps({"executable": sys.executable, "version": platform.python_version(),
    "venv": sys.prefix != sys.base_prefix,
    "prefixes": sorted({sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}),
    "site": site.getsitepackages(), "guard": guard}))`
	cmd := exec.CommandContext(ctx, path, "-I", "-S", "-c", probe)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	cmd.Stdin = strings.NewReader(guardSource)
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		return python{}, fmt.Errorf("run %s: %w", path, err)
	}
	var py python
	if err := json.Unmarshal(out, &py); err != nil {
		return python{}, fmt.Errorf("read %s's answer: %w", path, err)
	}
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
	hostUID  int // uid the snippet runs as on the host, -1: the service's own
	mapRoot  bool
	binds    []string
	files    []string
	symlinks map[string]string
	// fontCache is the host directory of matplotlib's prebuilt font cache,
	// "" when there is none; preload is RUNBLOCK_PRELOAD.
	fontCache string
	preload   string
	// caps bound the files that come back (RUNBLOCK_MAX_FILES,
	// RUNBLOCK_MAX_FILES_BYTES); 0 files: none come back.
	caps collectLimits
}

// transfer bounds what the collector reads: twice the caps, see
// collectLimits.
func (p *plan) transfer() collectLimits {
	return collectLimits{MaxFiles: 2 * p.caps.MaxFiles, MaxBytes: 2 * p.caps.MaxBytes}
}

func newPlan(py python, layers layerSet) (*plan, error) {
	p := &plan{layers: layers, py: py, hostUID: -1, symlinks: map[string]string{}}
	if layers.Seccomp {
		var err error
		if p.seccomp, err = seccompFilter(); err != nil {
			return nil, err
		}
	}
	if os.Geteuid() == 0 {
		p.mapRoot = true
		// Without a mount namespace the snippet sees the host's tree, so it
		// can only drop to another uid when that uid can reach python.
		if layers.Namespaces || othersCanReach(py.Executable) {
			p.hostUID = policy.HostUID
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

// spec is the stage spec for one sandbox working in dir.
func (p *plan) spec(lim limits, dir string) stageSpec {
	mode := "isolated"
	if p.layers == (layerSet{}) {
		mode = "strict"
	}
	fontCache := p.fontCache
	if p.layers.Namespaces && fontCache != "" {
		fontCache = policy.FontCacheDir
	}
	spec := stageSpec{
		Python:  p.py.Executable,
		Args:    slices.Concat(policy.PythonFlags, []string{"-c", guardLoader, p.py.Guard, rlimitArg(lim), mode, fontCache, p.preload}, p.py.Site),
		Env:     env(dir),
		Dir:     dir,
		Seccomp: p.seccomp,
	}
	if p.layers.Namespaces {
		spec.Binds, spec.Files, spec.Symlinks = p.binds, p.files, p.symlinks
		spec.FontCache = p.fontCache
		spec.Collect = p.transfer()
		spec.WorkBytes = policy.WorkBytes
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
		spec.Landlock = &landlockSet{ListDirs: list, RODirs: ro, RWDirs: []string{dir}, ROFiles: files, RWFiles: policy.WriteFiles}
	}
	return spec
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
// where the OS refuses it).
func rlimits(lim limits) []rlimit {
	var rls []rlimit
	for _, r := range policy.Rlimits {
		if r.resource == unix.RLIMIT_AS && !addressSpaceLimit {
			continue
		}
		rls = append(rls, rlimit{r.name, r.resource, r.value(lim)})
	}
	return rls
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
