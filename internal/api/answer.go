package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/runblock/runblock/executor"
)

// answer is the response to one API request: its one write is bounded in
// time and counted in the bytes of answers in flight (see Config's
// AnswerGrace, AnswerRate and AnswerBytes).
type answer struct {
	http.ResponseWriter
	h      *Handler
	r      *http.Request
	stream *stream // the run's output as it comes, when the client asked (stream.go)
}

// Unwrap is the server's own writer, for http.ResponseController.
func (a *answer) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// write sends v as JSON with status. The answer takes its room in the
// answers' budget before it is encoded (at least what answerSize says of
// it, the rest once encoded), waiting for it until its deadline; then it
// is written within that deadline. Past it the connection is closed and
// the answer freed, whether the client read it or not.
func (a *answer) write(status int, v any) {
	if a.stream != nil && a.stream.broken {
		return
	}
	var est int64
	if s, ok := v.(sized); ok {
		est = s.answerSize()
	}
	ctx, cancel := context.WithDeadline(a.r.Context(), a.deadline(est))
	defer cancel()
	if !a.h.answers.take(ctx, est) {
		a.h.log.Warn("an answer found no room before its deadline: dropped", "path", a.r.URL.Path, "bytes", est)
		return
	}
	b := a.encode(&status, v)
	n := max(int64(len(b)), est)
	a.h.answers.add(n - est)
	defer a.h.answers.give(n)
	a.setWriteDeadline(n)
	switch {
	case a.stream != nil && (a.stream.header || status == http.StatusOK):
		// A stream's last line: a result, or a failure once it started.
		if !a.stream.header {
			a.stream.writeHeader()
		}
	default:
		a.Header().Set("Content-Type", "application/json")
		a.Header().Set("Content-Length", strconv.Itoa(len(b)))
		a.WriteHeader(status)
	}
	if _, err := a.Write(b); err != nil {
		a.h.log.Debug("the client did not take its answer", "path", a.r.URL.Path, "bytes", n, "err", err)
	}
}

// setWriteDeadline gives the writes that follow until the deadline of n
// bytes.
func (a *answer) setWriteDeadline(n int64) {
	if err := http.NewResponseController(a.ResponseWriter).SetWriteDeadline(a.deadline(n)); err != nil {
		a.h.log.Debug("setting the answer's write deadline", "err", err)
	}
}

// deadline is when an answer of n bytes must be written by.
func (a *answer) deadline(n int64) time.Time {
	return time.Now().Add(a.h.cfg.AnswerGrace + time.Duration(float64(n)/float64(a.h.cfg.AnswerRate)*float64(time.Second)))
}

// sized is an answer that tells about how large it is before it is
// encoded: at least its outputs and its files' content.
type sized interface{ answerSize() int64 }

func (r RunResponse) answerSize() int64 { return resultSize(r.Result) }

func (r snekboxResponse) answerSize() int64 {
	n := int64(len(r.Stdout))
	for _, f := range r.Files {
		n += int64(len(f.Content))
	}
	return n
}

func (r pistonResponse) answerSize() int64 {
	return int64(len(r.Run.Stdout) + len(r.Run.Stderr) + len(r.Run.Output))
}

// resultSize is at least the size of res in JSON: its outputs, its
// files' content in base64 and its displays' forms.
func resultSize(res executor.Result) int64 {
	n := int64(len(res.Stdout) + len(res.Stderr))
	for _, f := range res.Files {
		n += int64(len(f.Content)+2) / 3 * 4
	}
	for _, d := range res.Results {
		for _, v := range d.Data {
			n += int64(len(v))
		}
	}
	return n
}

// encode is v as one JSON line, or an internal error (status changed).
func (a *answer) encode(status *int, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		a.h.log.Error("encoding an answer", "path", a.r.URL.Path, "err", err)
		*status, b = http.StatusInternalServerError, []byte(`{"error":"internal error"}`)
	}
	return append(b, '\n')
}

// budget bounds a sum of bytes in use at once: one taker larger than
// the whole budget goes alone.
type budget struct {
	max   int64
	mu    sync.Mutex
	used  int64
	freed chan struct{} // closed, and replaced, when bytes are given back
}

func newBudget(max int64) *budget { return &budget{max: max, freed: make(chan struct{})} }

// take takes n bytes, waiting for them until ctx ends (false).
func (b *budget) take(ctx context.Context, n int64) bool {
	for {
		b.mu.Lock()
		if b.takeLocked(n) {
			b.mu.Unlock()
			return true
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return false
		}
	}
}

func (b *budget) takeLocked(n int64) bool {
	if b.used+n > b.max && b.used > 0 {
		return false
	}
	b.used += n
	return true
}

// add takes n more bytes at once, over the budget if need be: what an
// answer's encoding adds to its estimate.
func (b *budget) add(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used += n
}

// give gives back n bytes taken.
func (b *budget) give(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
}
