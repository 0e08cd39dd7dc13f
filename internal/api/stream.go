package api

import (
	"cmp"
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/wire"
)

// StreamEvery is the least time between two output events of a streamed
// answer (see wire.NDJSON): output that comes faster goes into the next
// one.
const StreamEvery = 100 * time.Millisecond

// wantsStream reports whether r accepts NDJSON (its Accept header names
// it with a q other than 0).
func wantsStream(r *http.Request) bool {
	for _, h := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(h, ",") {
			typ, params, err := mime.ParseMediaType(part)
			if err != nil || typ != wire.NDJSON {
				continue
			}
			q, err := strconv.ParseFloat(cmp.Or(params["q"], "1"), 64)
			return err == nil && q > 0
		}
	}
	return false
}

// stream sends the output of the run of one answer as it comes, from a
// goroutine of its own that stop ends.
type stream struct {
	a      *answer
	cancel context.CancelFunc // ends the run: the client cannot take its output

	mu       sync.Mutex
	running  bool
	out, err string // the run's output so far

	wake chan struct{} // one pending signal: something changed
	quit chan struct{}
	done chan struct{}

	// The loop's until stop, then the answer's.
	header           bool   // the 200 and its headers are sent
	broken           bool   // a write failed: nothing more is sent
	sentOut, sentErr string // the output sent so far
}

// streamRun makes the answer a stream when the client asked for one: it
// returns the context to run job under, job's Progress set, and stop,
// which the handler calls once the run returned, before it answers.
func (a *answer) streamRun(ctx context.Context, job *executor.Job) (context.Context, func()) {
	if !wantsStream(a.r) {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &stream{a: a, cancel: cancel, wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	a.stream = s
	job.Progress = s.progress
	go s.loop()
	return executor.WithOutput(ctx, s.output), func() {
		s.stop()
		cancel()
	}
}

// progress is the job's Progress: the run's start sends the headers.
func (s *stream) progress(p executor.Progress) {
	if p.State != executor.StateRunning {
		return
	}
	s.mu.Lock()
	s.running = true
	s.mu.Unlock()
	s.signal()
}

// output is the run's executor.OutputFunc; it never blocks.
func (s *stream) output(stdout, stderr string) {
	s.mu.Lock()
	s.out, s.err = stdout, stderr
	s.mu.Unlock()
	s.signal()
}

func (s *stream) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *stream) stop() {
	select {
	case <-s.done:
	default:
		close(s.quit)
		<-s.done
	}
}

func (s *stream) loop() {
	defer close(s.done)
	var last time.Time
	for {
		select {
		case <-s.quit:
			return
		case <-s.wake:
		}
		if wait := StreamEvery - time.Since(last); !last.IsZero() && wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-s.quit:
				t.Stop()
				return
			case <-t.C:
			}
		}
		s.mu.Lock()
		running, out, errs := s.running, s.out, s.err
		s.mu.Unlock()
		if !running || s.broken {
			continue
		}
		if !s.header && !s.start() {
			continue
		}
		// Only what extends what was sent goes out: a runner's output so
		// far is the start of its result's, and never shown twice.
		ev := wire.OutputEvent{Event: wire.OutputEventName}
		if strings.HasPrefix(out, s.sentOut) {
			ev.Stdout = out[len(s.sentOut):]
		}
		if strings.HasPrefix(errs, s.sentErr) {
			ev.Stderr = errs[len(s.sentErr):]
		}
		if ev.Stdout == "" && ev.Stderr == "" {
			continue
		}
		if s.send(ev) {
			s.sentOut += ev.Stdout
			s.sentErr += ev.Stderr
			last = time.Now()
		}
	}
}

// start sends the 200 and the stream's headers; false when the client
// did not take them.
func (s *stream) start() bool {
	s.a.setWriteDeadline(0)
	s.writeHeader()
	if err := http.NewResponseController(s.a.ResponseWriter).Flush(); err != nil {
		s.fail(err)
		return false
	}
	return true
}

func (s *stream) writeHeader() {
	h := s.a.Header()
	h.Set("Content-Type", wire.NDJSON)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // proxies such as nginx pass each line on
	s.a.WriteHeader(http.StatusOK)
	s.header = true
}

// send writes ev as a line within its deadline, taking its room in the
// answers' budget. A line that finds no room before its deadline is not
// sent (its output goes in the next one, or in the answer); false then,
// and when the client did not take it.
func (s *stream) send(ev wire.OutputEvent) bool {
	b, err := json.Marshal(ev)
	if err != nil {
		s.a.h.log.Error("encoding an output event", "err", err)
		return false
	}
	b = append(b, '\n')
	n := int64(len(b))
	ctx, cancel := context.WithDeadline(s.a.r.Context(), s.a.deadline(n))
	defer cancel()
	if !s.a.h.answers.take(ctx, n) {
		return false
	}
	defer s.a.h.answers.give(n)
	s.a.setWriteDeadline(n)
	if _, err := s.a.Write(b); err != nil {
		s.fail(err)
		return false
	}
	if err := http.NewResponseController(s.a.ResponseWriter).Flush(); err != nil {
		s.fail(err)
		return false
	}
	return true
}

// fail ends a stream the client does not take, and its run: no one would
// read the result.
func (s *stream) fail(err error) {
	s.a.h.log.Debug("the client did not take its stream: run ended", "path", s.a.r.URL.Path, "err", err)
	s.broken = true
	s.cancel()
}
