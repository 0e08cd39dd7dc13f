package sandbox

import (
	"context"
	"regexp"
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
	if err != nil && ctx.Err() != nil {
		// Closed before the check ended (a one-shot exec is often done by
		// then): nothing is preloaded, and nothing is wrong.
		p.Modules = nil
		return p
	}
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

// importers are packages known to import a preloadable package when
// imported, by that package's name: a snippet importing one of them is
// routed as if it imported the package itself. The list is short on
// purpose: a package missing from it only costs its snippets the
// preload's speed.
var importers = map[string][]string{
	"numpy":      {"pandas", "scipy", "sklearn", "seaborn", "statsmodels", "skimage", "pylab"},
	"matplotlib": {"seaborn", "pylab"},
}

// importStmt matches an import statement at the start of a line (after
// indentation): group 1 is the package of `from x import`, group 2 the
// names of `import x, y.z as w`.
var importStmt = regexp.MustCompile(`(?m)^[ \t]*(?:from[ \t]+([A-Za-z_]\w*)|import[ \t]+([^\n#;]+))`)

// uses reports whether code imports one of the preloaded modules' top-level
// packages, or a package of importers that imports one: such a snippet
// runs in a fork of the preloaded fork server, any other in one of the
// plain fork server, whose forks are cheaper to make and to tear down.
// It is a scan of the import statements, not a parse: a snippet that
// imports otherwise (__import__, importlib, exec, an import after a `;`)
// is misrouted to the plain one, and one that names a package in a string
// that looks like an import to the preloaded one; either way it runs the
// same, only slower or faster.
func (p Preload) uses(code string) bool {
	if len(p.Modules) == 0 {
		return false
	}
	pkgs := map[string]bool{}
	for _, m := range p.Modules {
		top, _, _ := strings.Cut(m, ".")
		pkgs[top] = true
		for _, imp := range importers[top] {
			pkgs[imp] = true
		}
	}
	for _, m := range importStmt.FindAllStringSubmatch(code, -1) {
		if m[1] != "" {
			if pkgs[m[1]] {
				return true
			}
			continue
		}
		for name := range strings.SplitSeq(m[2], ",") {
			f := strings.Fields(strings.Trim(strings.TrimSpace(name), "()\\"))
			if len(f) == 0 {
				continue
			}
			if top, _, _ := strings.Cut(f[0], "."); pkgs[top] {
				return true
			}
		}
	}
	return false
}
