package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
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
// answers' budget before it is encoded (what answerSize says it pins, the
// rest once encoded), waiting for it until its deadline; then it is
// written within that deadline. Past it the connection is closed and the
// answer freed, whether the client read it or not. The files' contents
// are not encoded in memory: they go out in base64 as they are written
// (see bulky), so that an answer pins its result and little more.
func (a *answer) write(status int, v any) {
	if a.stream != nil && a.stream.broken {
		return
	}
	var est int64
	if s, ok := v.(sized); ok {
		est = s.answerSize()
	}
	if held := heldBy(a.r.Context()).Swap(0); held > 0 {
		// The gate counted the result when its run ended: the answer
		// has its room.
		a.h.answers.add(est - held)
	} else {
		ctx, cancel := context.WithDeadline(a.r.Context(), a.deadline(est))
		defer cancel()
		if !a.h.answers.take(ctx, est) {
			a.h.log.Warn("an answer found no room before its deadline: dropped", "path", a.r.URL.Path, "bytes", est)
			return
		}
	}
	var contents [][]byte
	nonce := make([]byte, markerNonce)
	_, _ = rand.Read(nonce) // crypto/rand never fails on Linux
	mark := func(i int) []byte { return append(nonce[:markerNonce:markerNonce], byte(i>>16), byte(i>>8), byte(i)) }
	if bv, ok := v.(bulky); ok {
		v, contents = bv.lighten(mark)
	}
	b := a.encode(&status, v)
	parts, size, ok := splice(b, contents, mark)
	if !ok { // the encoding failed, and says so: no contents
		parts, size, contents = [][]byte{b}, int64(len(b)), nil
	}
	n := max(est, int64(len(b)))
	for _, c := range contents {
		n += int64(len(c))
	}
	a.h.answers.add(n - est)
	defer a.h.answers.give(n)
	a.setWriteDeadline(size)
	switch {
	case a.stream != nil && (a.stream.header || status == http.StatusOK):
		// A stream's last line: a result, or a failure once it started.
		if !a.stream.header {
			a.stream.writeHeader()
		}
	default:
		a.Header().Set("Content-Type", "application/json")
		a.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		a.WriteHeader(status)
	}
	if err := writeParts(a, parts, contents); err != nil {
		a.h.log.Debug("the client did not take its answer", "path", a.r.URL.Path, "bytes", size, "err", err)
	}
}

// bulky is an answer with large byte contents (files) that encoding/json
// would turn into base64 in memory, in a buffer that doubles as it grows
// and is then kept in a pool: three or four times the content for a
// while. lighten returns the answer with content i replaced by mark(i),
// and the contents: write sends the encoding of the light answer with
// each content streamed in base64 in its mark's place.
type bulky interface {
	lighten(mark func(i int) []byte) (light any, contents [][]byte)
}

// markerNonce is the random part of a mark, fresh for each answer, so
// that no output of a snippet can stand for one.
const markerNonce = 12

// splice cuts b at the quoted base64 of each mark, in order, and returns
// the parts between and the answer's full size, with the contents'
// base64 in the marks' place; false when a mark is missing.
func splice(b []byte, contents [][]byte, mark func(int) []byte) (parts [][]byte, size int64, ok bool) {
	size = int64(len(b))
	for i, c := range contents {
		m := []byte(`"` + base64.StdEncoding.EncodeToString(mark(i)) + `"`)
		k := bytes.Index(b, m)
		if k < 0 {
			return nil, 0, false
		}
		parts = append(parts, b[:k+1])
		b = b[k+len(m)-1:]
		size += int64(base64.StdEncoding.EncodedLen(len(c)) - (len(m) - 2))
	}
	return append(parts, b), size, true
}

// writeParts writes parts with contents in base64 between them.
func writeParts(w io.Writer, parts, contents [][]byte) error {
	for i, p := range parts {
		if _, err := w.Write(p); err != nil {
			return err
		}
		if i == len(contents) {
			break
		}
		enc := base64.NewEncoder(base64.StdEncoding, w)
		if _, err := enc.Write(contents[i]); err != nil {
			return err
		}
		if err := enc.Close(); err != nil {
			return err
		}
	}
	return nil
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

func (r runAnswer) answerSize() int64 { return resultSize(r.Result) }

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

func (r runAnswer) lighten(mark func(int) []byte) (any, [][]byte) {
	var contents [][]byte
	r.Files, contents = lightFiles(r.Files, mark)
	return r, contents
}

// lightFiles is files with each content replaced by its mark.
func lightFiles(files []executor.File, mark func(int) []byte) ([]executor.File, [][]byte) {
	if len(files) == 0 {
		return files, nil
	}
	light := make([]executor.File, len(files))
	contents := make([][]byte, len(files))
	for i, f := range files {
		contents[i] = f.Content
		f.Content = mark(i)
		light[i] = f
	}
	return light, contents
}

func (r snekboxResponse) lighten(mark func(int) []byte) (any, [][]byte) {
	light := make([]snekboxFile, len(r.Files))
	contents := make([][]byte, len(r.Files))
	for i, f := range r.Files {
		contents[i] = f.Content
		f.Content = mark(i)
		light[i] = f
	}
	r.Files = light
	return r, contents
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

// Answers is the budget of the answers being written (Config.Answers).
type Answers struct{ b *budget }

// NewAnswers returns a budget of max bytes (DefaultAnswerBytes when 0).
func NewAnswers(max int64) *Answers {
	if max <= 0 {
		max = DefaultAnswerBytes
	}
	return &Answers{newBudget(max)}
}

// Gate returns r whose runs start only while the answers being written
// leave room in the budget. A result is held until its answer is written:
// without the gate, runs that went on while clients did not read would
// pile up results the budget never saw (16 unread 8 MiB answers pinned
// 220 MiB with a 64 MiB budget). With it, what answers pin is bounded by
// the budget plus the results of the runs in progress. A run waits for
// room until its context ends.
func (a *Answers) Gate(r executor.Runner) executor.Runner { return gate{r, a.b} }

type gate struct {
	executor.Runner
	b *budget
}

// Run runs req once there is room, and counts its result in the budget
// at once for the request's answer (heldKey), which writes it or gives
// the room back.
func (g gate) Run(ctx context.Context, req executor.Request) (executor.Result, error) {
	if !g.b.room(ctx) {
		return executor.Result{}, &executor.Error{Code: executor.ErrCanceled, Message: "cancelled while answers in flight filled the budget", Err: ctx.Err()}
	}
	res, err := g.Runner.Run(ctx, req)
	if held, ok := ctx.Value(heldKey{}).(*atomic.Int64); ok && err == nil {
		n := resultSize(res)
		g.b.add(n)
		held.Add(n)
	}
	return res, err
}

// heldKey is the context key of a request's bytes in the budget that the
// gate took for its result and its answer has not yet taken over.
type heldKey struct{}

// heldBy is ctx's held bytes; a counter of none when ctx has no request's.
func heldBy(ctx context.Context) *atomic.Int64 {
	if held, ok := ctx.Value(heldKey{}).(*atomic.Int64); ok {
		return held
	}
	return new(atomic.Int64)
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

// room waits until less than the whole budget is taken, or ctx ends
// (false).
func (b *budget) room(ctx context.Context) bool {
	for {
		b.mu.Lock()
		ok, freed := b.used < b.max, b.freed
		b.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-freed:
		case <-ctx.Done():
			return false
		}
	}
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
