package sandbox

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox/internal/policy"
	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
	"golang.org/x/sys/unix"
)

//go:embed canary.py
var canarySource string

// probe finds python and the strongest tier that works here.
func probe(ctx context.Context, cfg Config) (*plan, Report, error) {
	py, err := findPython(ctx, cfg.Python)
	if err != nil {
		return nil, Report{Tier: TierNone}, &executor.Error{Code: executor.ErrUnavailable, Message: "no usable python", Err: err}
	}
	report := Report{Python: fmt.Sprintf("%s (Python %s)", py.Executable, py.Version)}
	cg, err := serviceCgroup(cfg.Cgroup)
	if err != nil && cfg.Cgroup != "" {
		return nil, Report{Tier: TierNone}, &executor.Error{Code: executor.ErrUnavailable, Message: "RUNBLOCK_CGROUP", Err: err}
	}
	var noCgroup string
	if err != nil {
		noCgroup = err.Error()
	}
	fontCache, err := buildFontCache(ctx, py)
	report.FontCache = fontCache
	if err != nil {
		cfg.Logger.Warn("no prebuilt matplotlib font cache: each run importing pyplot builds its own", "err", err)
	}
	newPlan := func(py python, set layerSet) (*plan, error) {
		pl, err := newPlan(py, set)
		if err == nil {
			pl.fontCache = fontCache
			pl.caps = protocol.CollectLimits{MaxFiles: max(cfg.MaxFiles, 0), MaxBytes: cfg.MaxFilesBytes}
			pl.unguarded = cfg.unguarded
		}
		return pl, err
	}
	var reasons []string
	for i, set := range tiers {
		pl, err := newPlan(py, set)
		if err == nil {
			pl.cgroup, pl.noCgroup = cg, noCgroup
		}
		var layers []Layer
		if err == nil {
			layers, err = canary(ctx, cfg, pl, pl.start)
		}
		if err == nil {
			if bad := unverified(layers); len(bad) > 0 {
				err = fmt.Errorf("not enforced: %s", strings.Join(bad, ", "))
				if set.Landlock && slices.ContainsFunc(layers, func(l Layer) bool { return l.Name == "landlock" && !l.Verified }) {
					err = fmt.Errorf("%w; %s", err, landlockStatus())
				}
			}
		}
		if err != nil {
			cfg.Logger.Debug("isolation tier does not work here", "layers", set.String(), "err", err)
			reasons = append(reasons, fmt.Sprintf("[%s] %v", set, err))
			report.FailedTiers = append(report.FailedTiers, FailedTier{Layers: set.String(), Reason: err.Error()})
			continue
		}
		report.Tier, report.Layers = TierReduced, layers
		if i == 0 && !slices.ContainsFunc(layers, func(l Layer) bool { return !l.Active }) {
			report.Tier = TierFull
		}
		return pl, report, nil
	}
	pl, err := newPlan(py, layerSet{})
	var layers []Layer
	if err == nil {
		pl.cgroup, pl.noCgroup = cg, noCgroup
		layers, err = canary(ctx, cfg, pl, pl.start)
	}
	if hint := capabilityHint(); hint != "" {
		reasons = append(reasons, hint)
	}
	if err != nil {
		report.Tier = TierNone
		return nil, report, &executor.Error{Code: executor.ErrUnavailable, Message: "no isolation tier works on this machine (" +
			strings.Join(reasons, "; ") + ") and python does not run even without isolation", Err: err}
	}
	report.Layers = layers
	if !cfg.AllowUnisolated {
		report.Tier = TierNone
		return nil, report, &executor.Error{Code: executor.ErrUnavailable, Message: "no isolation tier works on this machine (" +
			strings.Join(reasons, "; ") + "); set RUNBLOCK_ALLOW_UNISOLATED=1 to run snippets with the guard prelude alone (unsafe)"}
	}
	report.Tier = TierUnisolated
	return pl, report, nil
}

// notablePackages are the distributions doctor looks for, by import name
// and distribution name: snekbox's scientific set and the usual company.
var notablePackages = [][2]string{
	{"numpy", "numpy"}, {"pandas", "pandas"}, {"matplotlib", "matplotlib"}, {"scipy", "scipy"},
	{"sympy", "sympy"}, {"networkx", "networkx"}, {"PIL", "pillow"}, {"sklearn", "scikit-learn"},
	{"seaborn", "seaborn"}, {"statsmodels", "statsmodels"}, {"polars", "polars"}, {"pyarrow", "pyarrow"},
	{"requests", "requests"}, {"bs4", "beautifulsoup4"}, {"yaml", "PyYAML"}, {"attrs", "attrs"},
	{"dateutil", "python-dateutil"}, {"pytz", "pytz"}, {"mpmath", "mpmath"}, {"regex", "regex"},
}

// packages lists the notable packages a snippet of pl can import: found
// on its path, with their installed versions. A version comes from the
// distribution's metadata, without importing the module (importing them
// all takes seconds), except where the metadata has none or says 0.0.0,
// as Debian's mpmath does: then the module's own __version__.
func packages(ctx context.Context, cfg Config, pl *plan) ([]Package, error) {
	var b strings.Builder
	b.WriteString("import importlib, importlib.util, importlib.metadata, json\nfound = []\nfor mod, dist in [")
	for _, p := range notablePackages {
		fmt.Fprintf(&b, "(%q, %q), ", p[0], p[1])
	}
	b.WriteString(`]:
    if importlib.util.find_spec(mod) is None:
        continue
    try:
        version = importlib.metadata.version(dist)
    except Exception:
        version = ""
    if version in ("", "0.0.0"):
        try:
            version = str(importlib.import_module(mod).__version__)
        except Exception:
            version = version or "?"
    found.append({"name": dist, "version": version})
print(json.dumps(found))
`)
	var pkgs []Package
	if err := runJSON(ctx, cfg, pl, executor.Request{Code: b.String()}, "list packages", &pkgs); err != nil {
		return nil, err
	}
	return pkgs, nil
}

func (s layerSet) String() string {
	var on []string
	for name, v := range map[string]bool{"namespaces": s.Namespaces, "landlock": s.Landlock, "seccomp": s.Seccomp} {
		if v {
			on = append(on, name)
		}
	}
	slices.Sort(on)
	if len(on) == 0 {
		return "guard only"
	}
	return strings.Join(on, "+")
}

// landlockStatus says why Landlock may not be enforced here: the
// kernel's answer to Landlock's version query.
func landlockStatus() string {
	v, err := llsys.LandlockGetABIVersion()
	switch {
	case errors.Is(err, syscall.ENOSYS):
		return "the kernel has no Landlock (its version query fails with ENOSYS): it needs Linux 5.13 or newer built with CONFIG_SECURITY_LANDLOCK, and a container's seccomp profile that allows the landlock_* calls"
	case errors.Is(err, syscall.EOPNOTSUPP):
		return "Landlock is built into the kernel but not enabled: add landlock to the lsm= boot parameter"
	case err != nil:
		return "the kernel's Landlock version query failed: " + err.Error()
	}
	return fmt.Sprintf("the kernel has Landlock ABI %d", v)
}

func unverified(layers []Layer) []string {
	var bad []string
	for _, l := range layers {
		if l.Active && !l.Verified {
			bad = append(bad, l.Name+" ("+l.Detail+")")
		}
	}
	return bad
}

// starter starts a sandbox that waits for its snippet: spawn's way
// (plan.start) or the fork server's.
type starter func(ctx context.Context, lim limits, keep, maxOutput int64) (*proc, error)

// start starts a sandbox of pl from scratch.
func (pl *plan) start(ctx context.Context, lim limits, keep, maxOutput int64) (*proc, error) {
	return spawn(ctx, pl, lim, keep, maxOutput)
}

// canaryAnswers is what canary.py prints.
type canaryAnswers struct {
	FDs               []int             `json:"fds"`
	UID               int               `json:"uid"`
	PID               int               `json:"pid"`
	Env               []string          `json:"env"`
	HostMarkerVisible bool              `json:"host_marker_visible"`
	ShadowVisible     bool              `json:"shadow_visible"`
	RootEntries       []string          `json:"root_entries"`
	Hostname          string            `json:"hostname"`
	NS                map[string]string `json:"ns"`
	NetDevices        any               `json:"net_devices"`
	NoNewPrivs        string            `json:"no_new_privs"`
	SeccompMode       string            `json:"seccomp_mode"`
	InetSocket        string            `json:"inet_socket"`
	NetlinkSocket     string            `json:"netlink_socket"`
	VsockSocket       string            `json:"vsock_socket"`
	DevZeroWrite      string            `json:"dev_zero_write"`
	Rlimits           map[string]uint64 `json:"rlimits"`
	Nice              int               `json:"nice"`
}

// canary runs canary.py in a sandbox of pl and turns its answers into
// verified layers.
func canary(ctx context.Context, cfg Config, pl *plan, start starter) ([]Layer, error) {
	marker, err := os.CreateTemp("", "runblock-canary-")
	if err != nil {
		return nil, err
	}
	marker.Close()
	defer func() { _ = os.Remove(marker.Name()) }()
	lim := limits{Timeout: 20 * time.Second, Memory: cfg.MemoryBytes}
	p, err := start(ctx, lim, 1<<20, 4<<20)
	if err != nil {
		return nil, err
	}
	res, err := p.run(ctx, executor.Request{Code: canarySource, Stdin: marker.Name()})
	if err != nil {
		return nil, err
	}
	if !res.Success {
		return nil, fmt.Errorf("canary run failed: %s", res.Error)
	}
	var c canaryAnswers
	if err := json.Unmarshal([]byte(res.Stdout), &c); err != nil {
		return nil, fmt.Errorf("canary answer: %w", err)
	}
	return append(pl.verify(c, lim, p.memoryPeak), lockdownLayer(p.lockdown())), nil
}

// lockdownLayer holds the lockdown steps the canary's sandbox recorded as
// it took them to the one order, policy.Lockdown: a tier that takes them
// out of it fails.
func lockdownLayer(steps []string) Layer {
	l := Layer{Name: "lockdown-order", Active: true, Verified: true, Detail: "steps as recorded: " + strings.Join(steps, ", ")}
	if err := policy.InLockdownOrder(steps); err != nil {
		l.Verified, l.Detail = false, err.Error()
	}
	return l
}

// verify compares the canary's answers, and the most memory the init
// accounted for the run, with what each layer promises.
func (pl *plan) verify(c canaryAnswers, lim limits, memoryPeak int64) []Layer {
	ns := pl.layers.Namespaces
	nsLayer := func(name, kind string, extra bool, detail string) Layer {
		own, _ := os.Readlink("/proc/self/ns/" + kind)
		got := c.NS[kind]
		ok := own != "" && got != own && !strings.HasPrefix(got, "error")
		return Layer{Name: name, Active: ns, Verified: ns && ok && extra, Detail: detail}
	}
	expectedRoot := map[string]bool{"dev": true, "proc": true, "tmp": true, "etc": true, strings.TrimPrefix(policy.WorkDir, "/"): true}
	for _, p := range slices.Concat(pl.binds, pl.files, mapKeys(pl.symlinks)) {
		expectedRoot[strings.Split(strings.TrimPrefix(p, "/"), "/")[0]] = true
	}
	minimalRoot := !c.HostMarkerVisible && !c.ShadowVisible && c.RootEntries != nil
	for _, e := range c.RootEntries {
		minimalRoot = minimalRoot && expectedRoot[e]
	}
	onlyLoopback := fmt.Sprint(c.NetDevices) == "[lo]"
	layers := []Layer{
		nsLayer("user-namespace", "user", true, "own user namespace"),
		nsLayer("mount-namespace", "mnt", minimalRoot, "minimal read-only root, tmpfs work dir, no host /tmp"),
		nsLayer("pid-namespace", "pid", c.PID < 64, "own PID namespace and /proc; killing its init ends every process"),
		nsLayer("network-namespace", "net", onlyLoopback, "no network interfaces, loopback down"),
		nsLayer("ipc-namespace", "ipc", true, ""),
		nsLayer("uts-namespace", "uts", c.Hostname == policy.Hostname, ""),
		nsLayer("cgroup-namespace", "cgroup", true, ""),
	}

	uid := Layer{Name: "unprivileged-uid", Active: pl.hostUID >= 0}
	switch {
	case pl.hostUID < 0:
		uid.Detail = fmt.Sprintf("service is not root: the snippet runs as the service's uid %d (root of its own user namespace only)", os.Geteuid())
	case ns:
		uid.Verified = c.UID == policy.UID
		uid.Detail = fmt.Sprintf("uid %d in the sandbox, host uid %d + a slot below %d per sandbox", policy.UID, pl.hostUID, pl.uidSlots)
	default:
		uid.Verified = c.UID >= pl.hostUID && c.UID < pl.hostUID+pl.uidSlots
		uid.Detail = fmt.Sprintf("host uid %d + a slot below %d per sandbox", pl.hostUID, pl.uidSlots)
	}
	layers = append(layers, uid)

	layers = append(layers,
		Layer{Name: "landlock", Active: pl.layers.Landlock, Verified: pl.layers.Landlock && c.DevZeroWrite == "errno 13",
			Detail: "file access limited to the interpreter (read) and the work dir (write); TCP bind/connect denied"},
		Layer{Name: "seccomp", Active: pl.layers.Seccomp,
			Verified: pl.layers.Seccomp && c.InetSocket == "errno 1" && c.NetlinkSocket == "errno 1" && c.VsockSocket == "errno 1" && c.SeccompMode == "2",
			Detail:   "blocks ptrace, mount, namespaces, sockets but AF_UNIX, bpf, keyctl, perf, inotify, memfd, SysV IPC; kills foreign-ABI syscalls"},
		Layer{Name: "no-new-privs", Active: pl.layers.Locker, Verified: pl.layers.Locker && c.NoNewPrivs == "1"},
	)
	rlOK := true
	lim.Accounted, lim.Tmpfs = pl.accounted(), pl.layers.Namespaces
	for _, rl := range rlimits(lim) {
		got, ok := c.Rlimits[rl.name]
		rlOK = rlOK && ok && got == rl.value
	}
	memory := fmt.Sprintf("address space %d MiB", rlimitValue(lim, unix.RLIMIT_AS)>>20)
	if !addressSpaceLimit {
		memory = "no memory limit on this OS"
	}
	nice := "no lower nice value, no real-time policy"
	if pl.layers.Namespaces {
		// The supervisor sets it, where there is one (see policy.SnippetNice).
		rlOK = rlOK && c.Nice == policy.SnippetNice
		nice = fmt.Sprintf("nice %d (under its supervisor's), never lowered, no real-time policy", policy.SnippetNice)
	}
	layers = append(layers, Layer{Name: "rlimits", Active: true, Verified: rlOK,
		Detail: memory + ", CPU, file size, open files, processes, no core dumps; " + nice})
	run := Layer{Name: "run-memory", Active: pl.accounted(), Verified: pl.accounted() && (memoryPeak > 0 || pl.cgroup != nil),
		Detail: fmt.Sprintf("not bounded as a whole (tier without PID namespace): per process only, by the address space limit of %d MiB", lim.Memory>>20)}
	switch {
	case pl.cgroup != nil:
		run.Detail = fmt.Sprintf("whole run ≤ %d MiB, exact: memory.max of its own cgroup below the delegated %s (every process and thread, shared memory, work dir, socket and pipe buffers, kernel memory); canary run peaked at %d KiB",
			lim.Memory>>20, pl.cgroup.dir, memoryPeak>>10)
	case run.Active:
		run.Detail = fmt.Sprintf("whole run ≤ %d MiB, counted by the init every %v–%v: the resident memory of every thread group (through a live thread where its leader exited), "+
			"the work dir and shared memory tmpfs and the run's Unix socket buffers; killed past it (with the CPU saturated, up to ~60 MiB past it: the snippet runs at nice %d). Not counted: pipe buffers (bounded by the run uid's pipe budget) and page tables. "+
			"Hard bound were the count blind: %d tasks × %d MiB address space = %d × the limit. No delegated cgroup (%s). Canary run peaked at %d KiB",
			lim.Memory>>20, policy.MemoryPollMin, policy.MemoryPoll, policy.SnippetNice, rlimitValue(lim, unix.RLIMIT_NPROC), rlimitValue(lim, unix.RLIMIT_AS)>>20,
			rlimitValue(lim, unix.RLIMIT_NPROC)*rlimitValue(lim, unix.RLIMIT_AS)/uint64(lim.Memory), pl.noCgroup, memoryPeak>>10)
	}
	layers = append(layers, run,
		Layer{Name: "closed-descriptors", Active: true, Verified: fmt.Sprint(c.FDs) == "[0 1 2]", Detail: fmt.Sprintf("the snippet holds descriptors %v", c.FDs)})
	envOK := true
	for _, k := range c.Env {
		envOK = envOK && slices.ContainsFunc(env(""), func(kv string) bool { return strings.HasPrefix(kv, k+"=") })
	}
	layers = append(layers,
		Layer{Name: "scrubbed-environment", Active: true, Verified: envOK},
		Layer{Name: "guard-prelude", Active: true, Verified: true, Detail: "neutralises destructive os/shutil/subprocess functions (not a security boundary)"},
	)
	return layers
}

func mapKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// missingModules returns those of modules whose top-level package a
// snippet of pl cannot find (found without importing them).
func missingModules(ctx context.Context, cfg Config, pl *plan, modules []string) ([]string, error) {
	names, err := json.Marshal(modules)
	if err != nil {
		return nil, err
	}
	code := "import importlib.util, json\nprint(json.dumps([m for m in json.loads(input()) if importlib.util.find_spec(m.split('.')[0]) is None]))"
	var missing []string
	if err := runJSON(ctx, cfg, pl, executor.Request{Code: code, Stdin: string(names) + "\n"}, "check preload", &missing); err != nil {
		return nil, err
	}
	return missing, nil
}

// runJSON runs req in a sandbox of pl and decodes what it prints into
// out; what names the check in its errors.
func runJSON(ctx context.Context, cfg Config, pl *plan, req executor.Request, what string, out any) error {
	p, err := spawn(ctx, pl, limits{Timeout: 20 * time.Second, Memory: cfg.MemoryBytes}, 1<<20, 4<<20)
	if err != nil {
		return err
	}
	res, err := p.run(ctx, req)
	if err != nil {
		return err
	}
	if !res.Success {
		return fmt.Errorf("%s: %s", what, res.Error)
	}
	if err := json.Unmarshal([]byte(res.Stdout), out); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
