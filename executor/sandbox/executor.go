// Package sandbox runs Python snippets, each in a fresh, guarded and
// kernel-isolated subprocess: the isolation behind executor.Runner. The whole
// policy is stated in policy.go; the Linux mechanics that apply it sit beside
// it. The sandbox re-executes the running binary as its init: package
// stage, which every binary that links this one holds, takes over such a
// process as it is initialized (its argv[0] names the stage).
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runblock/runblock/executor"
)

// Config holds the executor's limits.
type Config struct {
	Python          string        // RUNBLOCK_PYTHON; "" = python3 on PATH
	Timeout         time.Duration // RUNBLOCK_TIMEOUT, default 5s
	MemoryBytes     int64         // RUNBLOCK_MEMORY_MB, default 256 MiB
	MaxOutputBytes  int64         // RUNBLOCK_MAX_OUTPUT_BYTES, default 1 MiB total, run stopped past it
	KeepBytes       int64         // bytes kept per stream, default 64 KiB
	MaxCodeBytes    int64         // RUNBLOCK_MAX_CODE_BYTES, default 1 MiB (code + stdin)
	AllowUnisolated bool          // RUNBLOCK_ALLOW_UNISOLATED
	Pool            int           // RUNBLOCK_POOL, pre-started sandboxes, 0 = off
	MaxFiles        int           // RUNBLOCK_MAX_FILES, files in and out, default 10; < 0: no files come back
	MaxFilesBytes   int64         // RUNBLOCK_MAX_FILES_BYTES, their total size, default 8 MiB
	// Preload is what the fork server imports before it forks a run, and
	// pooled sandboxes started from scratch before the hand-over
	// (RUNBLOCK_PRELOAD). The zero value imports nothing.
	Preload Preload
	// DisableForkServer (RUNBLOCK_FORKSERVER=off) runs every snippet in a
	// sandbox started from scratch instead of a fork of the fork server.
	DisableForkServer bool
	// ListPackages has New list the notable packages (Packages) while
	// the fork server starts, for a caller that names them at once
	// (the MCP tool's description), rather than after New returns.
	ListPackages bool
	// Cgroup (RUNBLOCK_CGROUP) names a cgroup v2 subtree delegated to the
	// service, below /sys/fs/cgroup or absolute, with memory and pids
	// enabled in its cgroup.subtree_control; "" = the service's own
	// cgroup when it is such a subtree. Without one, the sandbox's init
	// accounts each run's memory.
	Cgroup string
	Logger *slog.Logger

	// unguarded (tests only, no setting) runs snippets without the guard's
	// refusals, so that the hostile tests prove the kernel layers hold on
	// their own: the guard is a courtesy, not the boundary.
	unguarded bool
	// warmGate (tests only) holds warm back until it is closed.
	warmGate <-chan struct{}
}

// Defaults.
const (
	DefaultTimeout        = 5 * time.Second
	DefaultMemoryBytes    = 256 << 20
	DefaultMaxOutputBytes = 1 << 20
	DefaultKeepBytes      = 64 << 10
	DefaultMaxCodeBytes   = 1 << 20
	DefaultMaxFiles       = 10 // Discord's attachments per message
	DefaultMaxFilesBytes  = 8 << 20
)

func (c Config) withDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MemoryBytes <= 0 {
		c.MemoryBytes = DefaultMemoryBytes
	}
	if c.MaxOutputBytes <= 0 {
		c.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if c.KeepBytes <= 0 {
		c.KeepBytes = DefaultKeepBytes
	}
	if c.MaxCodeBytes <= 0 {
		c.MaxCodeBytes = DefaultMaxCodeBytes
	}
	if c.MaxFiles == 0 {
		c.MaxFiles = DefaultMaxFiles
	}
	if c.MaxFilesBytes <= 0 {
		c.MaxFilesBytes = DefaultMaxFilesBytes
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Executor runs snippets, each in a fresh, guarded and isolated python.
//
// By default a run is a fork of the fork server (see forkServer): a
// long-lived sandbox whose python has the guard in place and the preloads
// imported; each run is cloned from it into namespaces of its own, locks
// itself down and runs one snippet, supervised by the fork server's init.
// Without it (Config.DisableForkServer, or where it cannot run) a sandbox
// is started from scratch:
//
// A sandbox goes spawn → ready → hand-over. The service re-executes its own
// binary as stage 1 (PID 1 of new user, mount, PID, network, IPC, UTS and
// cgroup namespaces; builds a tmpfs root with read-only binds of what python
// needs, a minimal /dev, its own /proc and a 32 MiB work dir, then
// pivot_roots), sets no_new_privs, Landlock and seccomp on its own thread and
// forks `python -I -S -c guard.py` from it as the unprivileged sandbox uid.
// The guard sets the rlimits, neutralises what the original execute_code
// did, says "ready" on the status pipe and blocks reading the snippet from
// the request pipe. A cold run hands the snippet over at once;
// with Config.Pool, sandboxes wait pre-started and a run takes one. The
// timeout counts from the hand-over. Each sandbox runs one snippet and is
// destroyed: killing its PID 1 ends every process in it.
//
// An idle pooled sandbox costs about 16 MiB RSS (6–11 MiB PSS: the init's Go
// runtime and a started python, shared pages counted once); a pre-forked
// one less, sharing the fork server's pages until it writes them; the fork
// server itself holds about 19 MiB PSS (its init and python); with a
// preload, the second, preloaded fork server holds about 71 MiB more PSS
// with numpy and matplotlib (README.md, "Two fork servers"), and its one
// pre-forked child for plots about 15 MiB of its own, what drawing a
// figure ahead of the snippet wrote (newPlotPool). Idle sandboxes
// hold no user's quota, the scheduler counts only runs. Size the pool to
// the concurrency limit: Pool × 16 MiB plus Concurrency × MemoryBytes
// bounds what the executor can take.
//
// New returns once a run can be answered: the plain fork server is up.
// The preloaded one and the plots' pool start behind it (warm), as they
// take most of a start (numpy and matplotlib's imports); until then the
// plain one forks every run, the snippets that import a preload too
// (slower, not failing). Warm waits for them.
type Executor struct {
	cfg    Config
	log    *slog.Logger
	plan   *plan
	report Report
	pool   *pool
	fork   *forkServer // the plain one, the guard only; nil: runs start from scratch
	// running counts the calls of Run under way: a run alone may wait for
	// a pool's start (see pool.take).
	running atomic.Int32

	// packages are the notable packages listed at New (Config.ListPackages).
	packages    []Package
	packagesErr error

	// warmed is closed once warm has ended; stopWarm stops it (nil: no
	// warm started).
	warmed   chan struct{}
	stopWarm context.CancelFunc

	// mu guards what warm sets while runs are served: the preloaded fork
	// server, the plots' pool, cfg.Preload (resolved) and
	// report.ForkServer.
	mu    sync.Mutex
	plots *pool // the preloaded fork server's, when there is one and a pool
	// preloaded has cfg.Preload's modules imported: it forks the snippets
	// that import them (Preload.uses) and sessions. nil without a preload,
	// while it starts, or where it could not start: then the plain one
	// forks every run.
	preloaded *forkServer
}

// New detects and verifies the isolation layers (canary runs) and returns
// an executor that answers runs, or an error when no allowed tier works.
// The preloaded fork server and the plots' pool go on starting after it
// returns (see Executor; Warm waits for them).
func New(ctx context.Context, cfg Config) (*Executor, error) {
	cfg = cfg.withDefaults()
	pl, report, err := probe(ctx, cfg)
	if err != nil {
		return nil, err
	}
	e := &Executor{cfg: cfg, log: cfg.Logger, plan: pl, report: report, warmed: make(chan struct{})}
	var listed sync.WaitGroup
	if cfg.ListPackages {
		listed.Go(func() { e.packages, e.packagesErr = packages(ctx, cfg, pl) })
	}
	e.fork, e.report.ForkServer = newPlainForkServer(ctx, cfg, pl)
	listed.Wait()
	warm := e.fork != nil && len(cfg.Preload.Modules) > 0
	if warm {
		e.report.ForkServer.Detail += "; the preloaded one (" + strings.Join(cfg.Preload.Modules, ", ") + ") is starting, the plain one forks every run meanwhile"
	} else {
		e.cfg.Preload = resolvePreload(ctx, cfg, pl)
		if e.fork != nil {
			e.report.ForkServer.Detail += "; one fork server, " + e.cfg.Preload.String()
		}
	}
	if !e.report.ForkServer.Active {
		e.log.Info("runs start from scratch: no fork server", "why", e.report.ForkServer.Detail)
	}
	switch report.Tier {
	case TierFull:
		e.log.Info("executor ready", "tier", report.Tier, "python", report.Python)
	case TierReduced:
		e.log.Warn("executor ready with reduced isolation", "tier", report.Tier, "python", report.Python, "off", report.off())
	default:
		e.log.Error("executor running snippets WITHOUT isolation (RUNBLOCK_ALLOW_UNISOLATED): unsafe for untrusted code",
			"python", report.Python, "off", report.off())
	}
	if cfg.Pool > 0 {
		e.pool = newPool(e, cfg.Pool)
	}
	if !warm {
		close(e.warmed)
		return e, nil
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e.stopWarm = cancel
	go e.warm(wctx)
	return e, nil
}

// warm starts the preloaded fork server, and the plots' pool with a
// pool, behind New, until ctx ends (Close).
func (e *Executor) warm(ctx context.Context) {
	defer close(e.warmed)
	if e.cfg.warmGate != nil {
		select {
		case <-e.cfg.warmGate:
		case <-ctx.Done():
			return
		}
	}
	cfg := e.cfg
	cfg.Preload = resolvePreload(ctx, cfg, e.plan)
	preloaded, rep := newPreloadedForkServer(ctx, cfg, e.plan)
	if ctx.Err() != nil {
		if preloaded != nil {
			preloaded.close()
		}
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cfg.Preload, e.preloaded, e.report.ForkServer = cfg.Preload, preloaded, rep
	if preloaded != nil && cfg.Pool > 0 {
		e.plots = newPlotPool(e, preloaded)
	}
	if preloaded != nil {
		e.log.Info("preloaded fork server ready", "preload", cfg.Preload.Modules)
	}
}

// Warm waits until the executor is as configured: the preloaded fork
// server and the plots' pool started (or given up, see Isolation) behind
// New. It returns ctx's error if ctx ends first.
func (e *Executor) Warm(ctx context.Context) error {
	if e.stopWarm == nil {
		return nil
	}
	select {
	case <-e.warmed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run runs one snippet. Cancelling ctx kills the run. The error is non-nil only
// when the service could not run the snippet (a failing snippet is a Result);
// the caller decides whether to log it (the adapters' runerror, the API), so
// it is logged once.
func (e *Executor) Run(ctx context.Context, req executor.Request) (executor.Result, error) {
	if n := int64(len(req.Code) + len(req.Stdin)); n > e.cfg.MaxCodeBytes {
		return executor.Result{}, executor.Errorf(executor.ErrTooLarge, "snippet and stdin are %d bytes, over the limit of %d bytes", n, e.cfg.MaxCodeBytes)
	}
	if err := checkFiles(req.Files, max(e.cfg.MaxFiles, 0), e.cfg.MaxFilesBytes); err != nil {
		return executor.Result{}, err
	}
	if err := ctx.Err(); err != nil {
		return executor.Result{}, &executor.Error{Code: executor.ErrCanceled, Message: "run canceled", Err: err}
	}
	alone := e.running.Add(1) == 1
	defer e.running.Add(-1)
	lim := e.limits(req)
	fs, pooled := e.route(req.Code)
	if pooled != nil && lim == e.defaultLimits() {
		if p := pooled.take(ctx, alone); p != nil {
			res, err := p.run(ctx, req)
			if !errors.Is(err, errStale) {
				return res, err
			}
		}
	}
	p, err := e.start(ctx, e.plan, lim, fs.spawn)
	if err != nil {
		return executor.Result{}, err
	}
	res, err := p.run(ctx, req)
	if p.forked() && errors.Is(err, errStale) {
		// The fork server died under the run: a sandbox of its own takes it.
		if p, err = spawn(ctx, e.plan, lim, e.cfg.KeepBytes, e.cfg.MaxOutputBytes); err != nil {
			return executor.Result{}, err
		}
		return p.run(ctx, req)
	}
	return res, err
}

// start starts a sandbox: with fork (the fork server's spawn, or prefork
// for the pool) while there is a fork server, else, or when the fork
// fails, from scratch with pl.
func (e *Executor) start(ctx context.Context, pl *plan, lim limits, fork starter) (*proc, error) {
	if e.fork != nil {
		p, err := fork(ctx, lim, e.cfg.KeepBytes, e.cfg.MaxOutputBytes)
		if err == nil || ctx.Err() != nil {
			return p, err
		}
		if !errors.Is(err, errForkServerDown) {
			e.log.Warn("a fork of the fork server failed; the sandbox starts from scratch", "err", err)
		}
	}
	return spawn(ctx, pl, lim, e.cfg.KeepBytes, e.cfg.MaxOutputBytes)
}

// route returns the fork server a run of code forks from (see
// forkServer) and the pool it takes a sandbox from, if any: the pool's
// sandboxes are forks of the plain fork server (or started from
// scratch); a snippet for the preloaded one takes the plots' pool's, else
// is forked from it on demand.
func (e *Executor) route(code string) (*forkServer, *pool) {
	e.mu.Lock()
	preload, pre, plots := e.cfg.Preload, e.preloaded, e.plots
	e.mu.Unlock()
	// The scan of the code is outside the lock: it is the length of the
	// code, and every run, Ready and Isolation take the lock.
	if pre != nil && preload.uses(code) && pre.up() {
		return pre, plots
	}
	return e.fork, e.pool
}

// forkServer returns the fork server a run forks from: the preloaded one
// when preloaded is asked for and it is up, else the plain one (nil when
// there is none; e.start then starts from scratch).
func (e *Executor) forkServer(preloaded bool) *forkServer {
	e.mu.Lock()
	pre := e.preloaded
	e.mu.Unlock()
	if preloaded && pre != nil && pre.up() {
		return pre
	}
	return e.fork
}

// newForkServers starts the fork servers of pl unless cfg disables them:
// the plain one, and with cfg.Preload's modules the preloaded one, each
// verified with the canary run through a fork. plain is nil where no fork
// server can run, preloaded where there is no preload or it cannot start
// (the plain one then forks every run); the report says which run.
func newForkServers(ctx context.Context, cfg Config, pl *plan) (plain, preloaded *forkServer, rep ForkServerReport) {
	plain, rep = newPlainForkServer(ctx, cfg, pl)
	if plain == nil {
		return nil, nil, rep
	}
	preloaded, rep = newPreloadedForkServer(ctx, cfg, pl)
	return plain, preloaded, rep
}

// forkDetail is the report's detail of an active fork server.
const forkDetail = "each run is a fork of a sandboxed python that never runs user code, in namespaces of its own; canary run through a fork verified every layer"

// newPlainForkServer starts the plain fork server of pl, unless cfg
// disables it; nil where none can run, and the report says why.
func newPlainForkServer(ctx context.Context, cfg Config, pl *plan) (*forkServer, ForkServerReport) {
	if cfg.DisableForkServer {
		return nil, ForkServerReport{Detail: "off (RUNBLOCK_FORKSERVER=off): each run starts python from scratch"}
	}
	plain, err := verifiedForkServer(ctx, cfg, pl, nil)
	if err != nil {
		return nil, ForkServerReport{Detail: "unavailable, each run starts python from scratch: " + err.Error()}
	}
	return plain, ForkServerReport{Active: true, Detail: forkDetail}
}

// newPreloadedForkServer starts the fork server with cfg.Preload's modules
// beside the plain one; nil where it cannot start (the plain one then
// forks every run). The report is of both.
func newPreloadedForkServer(ctx context.Context, cfg Config, pl *plan) (*forkServer, ForkServerReport) {
	if len(cfg.Preload.Modules) == 0 {
		return nil, ForkServerReport{Active: true, Detail: forkDetail + "; one fork server, " + cfg.Preload.String()}
	}
	preloaded, err := verifiedForkServer(ctx, cfg, pl, cfg.Preload.Modules)
	if err != nil {
		if ctx.Err() == nil {
			cfg.Logger.Warn("the preloaded fork server cannot start; the plain one forks every run", "preload", cfg.Preload.Modules, "err", err)
		}
		return nil, ForkServerReport{Active: true, Detail: forkDetail + "; one fork server, nothing preloaded: the one with " +
			strings.Join(cfg.Preload.Modules, ", ") + " could not start (" + err.Error() + ")"}
	}
	return preloaded, ForkServerReport{Active: true, Preloaded: cfg.Preload.Modules, Detail: forkDetail +
		"; two fork servers: a plain one (nothing preloaded) forks plain snippets and the pool, a preloaded one (" +
		cfg.Preload.String() + ") forks sessions and snippets that import them"}
}

// verifiedForkServer starts a fork server of pl with preload imported and
// verifies it with the canary run through a fork.
func verifiedForkServer(ctx context.Context, cfg Config, pl *plan, preload []string) (*forkServer, error) {
	fs, err := startForkServer(ctx, pl, preload, cfg.Logger)
	if err != nil {
		return nil, err
	}
	layers, err := canary(ctx, cfg, pl, fs.spawn)
	if err == nil {
		if bad := unverified(layers); len(bad) > 0 {
			err = fmt.Errorf("not enforced in a fork: %s", strings.Join(bad, ", "))
		}
	}
	if err != nil {
		fs.close()
		return nil, fmt.Errorf("canary run through a fork: %w", err)
	}
	return fs, nil
}

func (e *Executor) defaultLimits() limits {
	return limits{Timeout: e.cfg.Timeout, Memory: e.cfg.MemoryBytes}
}

func (e *Executor) limits(req executor.Request) limits {
	lim := e.defaultLimits()
	if req.Timeout > 0 {
		lim.Timeout = req.Timeout
	}
	if req.MemoryBytes > 0 {
		lim.Memory = max(req.MemoryBytes, executor.MinMemoryBytes)
	}
	return lim
}

// Close stops what warm is starting, the pools, if any (destroying their
// idle sandboxes), and the fork servers.
func (e *Executor) Close() {
	if e.stopWarm != nil {
		e.stopWarm()
		<-e.warmed
	}
	for _, p := range []*pool{e.pool, e.plots} {
		if p != nil {
			p.close()
		}
	}
	for _, fs := range []*forkServer{e.fork, e.preloaded} {
		if fs != nil {
			fs.close()
		}
	}
}

// Ready is nil while the executor serves runs as configured, and says why
// not while its fork server is down (stuck or dead, being started again):
// runs then start from scratch, slower, so a service reports itself not
// ready meanwhile.
//
// It does not wait for warm: while the preloaded fork server starts, the
// plain one answers every run.
func (e *Executor) Ready() error {
	e.mu.Lock()
	pre := e.preloaded
	e.mu.Unlock()
	for _, fs := range []*forkServer{e.fork, pre} {
		if fs != nil && !fs.up() {
			return errForkServerDown
		}
	}
	return nil
}

// Isolation reports the active tier and layers.
func (e *Executor) Isolation() Report {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.report
}

// Packages lists the notable packages a snippet can import, with their
// versions, as doctor does: those listed at New with
// Config.ListPackages, else listed now.
func (e *Executor) Packages(ctx context.Context) ([]Package, error) {
	if e.cfg.ListPackages {
		return e.packages, e.packagesErr
	}
	return packages(ctx, e.cfg, e.plan)
}

// Isolation tiers.
const (
	TierFull       = "full"       // every layer active and verified
	TierReduced    = "reduced"    // some kernel layers missing; see Report.Layers
	TierUnisolated = "unisolated" // guard prelude only (RUNBLOCK_ALLOW_UNISOLATED)
	TierNone       = "unavailable"
)

// Report describes the isolation in force.
type Report struct {
	Tier   string  `json:"tier"` // "full", "reduced", "unisolated"
	Python string  `json:"python"`
	Layers []Layer `json:"layers"`
	// Packages are the notable packages a snippet can import (Doctor only).
	Packages []Package `json:"packages,omitempty"`
	// FontCache is matplotlib's prebuilt font cache, "" without matplotlib.
	FontCache string `json:"font_cache,omitempty"`
	// ForkServer says whether runs are forks of the fork server, and why
	// not when they are not.
	ForkServer ForkServerReport `json:"fork_server"`
	// FailedTiers are the stronger tiers tried first that do not work
	// here, and why: what stands between this machine and the full tier.
	FailedTiers []FailedTier `json:"failed_tiers,omitempty"`
}

// FailedTier is a tier the probe tried and could not use.
type FailedTier struct {
	Layers string `json:"layers"` // such as "landlock+namespaces+seccomp"
	Reason string `json:"reason"`
}

// ForkServerReport describes the fork server: Active when runs are forks
// of it (its canary run verified), else Detail says why runs start from
// scratch.
type ForkServerReport struct {
	Active bool   `json:"active"`
	Detail string `json:"detail"`
	// Preloaded are the modules the preloaded fork server imported before
	// forking (RUNBLOCK_PRELOAD); empty when only the plain one runs.
	Preloaded []string `json:"preloaded,omitempty"`
}

// Package is an importable distribution and its version.
type Package struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

func (r Report) off() []string {
	var off []string
	for _, l := range r.Layers {
		if !l.Active || !l.Verified {
			off = append(off, l.Name)
		}
	}
	return off
}

// Layer is one isolation layer.
type Layer struct {
	Name     string `json:"name"`
	Active   bool   `json:"active"`
	Verified bool   `json:"verified"`
	Detail   string `json:"detail,omitempty"`
}

// Doctor probes every isolation layer with canary runs and reports them,
// with the python found, without starting an executor. The tier is the one
// New would pick ("unavailable" when none is allowed); err says why.
// It also lists the notable packages importable in a sandbox.
func Doctor(ctx context.Context, cfg Config) (Report, error) {
	cfg = cfg.withDefaults()
	pl, report, err := probe(ctx, cfg)
	if err != nil {
		return report, err
	}
	report.Packages, err = packages(ctx, cfg, pl)
	cfg.Preload = resolvePreload(ctx, cfg, pl)
	plain, preloaded, fr := newForkServers(ctx, cfg, pl)
	report.ForkServer = fr
	for _, fs := range []*forkServer{plain, preloaded} {
		if fs != nil {
			fs.close()
		}
	}
	return report, err
}
