package executor

import "context"

// OutputFunc receives a running snippet's output so far: what the runner
// keeps of stdout and stderr (the prefix the result will hold), each call
// with all of it, not a delta. The runner calls it from a goroutine of its
// own whenever the kept output grew, never holding up the snippet's
// output: a slow OutputFunc misses the intermediate states and gets the
// latest. It must not call back into the runner.
type OutputFunc func(stdout, stderr string)

type outputKey struct{}

// WithOutput returns ctx carrying fn, which a Runner that can show live
// output (the sandbox's runs and the cells of its live sessions) calls
// while the run of a Request under ctx lasts; it stops before Run
// returns. The remote runner hands it what the executor streams. Runners
// that cannot show live output ignore it. A nil fn hides a run from the
// fn ctx carried.
func WithOutput(ctx context.Context, fn OutputFunc) context.Context {
	return context.WithValue(ctx, outputKey{}, fn)
}

// OutputOf returns the OutputFunc ctx carries, nil when none.
func OutputOf(ctx context.Context) OutputFunc {
	fn, _ := ctx.Value(outputKey{}).(OutputFunc)
	return fn
}
