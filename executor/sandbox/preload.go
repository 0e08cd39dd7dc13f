package sandbox

import (
	"context"
	"strings"
)

// Preload names modules to import once, before the runs that use them.
type Preload struct {
	// Modules are imported in order, such as numpy and matplotlib.pyplot.
	Modules []string
	// Auto (RUNBLOCK_PRELOAD=auto, the default) imports Modules in the fork
	// server only, and only where a snippet can import every one of them:
	// a preloaded fork costs a run nothing, while a pooled sandbox started
	// from scratch would import them again for every run.
	Auto bool

	// lacking, set by resolvePreload, names the modules Auto found
	// missing, for the report.
	lacking []string
}

// DefaultPreload is RUNBLOCK_PRELOAD's default: a plot's numpy and
// matplotlib are already imported in every fork, where the interpreter has
// them.
var DefaultPreload = Preload{Modules: []string{"numpy", "matplotlib.pyplot"}, Auto: true}

// resolvePreload returns what the fork server will import: cfg.Preload,
// with Auto's modules dropped unless a snippet can import them all. An
// explicit module a snippet cannot import is logged and left to the
// guard, which skips it.
func resolvePreload(ctx context.Context, cfg Config, pl *plan) Preload {
	p := cfg.Preload
	if len(p.Modules) == 0 || (p.Auto && cfg.DisableForkServer) {
		p.Modules = nil
		return p
	}
	missing, err := missingModules(ctx, cfg, pl, p.Modules)
	switch {
	case p.Auto && (err != nil || len(missing) > 0):
		p.lacking = missing
		if err != nil {
			p.lacking = p.Modules
			cfg.Logger.Warn("RUNBLOCK_PRELOAD=auto: cannot tell whether the interpreter has the modules; nothing preloaded", "modules", p.Modules, "err", err)
		}
		p.Modules = nil
	case err != nil || len(missing) > 0:
		cfg.Logger.Warn("RUNBLOCK_PRELOAD names modules a snippet cannot import; they are skipped", "missing", missing, "err", err)
	}
	return p
}

// fromScratch is what a pooled sandbox started from scratch imports before
// the hand-over, for the guard's argument.
func (p Preload) fromScratch() string {
	if p.Auto {
		return ""
	}
	return strings.Join(p.Modules, ",")
}

// String says what the fork server imported, for the fork server's report.
func (p Preload) String() string {
	switch {
	case len(p.Modules) > 0 && p.Auto:
		return "preloaded: " + strings.Join(p.Modules, ", ") + " (RUNBLOCK_PRELOAD=auto, the interpreter has them)"
	case len(p.Modules) > 0:
		return "preloaded: " + strings.Join(p.Modules, ", ")
	case p.Auto && len(p.lacking) > 0:
		return "nothing preloaded (RUNBLOCK_PRELOAD=auto: the interpreter lacks " + strings.Join(p.lacking, ", ") + ")"
	default:
		return "nothing preloaded"
	}
}
