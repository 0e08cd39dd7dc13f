package turns

import (
	"context"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
)

// hang bounds waits that should end; it is no timing claim.
const hang = 10 * time.Second

func waited(t *Turn) <-chan struct{} {
	c := make(chan struct{})
	go func() {
		t.Wait(context.Background())
		close(c)
	}()
	return c
}

func TestTurnsKeepOrderPerKey(t *testing.T) {
	q := New()
	a0, a1, a2 := q.Take("a"), q.Take("a"), q.Take("a")
	b0 := q.Take("b")
	for name, turn := range map[string]*Turn{"a0": a0, "b0": b0} {
		select {
		case <-waited(turn):
		case <-time.After(hang):
			t.Fatalf("%s, first of its key, waits", name)
		}
	}
	w1, w2 := waited(a1), waited(a2)
	select {
	case <-w1:
		t.Fatal("a1 went before a0 was done")
	case <-w2:
		t.Fatal("a2 went before a0 was done")
	default:
	}
	a0.Done()
	a0.Done() // idempotent
	<-w1
	select {
	case <-w2:
		t.Fatal("a2 went before a1 was done")
	default:
	}
	a1.Done()
	<-w2
	a2.Done()
	b0.Done()
	if n := len(q.last); n != 0 {
		t.Fatalf("%d keys remembered after every turn is done", n)
	}
}

// TestWaitEndsWithContext: a turn whose predecessor holds on waits until
// its context ends, and returns then, within a deadline of the test's own.
func TestWaitEndsWithContext(t *testing.T) {
	q := New()
	first := q.Take("a")
	defer first.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	returned := make(chan struct{})
	go func() {
		q.Take("a").Wait(ctx)
		close(returned)
	}()
	select {
	case <-returned:
		t.Fatal("Wait returned while the turn before it holds and its context lives")
	default:
	}
	cancel()
	select {
	case <-returned:
	case <-time.After(hang):
		t.Fatalf("Wait did not return within %s of its context's end", hang)
	}
}

// runner answers after its first progress report, which it makes only
// when progress is set.
type runner struct {
	admitted chan struct{}
	release  chan struct{}
}

func (r runner) Submit(ctx context.Context, job executor.Job) (executor.Result, error) {
	job.Progress(executor.Progress{State: executor.StateRunning})
	close(r.admitted)
	<-r.release
	return executor.Result{}, nil
}

// The turn passes on at the job's first progress report, not at the end of
// its run.
func TestSubmitPassesTheTurnOnAdmission(t *testing.T) {
	q := New()
	first, second := q.Take("a"), q.Take("a")
	r := runner{admitted: make(chan struct{}), release: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := first.Submit(context.Background(), r, executor.Job{}); err != nil {
			t.Error(err)
		}
	}()
	<-r.admitted
	select {
	case <-waited(second):
	case <-time.After(hang):
		t.Fatal("the turn did not pass on when the job was admitted")
	}
	close(r.release)
	<-done
	second.Done()
}

func TestNilTurn(t *testing.T) {
	var turn *Turn
	turn.Wait(context.Background())
	turn.Done()
	r := runner{admitted: make(chan struct{}), release: make(chan struct{})}
	close(r.release)
	if _, err := turn.Submit(context.Background(), r, executor.Job{Progress: func(executor.Progress) {}}); err != nil {
		t.Fatal(err)
	}
}
