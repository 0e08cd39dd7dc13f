package sandbox

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox/internal/policy"
)

// TestLockdownOrder: a sandbox of the full tier takes every lockdown step
// in the one order of policy.Lockdown, on the cold path (its init's steps
// from its report, then its guard's from the ready line) and on the fork
// path (the forked python's, from its ready line), as each recorded the
// steps while it took them; and the canary's lockdown-order layer, which
// runblock doctor shows, passes that order and fails a swapped one. The
// sandboxes start from the full tier's plan, not through the canary run,
// which would drop to a weaker tier (or no fork server) when the order is
// wrong.
func TestLockdownOrder(t *testing.T) {
	if len(tiers) == 0 {
		t.Skip("no kernel layers on this OS")
	}
	ctx := context.Background()
	py, err := findPython(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	pl, err := newPlan(py, tiers[0])
	if err != nil {
		MissingFullTier(t, "no plan of the full tier here: %v", err)
	}
	cfg := Config{}.withDefaults()
	lim := limits{Timeout: cfg.Timeout, Memory: cfg.MemoryBytes}
	fork := func(ctx context.Context, lim limits, keep, maxOutput int64) (*proc, error) {
		fs, err := startForkServer(ctx, pl, nil, slog.New(slog.DiscardHandler))
		if err != nil {
			return nil, err
		}
		t.Cleanup(fs.close)
		return fs.spawn(ctx, lim, keep, maxOutput)
	}
	for _, path := range []struct {
		name  string
		start starter
	}{{"cold", pl.start}, {"fork", fork}} {
		t.Run(path.name, func(t *testing.T) {
			p, err := path.start(ctx, lim, cfg.KeepBytes, cfg.MaxOutputBytes)
			if err != nil {
				MissingFullTier(t, "the full tier cannot start a sandbox here: %v", err)
			}
			if p.forked() != (path.name == "fork") {
				t.Fatalf("the %s path started a sandbox with forked() %v", path.name, p.forked())
			}
			res, err := p.run(ctx, executor.Request{Code: "print('locked')"})
			if err != nil || !res.Success || res.Stdout != "locked\n" {
				t.Fatalf("run: %v, %+v", err, res)
			}
			got := p.lockdown()
			if !slices.Equal(got, policy.Lockdown) {
				t.Fatalf("the sandbox took the lockdown steps %q, not policy.Lockdown's %q", got, policy.Lockdown)
			}
			if l := lockdownLayer(got); !l.Active || !l.Verified {
				t.Errorf("the canary's layer fails the recorded order: %+v", l)
			}
			swapped := slices.Clone(got)
			swapped[1], swapped[2] = swapped[2], swapped[1]
			if l := lockdownLayer(swapped); l.Verified {
				t.Errorf("the canary's layer passes the swapped order %q: %+v", swapped, l)
			}
		})
	}
}
