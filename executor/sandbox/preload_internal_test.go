//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/internal/eventually"
	"github.com/runblock/runblock/internal/syncbuf"
)

// TestPreloadUses: the import scan routes a snippet to the preloaded fork
// server when it imports a preloaded module's package, or one known to
// import it, in any form of import statement, and only then.
func TestPreloadUses(t *testing.T) {
	plot := Preload{Modules: []string{"numpy", "matplotlib.pyplot"}}
	tests := []struct {
		name    string
		preload Preload
		code    string
		want    bool
	}{
		{"plain", plot, "print('hello')", false},
		{"import", plot, "import numpy as np\nprint(np.pi)", true},
		{"dotted", plot, "import matplotlib.pyplot as plt", true},
		{"from", plot, "from matplotlib import pyplot", true},
		{"from dotted", plot, "from numpy.linalg import norm", true},
		{"in a list", plot, "import os, sys, numpy", true},
		{"indented", plot, "def f():\n    import numpy\n    return numpy", true},
		{"importer", plot, "import pandas as pd", true},
		{"importer from", plot, "from sklearn.linear_model import LinearRegression", true},
		{"seaborn", Preload{Modules: []string{"matplotlib.pyplot"}}, "import seaborn", true},
		{"other packages", plot, "import os, json\nfrom collections import Counter", false},
		{"a prefix only", plot, "import numpyish\nfrom numpy_extra import x", false},
		{"not an import", plot, "important = 1\nfromage = 'numpy'\nx = 'import'", false},
		{"a comment", plot, "# import numpy\nprint(1)", false},
		{"after a comment", plot, "import os  # numpy later", false},
		{"after a semicolon", plot, "x = 1; import numpy", false},
		{"relative", plot, "from . import numpy", false},
		{"__import__", plot, "np = __import__('numpy')", false},
		{"nothing preloaded", Preload{}, "import numpy", false},
		{"other preload", Preload{Modules: []string{"json"}}, "import json", true},
		{"other preload, no importers", Preload{Modules: []string{"json"}}, "import pandas", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.preload.uses(tt.code); got != tt.want {
				t.Errorf("%v.uses(%q) = %v, want %v", tt.preload.Modules, tt.code, got, tt.want)
			}
		})
	}
}

// inPreloaded is a snippet that imports the preloaded fractions (which no
// fork server warms), and says whether it was imported before the
// snippet's first line.
const inPreloaded = "import sys\nprint('fractions' in sys.modules)\nimport fractions"

// TestForkServers: with a preload, two fork servers run, the plain one
// forking plain snippets and the preloaded one snippets that import a
// preload (and sessions); without one, only the plain one runs.
func TestForkServers(t *testing.T) {
	e := newForking(t, Config{Preload: Preload{Modules: []string{"fractions"}}})
	if e.fork == nil || e.preloaded == nil {
		t.Fatalf("fork servers: plain %v, preloaded %v: want both (%s)", e.fork != nil, e.preloaded != nil, e.report.ForkServer.Detail)
	}
	if r := e.report.ForkServer; !r.Active || !strings.Contains(r.Detail, "two fork servers") || !strings.Contains(r.Detail, "preloaded: fractions") || len(r.Preloaded) != 1 {
		t.Errorf("fork server report %+v", r)
	}
	if e.fork.preload != "" || e.preloaded.preload != "fractions" {
		t.Errorf("plain one preloads %q, preloaded one %q", e.fork.preload, e.preloaded.preload)
	}
	for code, want := range map[string]string{
		"import sys\nprint('fractions' in sys.modules)": "False\n",
		inPreloaded: "True\n",
	} {
		if res := runVia(t, e, executor.Request{Code: code}); res.Stdout != want {
			t.Errorf("%q printed %q, stderr %q: want %q", code, res.Stdout, res.Stderr, want)
		}
	}
	s, err := e.StartSession(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	cell, err := s.Run(context.Background(), executor.Request{Code: "import sys\nprint('fractions' in sys.modules)"})
	if err != nil || cell.Stdout != "True\n" {
		t.Errorf("a session's cell: %+v %v: want it forked from the preloaded one", cell, err)
	}

	plain := newForking(t, Config{})
	if plain.fork == nil || plain.preloaded != nil || !strings.Contains(plain.report.ForkServer.Detail, "one fork server, nothing preloaded") {
		t.Errorf("without a preload: plain %v, preloaded %v, %+v", plain.fork != nil, plain.preloaded != nil, plain.report.ForkServer)
	}
}

// TestPreloadedForkServerDown: while the preloaded fork server is down,
// the snippets that import a preload are forks of the plain one (slower,
// not failing), and the executor says it is not ready; it comes back.
func TestPreloadedForkServerDown(t *testing.T) {
	e := newForking(t, Config{Preload: Preload{Modules: []string{"fractions"}}})
	if e.preloaded == nil {
		t.Fatalf("no preloaded fork server: %s", e.report.ForkServer.Detail)
	}
	live := e.preloaded.current()
	_ = e.preloaded.stuck(live, context.DeadlineExceeded)
	if e.Ready() == nil {
		t.Error("ready with the preloaded fork server down")
	}
	if res := runForked(t, e, executor.Request{Code: inPreloaded}); res.Stdout != "False\n" {
		t.Errorf("stdout %q, stderr %q: want a fork of the plain fork server", res.Stdout, res.Stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if !eventually.Poll(ctx, func() bool { return e.Ready() == nil }) {
		t.Fatal("the preloaded fork server did not come back")
	}
	if res := runVia(t, e, executor.Request{Code: inPreloaded}); res.Stdout != "True\n" {
		t.Errorf("stdout %q, stderr %q: want a fork of the preloaded fork server again", res.Stdout, res.Stderr)
	}
}

// runVia runs req through e.Run, as a service does.
func runVia(t *testing.T, e *Executor, req executor.Request) executor.Result {
	t.Helper()
	res, err := e.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("Run(%.60q): %v", req.Code, err)
	}
	return res
}

// TestPreloadedForkServerCannotStart: where the preloaded fork server
// cannot start (here its preload is no valid argument), the plain one
// forks every run, the report and the log say why, and Run still serves
// the snippets that import the preload.
func TestPreloadedForkServerCannotStart(t *testing.T) {
	e := newForking(t, Config{})
	var logs syncbuf.Buffer
	cfg := e.cfg
	cfg.Preload = Preload{Modules: []string{"fractions", "bad\x00name"}}
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	plain, preloaded, r := newForkServers(context.Background(), cfg, e.plan)
	if plain == nil || preloaded != nil {
		t.Fatalf("plain %v, preloaded %v: want the plain one only (%+v)", plain != nil, preloaded != nil, r)
	}
	t.Cleanup(plain.close)
	if !r.Active || !strings.Contains(r.Detail, "one fork server, nothing preloaded: the one with fractions, bad") || !strings.Contains(r.Detail, "could not start") || len(r.Preloaded) != 0 {
		t.Errorf("report %+v", r)
	}
	if !strings.Contains(logs.String(), "the preloaded fork server cannot start") {
		t.Errorf("logs %q: want a warning", logs.String())
	}
	e2 := &Executor{cfg: cfg, log: cfg.Logger, plan: e.plan, fork: plain}
	if res := runForked(t, e2, executor.Request{Code: inPreloaded}); res.Stdout != "False\n" {
		t.Errorf("stdout %q, stderr %q: want a fork of the plain one", res.Stdout, res.Stderr)
	}
}

// TestPlotPoolRehearses: a plot taken by the plots' pool, a pre-forked
// child of the preloaded fork server that drew a figure before it said
// "ready", faults a small part of what the same plot faults in a fork made
// on demand (counted by getrusage, not timed), and sees nothing of that
// figure: no figure open, its own numbered 1, no file but its own.
func TestPlotPoolRehearses(t *testing.T) {
	const debian = "/usr/bin/python3"
	if err := exec.Command(debian, "-c", "import numpy, matplotlib").Run(); err != nil {
		t.Skipf("%s lacks numpy or matplotlib (apt-get install python3-matplotlib): %v", debian, err)
	}
	e, err := New(context.Background(), Config{Python: debian, Pool: 1, Preload: DefaultPreload})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	if err := e.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	if e.preloaded == nil || e.plots == nil {
		t.Fatalf("preloaded fork server %v, plots' pool %v: want both (%s)", e.preloaded != nil, e.plots != nil, e.report.ForkServer.Detail)
	}
	const plot = `import os, resource
import numpy as np
import matplotlib.pyplot as plt
print(plt.get_fignums(), sorted(os.listdir(".")))
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
x = np.linspace(0, 6.3, 100)
plt.plot(x, np.sin(x))
plt.title("sin")
plt.savefig("sin.png")
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before, plt.gcf().number)`
	// A plot's minor faults, and what it found before it drew.
	faults := func(res executor.Result, err error) (int, string) {
		t.Helper()
		if err != nil || !res.Success {
			t.Fatalf("%+v %v", res, err)
		}
		var files []string
		for _, f := range res.Files {
			files = append(files, f.Path)
		}
		slices.Sort(files)
		before, after, _ := strings.Cut(strings.TrimSpace(res.Stdout), "\n")
		var n int
		if _, err := fmt.Sscan(after, &n); err != nil || !strings.HasPrefix(before, "[] ") || !strings.HasSuffix(after, " 1") || fmt.Sprint(files) != "[figure-1.png sin.png]" {
			t.Fatalf("stdout %q, files %v: want no figure open before, figure 1, its two PNGs", res.Stdout, files)
		}
		return n, before
	}
	pooled, found := faults((<-e.plots.idle).run(context.Background(), executor.Request{Code: plot}))
	onDemand, want := faults(runForked(t, e, executor.Request{Code: plot}), nil)
	t.Logf("minor faults of a plot: %d pre-forked from the plots' pool, %d forked on demand", pooled, onDemand)
	if found != want {
		t.Errorf("the pooled plot found %s, one forked on demand %s", found, want)
	}
	if pooled*5 > onDemand {
		t.Errorf("a pooled plot faulted %d times, one forked on demand %d: want under a fifth", pooled, onDemand)
	}
}

// TestNewAnswersBeforePreload: New returns once the plain fork server is
// up, with the preloaded one still starting (held back here): the
// executor is ready, answers a run at once, a snippet that imports the
// preload too (from the plain one), and Warm waits for the preloaded one,
// which takes such snippets from then on.
func TestNewAnswersBeforePreload(t *testing.T) {
	gate := make(chan struct{})
	e := newGated(t, gate)
	if err := e.Ready(); err != nil {
		t.Errorf("not ready while the preloaded fork server starts: %v", err)
	}
	select {
	case <-e.warmed:
		t.Fatal("warm ended before its gate opened")
	default:
	}
	if r := e.Isolation().ForkServer; !r.Active || !strings.Contains(r.Detail, "is starting") || len(r.Preloaded) != 0 {
		t.Errorf("report while it starts: %+v", r)
	}
	if res := runVia(t, e, executor.Request{Code: inPreloaded}); res.Stdout != "False\n" {
		t.Errorf("stdout %q, stderr %q: want a fork of the plain one while the preloaded one starts", res.Stdout, res.Stderr)
	}
	close(gate)
	if err := e.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := e.Isolation().ForkServer; !strings.Contains(r.Detail, "two fork servers") || len(r.Preloaded) != 1 {
		t.Errorf("report once warm: %+v", r)
	}
	if res := runVia(t, e, executor.Request{Code: inPreloaded}); res.Stdout != "True\n" {
		t.Errorf("stdout %q, stderr %q: want a fork of the preloaded one once warm", res.Stdout, res.Stderr)
	}
}

// TestCloseStopsWarm: Close while the preloaded fork server has yet to
// start stops its start and returns; Warm then returns too.
func TestCloseStopsWarm(t *testing.T) {
	e := newGated(t, make(chan struct{}))
	e.Close()
	if err := e.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	if e.preloaded != nil || e.plots != nil {
		t.Errorf("preloaded fork server %v, plots' pool %v after Close: want neither", e.preloaded != nil, e.plots != nil)
	}
}

// newGated is an executor preloading fractions, with a pool, whose warm
// waits for gate.
func newGated(t *testing.T, gate <-chan struct{}) *Executor {
	t.Helper()
	e, err := New(context.Background(), Config{Pool: 1, Preload: Preload{Modules: []string{"fractions"}}, warmGate: gate})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	if e.report.Tier != TierFull || e.fork == nil {
		MissingFullTier(t, "needs the fork server of the full tier, have %q: %s", e.report.Tier, e.report.ForkServer.Detail)
	}
	return e
}

// TestPackagesListedAtNew: with ListPackages, New lists the packages, so
// Packages answers without starting a sandbox (here with its context
// already ended).
func TestPackagesListedAtNew(t *testing.T) {
	e, err := New(context.Background(), Config{ListPackages: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	want, err := packages(context.Background(), e.cfg, e.plan)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got, err := e.Packages(ctx)
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("Packages = %v, %v: want %v listed at New", got, err, want)
	}
}

// TestPreloadCheckEndedByClose: an executor closed while it checks
// whether the interpreter has the modules to preload (runblock exec is
// often done by then) preloads nothing and logs nothing: it printed a
// warning that the check was canceled after every quick exec.
func TestPreloadCheckEndedByClose(t *testing.T) {
	pl := guardPlan(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var logs bytes.Buffer
	cfg := Config{Preload: DefaultPreload, Logger: slog.New(slog.NewTextHandler(&logs, nil))}.withDefaults()
	if p := resolvePreload(ctx, cfg, pl); len(p.Modules) != 0 {
		t.Errorf("preloads %v", p.Modules)
	}
	if logs.Len() != 0 {
		t.Errorf("logged: %s", logs.String())
	}
}
