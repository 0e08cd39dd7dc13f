package answer

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/runblock/runblock/bots/internal/progress"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/formatting"
)

// Live output: a run still going LiveGrace after it started shows its
// output so far in its reply ("Running · 3 s" and the output, rendered
// like the result), edited at most once a LiveEvery and only when the
// output grew; the result then replaces it in the same message. A run
// that ends within the grace, or that writes nothing, is answered with
// one post as before.
const (
	LiveGrace = 2 * time.Second
	LiveEvery = time.Second
)

// Clock is the time the live view reads: Now, and At, which fires once
// the clock reaches t (at once when it has). Tests give a fake one
// (Config.Clock); nil is the real clock.
type Clock interface {
	Now() time.Time
	At(t time.Time) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                  { return time.Now() }
func (realClock) At(t time.Time) <-chan time.Time { return time.After(time.Until(t)) }

// live shows one run's output so far in its reply. It takes the reply
// over from the progress watcher at its first edit, so that the two never
// edit the message at once; stop returns the reply's id either way.
type live[S any] struct {
	f    *Flow[S]
	ctx  context.Context
	log  *slog.Logger
	src  S
	ex   formatting.Extraction
	prog *progress.Watcher

	mu       sync.Mutex
	started  time.Time // when the run started; zero while queued
	out, err string
	version  int // of out and err

	wake chan struct{} // one pending signal: something changed
	quit chan struct{}
	done chan struct{}
	id   string // the reply, once taken over
	took bool
}

// watchLive starts the live view of a run of ex for src, whose progress
// prog shows until then. stop must be called.
func (f *Flow[S]) watchLive(ctx context.Context, log *slog.Logger, src S, ex formatting.Extraction, prog *progress.Watcher) *live[S] {
	l := &live[S]{f: f, ctx: ctx, log: log, src: src, ex: ex, prog: prog,
		wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go l.loop()
	return l
}

// progress is the job's Progress callback: prog's, and the run's start.
func (l *live[S]) progress(pr executor.Progress) {
	l.prog.Update(pr)
	if pr.State != executor.StateRunning {
		return
	}
	l.mu.Lock()
	if l.started.IsZero() {
		l.started = l.f.clock.Now()
	}
	l.mu.Unlock()
	l.signal()
}

// output is the run's executor.OutputFunc; it never blocks.
func (l *live[S]) output(stdout, stderr string) {
	l.mu.Lock()
	l.out, l.err = stdout, stderr
	l.version++
	l.mu.Unlock()
	l.signal()
}

func (l *live[S]) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *live[S]) loop() {
	defer close(l.done)
	shown := 0 // the version in the reply
	var last time.Time
	for {
		select {
		case <-l.quit:
			return
		case <-l.wake:
		}
		for {
			l.mu.Lock()
			started, version, out, errs := l.started, l.version, l.out, l.err
			l.mu.Unlock()
			if started.IsZero() || version == shown {
				break
			}
			at := started.Add(LiveGrace)
			if !last.IsZero() && last.Add(LiveEvery).After(at) {
				at = last.Add(LiveEvery)
			}
			if at.After(l.f.clock.Now()) {
				select {
				case <-l.quit:
					return
				case <-l.f.clock.At(at):
				}
				continue // the output may have grown meanwhile
			}
			last = l.f.clock.Now()
			if !l.show(out, errs, last.Sub(started)) {
				return
			}
			shown = version
		}
	}
}

// show puts the output so far in the reply, posting it when the run has
// none yet; false when that failed, which ends the live view (the result
// still comes).
func (l *live[S]) show(out, errs string, took time.Duration) bool {
	if !l.took {
		l.id, l.took = l.prog.Stop(), true
	}
	opts := l.f.cfg.Render
	opts.Running = true
	text := formatting.RenderRun(l.f.cfg.Platform, l.ex, executor.Result{Stdout: out, Stderr: errs, Success: true, Duration: took}, opts).Text
	if l.id == "" {
		s, err := l.f.p.Send(l.ctx, l.src, Record[S]{}, Reply{Text: text})
		if err != nil {
			l.log.Warn("posting the output so far", "err", err)
			return false
		}
		l.id = s.ID
		return s.ID != "" // a reply that cannot be edited is not posted again
	}
	if _, err := l.f.p.Send(l.ctx, l.src, Record[S]{Src: l.src, Reply: l.id}, Reply{Text: text}); err != nil {
		l.log.Warn("showing the output so far", "err", err)
		return false
	}
	return true
}

// stop ends the live view once the run has ended and returns the id of
// the run's reply ("" for none yet). It may be called more than once.
func (l *live[S]) stop() string {
	select {
	case <-l.done:
	default:
		close(l.quit)
		<-l.done
	}
	if l.took {
		return l.id
	}
	return l.prog.Stop()
}
