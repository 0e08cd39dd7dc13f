package remote_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/remote"
	"github.com/runblock/runblock/executor/wire"
)

// cells records the session cells a fake executor got.
type cells struct {
	mu  sync.Mutex
	got []wire.RunRequest
}

// answer echoes a cell with its executor's name and the replay it came
// with.
func (c *cells) answer(name string) func(w http.ResponseWriter, r *http.Request, req wire.RunRequest) {
	return func(w http.ResponseWriter, _ *http.Request, req wire.RunRequest) {
		c.mu.Lock()
		c.got = append(c.got, req)
		c.mu.Unlock()
		var replay []string
		for _, r := range req.Replay {
			replay = append(replay, r.Code)
		}
		out := fmt.Sprintf("%s:%s:%s after [%s]", name, req.Session, req.Code, strings.Join(replay, ","))
		_ = json.NewEncoder(w).Encode(wire.RunResponse{Result: executor.Result{Success: true, Stdout: out}})
	}
}

func cell(t *testing.T, r *remote.Runner, id, code string, replay ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := &executor.Session{ID: id, Replay: []executor.Request{}}
	for _, c := range replay {
		s.Replay = append(s.Replay, executor.Request{Code: c})
	}
	res, err := r.Run(ctx, executor.Request{Code: code, Session: s})
	if err != nil {
		t.Fatalf("cell %q of %s: %v", code, id, err)
	}
	return res.Stdout
}

func TestSessionCellsGoToTheExecutorThatHoldsThem(t *testing.T) {
	var rec cells
	fakes := map[string]*fake{}
	var urls []string
	for _, name := range []string{"a", "b", "c"} {
		f := newFake(t, 2, rec.answer(name))
		fakes[name] = f
		urls = append(urls, f.srv.URL)
	}
	r := open(t, remote.Config{URLs: urls})
	holders := map[string]string{} // session -> executor
	for i := range 12 {
		id := fmt.Sprintf("slack:T1:C1:%d.0001", i)
		first := cell(t, r, id, "x = 1")
		holders[id] = first[:1]
		// Load elsewhere changes nothing: a session stays where it is.
		for name, f := range fakes {
			f.set(true, map[bool]int{true: 9, false: 0}[name == holders[id]])
		}
		r.Refresh(context.Background())
		if got := cell(t, r, id, "print(x)", "x = 1"); got != holders[id]+":"+id+":print(x) after [x = 1]" {
			t.Errorf("second cell of %s: %q, want it on %s with the replay", id, got, holders[id])
		}
		for _, f := range fakes {
			f.set(true, 0)
		}
		r.Refresh(context.Background())
	}
	used := map[string]bool{}
	for _, h := range holders {
		used[h] = true
	}
	if len(used) < 2 {
		t.Errorf("12 sessions all went to %v: they should spread over the executors", used)
	}
	rec.mu.Lock()
	emptyReplay := rec.got[0].Replay
	rec.mu.Unlock()
	if emptyReplay == nil {
		t.Error("an empty replay list went as none: the executor would use its own record")
	}

	// The holder of one session goes away: its next cell goes to another
	// executor, with the replay to rebuild it, and stays there.
	id := "slack:T1:C1:0.0001"
	gone := holders[id]
	fakes[gone].set(false, 0)
	r.Refresh(context.Background())
	got := cell(t, r, id, "print(x)", "x = 1")
	if strings.HasPrefix(got, gone+":") || !strings.HasSuffix(got, "after [x = 1]") {
		t.Fatalf("after its executor left: %q", got)
	}
	if again := cell(t, r, id, "print(x)", "x = 1"); again[:1] != got[:1] {
		t.Errorf("the session moved again: %q then %q", got, again)
	}

	// End goes to the executor that holds the session; its 404 is no error.
	if err := r.End(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	holder := fakes[got[:1]]
	holder.mu.Lock()
	defer holder.mu.Unlock()
	if len(holder.ended) != 1 || holder.ended[0] != id {
		t.Errorf("End reached %s with %v", got[:1], holder.ended)
	}
}

// TestFailoverEndsTheStaleCopy: when a session's cells move to another
// executor and back to its first, restarted, the executor that held it
// meanwhile is told to end its copy (DELETE), which it would otherwise
// keep until its idle end; a session that stays put ends nothing.
func TestFailoverEndsTheStaleCopy(t *testing.T) {
	var rec cells
	fakes := map[string]*fake{}
	var urls []string
	for _, name := range []string{"a", "b"} {
		f := newFake(t, 2, rec.answer(name))
		fakes[name] = f
		urls = append(urls, f.srv.URL)
	}
	r := open(t, remote.Config{URLs: urls})
	id := "slack:T1:C1:7.0001"
	first := cell(t, r, id, "x = 1")[:1]
	other := map[string]string{"a": "b", "b": "a"}[first]
	cell(t, r, id, "x += 1", "x = 1")
	fakes[first].set(false, 0)
	r.Refresh(context.Background())
	if got := cell(t, r, id, "print(x)", "x = 1", "x += 1"); got[:1] != other {
		t.Fatalf("after %s left: %q", first, got)
	}
	fakes[first].set(true, 0) // restarted
	r.Refresh(context.Background())
	if got := cell(t, r, id, "print(x)", "x = 1", "x += 1"); got[:1] != first {
		t.Fatalf("after %s came back: %q", first, got)
	}
	for name, want := range map[string][]string{first: {id}, other: {id}} {
		f := fakes[name]
		f.mu.Lock()
		ended := f.ended
		f.mu.Unlock()
		if fmt.Sprint(ended) != fmt.Sprint(want) {
			t.Errorf("%s was asked to end %v, want %v", name, ended, want)
		}
	}
}
