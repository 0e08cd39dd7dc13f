package remote_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/remote"
	"github.com/runblock/runblock/executor/wire"
)

// hook is an output hook that records what it got, failing the test when
// it is called after Run returned.
type hook struct {
	t        *testing.T
	mu       sync.Mutex
	calls    [][2]string
	returned atomic.Bool
	first    chan struct{} // closed at the first call
}

func newHook(t *testing.T) *hook { return &hook{t: t, first: make(chan struct{})} }

func (h *hook) output(stdout, stderr string) {
	if h.returned.Load() {
		h.t.Error("output hook called after Run returned")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.calls) == 0 {
		close(h.first)
	}
	h.calls = append(h.calls, [2]string{stdout, stderr})
}

// run runs req through r with the hook.
func (h *hook) run(r *remote.Runner, req executor.Request) (executor.Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := r.Run(executor.WithOutput(ctx, h.output), req)
	h.returned.Store(true)
	return res, err
}

// checkSameAsPlain runs req through r again, without a hook, and fails
// unless res, the streamed run's result, is the same (see differ).
func (h *hook) checkSameAsPlain(r *remote.Runner, req executor.Request, res executor.Result) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	plain, err := r.Run(ctx, req)
	if err != nil {
		h.t.Fatal(err)
	}
	if d := differ(res, plain); d != nil {
		h.t.Errorf("the streamed result differs from the plain one in %v", d)
	}
}

func (h *hook) got() [][2]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls
}

// checkPrefixes fails unless each call's output extends the previous
// one's and is the start of res's.
func (h *hook) checkPrefixes(res executor.Result) {
	h.t.Helper()
	var prev [2]string
	for _, c := range h.got() {
		if !strings.HasPrefix(c[0], prev[0]) || !strings.HasPrefix(c[1], prev[1]) ||
			!strings.HasPrefix(res.Stdout, c[0]) || !strings.HasPrefix(res.Stderr, c[1]) {
			h.t.Errorf("hook got %q after %q: not the start of the result's %q, %q", c, prev, res.Stdout, res.Stderr)
		}
		prev = c
	}
}

// differ names the fields in which two runs' results differ, leaving out
// what no two runs share: the duration, and the bytes written before a
// kill.
func differ(a, b executor.Result) []string {
	for _, r := range []*executor.Result{&a, &b} {
		r.Duration, r.DurationMS = 0, 0
		if r.OutputLimit {
			r.StdoutBytes, r.StderrBytes = 0, 0
		}
	}
	var names []string
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	for i := range va.NumField() {
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			names = append(names, fmt.Sprintf("%s (%.80v and %.80v)", va.Type().Field(i).Name, va.Field(i), vb.Field(i)))
		}
	}
	return names
}

// TestStreamShowsOutputBeforeTheResult: through a real executor, a run that
// prints, then waits (until the time limit the test gives it), hands its
// output to the hook while it runs; its result is the one the same run
// gets without a hook.
func TestStreamShowsOutputBeforeTheResult(t *testing.T) {
	r := open(t, remote.Config{URLs: []string{startExecutor(t, 2, false)}})
	req := executor.Request{Code: "import sys, time\nprint('first ✓', flush=True)\nprint('warned', file=sys.stderr, flush=True)\ntime.sleep(60)", Timeout: 2 * time.Second}
	h := newHook(t)
	res, err := h.run(r, req)
	if err != nil || !res.Timeout {
		t.Fatalf("run: %+v, %v; want a timeout", res, err)
	}
	calls := h.got()
	if len(calls) == 0 || calls[len(calls)-1] != [2]string{"first ✓\n", "warned\n"} {
		t.Fatalf("the hook got %q while the run went on, want its output", calls)
	}
	h.checkPrefixes(res)
	h.checkSameAsPlain(r, req, res)
}

// TestStreamedResultIsTheSame: streamed or not, a run's result is the same,
// and what the hook gets is the start of its output, never more.
func TestStreamedResultIsTheSame(t *testing.T) {
	r := open(t, remote.Config{URLs: []string{startExecutor(t, 2, false)}})
	for _, tc := range []struct{ name, code string }{
		{"prints and raises", "import sys, time\nfor i in range(5):\n    print(i, 'é' * i, flush=True)\n    time.sleep(0.05)\nprint('err', file=sys.stderr)\nraise ValueError('x')"},
		{"over the output limit", "import sys\nwhile True:\n    sys.stdout.write('y' * 65536)\n    sys.stdout.flush()"},
		{"files", "open('out.txt', 'w').write('data')\nprint('wrote', flush=True)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := executor.Request{Code: tc.code, Timeout: 3 * time.Second}
			h := newHook(t)
			res, err := h.run(r, req)
			if err != nil {
				t.Fatal(err)
			}
			h.checkPrefixes(res)
			h.checkSameAsPlain(r, req, res)
		})
	}
}

// TestStreamSessionCell: a session's cell streams its own output (not the
// output of the cells replayed before it) and keeps the session's state.
func TestStreamSessionCell(t *testing.T) {
	r := open(t, remote.Config{URLs: []string{startExecutor(t, 2, true)}})
	h := newHook(t)
	res, err := h.run(r, executor.Request{
		Code:    "import time\nprint('mine', x + 1, flush=True)\ntime.sleep(60)",
		Timeout: 2 * time.Second,
		Session: &executor.Session{ID: "nb", Replay: []executor.Request{{Code: "x = 41\nprint('replayed')"}}},
	})
	if err != nil || !res.Timeout || res.Stdout != "mine 42\n" || res.Session == nil || res.Session.Restored != 1 {
		t.Fatalf("cell: %+v (session %+v), %v; want it restored, printing 42, then timed out", res, res.Session, err)
	}
	if calls := h.got(); len(calls) == 0 || calls[len(calls)-1][0] != "mine 42\n" {
		t.Fatalf("the hook got %.200q, want the cell's own output", calls)
	}
	h.checkPrefixes(res)
}

// TestStreamFromAnOldExecutor: an executor that answers plain JSON to a
// request for a stream serves the run, without live output.
func TestStreamFromAnOldExecutor(t *testing.T) {
	var accept atomic.Value
	old := newFake(t, 2, func(w http.ResponseWriter, r *http.Request, req wire.RunRequest) {
		accept.Store(r.Header.Get("Accept"))
		echo("old")(w, r, req)
	})
	r := open(t, remote.Config{URLs: []string{old.srv.URL}})
	h := newHook(t)
	res, err := h.run(r, executor.Request{Code: "x"})
	if err != nil || res.Stdout != "old:x" || len(h.got()) != 0 {
		t.Fatalf("run: %+v, %v, hook %q; want the plain answer", res, err, h.got())
	}
	if a, _ := accept.Load().(string); !strings.Contains(a, wire.NDJSON) {
		t.Errorf("Accept %q: the stream was not asked for", a)
	}
}

// TestStreamClientErrorBeforeTheStart: a run the executor refuses before it
// starts fails as without a hook (413: too large), the hook never called.
func TestStreamClientErrorBeforeTheStart(t *testing.T) {
	r := open(t, remote.Config{URLs: []string{startExecutor(t, 1, false)}})
	h := newHook(t)
	_, err := h.run(r, executor.Request{Code: "#" + strings.Repeat("x", 2<<20)})
	if executor.ErrorCode(err) != executor.ErrTooLarge || len(h.got()) != 0 {
		t.Fatalf("run: %v, hook %q; want too large, nothing streamed", err, h.got())
	}
}

// TestStreamCut: an executor whose stream ends (or stalls) mid-run, with
// or without output shown, costs the one retry, as any death mid-run
// does: the run is answered by another executor, whose output so far the
// hook then gets from its start (the result replaces it, as it replaces
// any live view). Runs in flight on an executor that dies are not lost.
func TestStreamCut(t *testing.T) {
	for _, tc := range []struct {
		name   string
		output bool // the stream had output before it ended
		stall  bool // it stalls rather than ends
	}{
		{"after output", true, false},
		{"stalled after output", true, true},
		{"before output", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHook(t)
			cut := newFake(t, 8, func(w http.ResponseWriter, r *http.Request, _ wire.RunRequest) {
				w.Header().Set("Content-Type", wire.NDJSON)
				w.WriteHeader(http.StatusOK)
				if tc.output {
					_ = json.NewEncoder(w).Encode(wire.OutputEvent{Event: wire.OutputEventName, Stdout: "half"})
				}
				_ = http.NewResponseController(w).Flush()
				if tc.output {
					<-h.first // the output is shown: now the executor goes
				}
				if tc.stall {
					<-r.Context().Done()
					return
				}
				panic(http.ErrAbortHandler) // the connection closed mid-answer
			})
			ok := newFake(t, 1, echo("ok"))
			ok.set(true, 9) // the busiest by its report: picked second
			r := open(t, remote.Config{URLs: []string{cut.srv.URL, ok.srv.URL}, AttemptTimeout: 2 * time.Second})
			res, err := h.run(r, executor.Request{Code: "x"})
			if err != nil || res.Stdout != "ok:x" || ok.runs.Load() != 1 {
				t.Fatalf("run: %+v, %v; want the retry on ok", res, err)
			}
			if calls := h.got(); tc.output && (len(calls) != 1 || calls[0][0] != "half") {
				t.Errorf("hook %q: want the first executor's output once", calls)
			}
		})
	}
}
