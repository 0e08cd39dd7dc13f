package watch

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestWaitWakesOnNotify(t *testing.T) {
	var (
		mu      sync.Mutex
		changes Changes
		n       int
	)
	done := make(chan error, 1)
	go func() {
		done <- changes.Wait(context.Background(), &mu, func() bool { return n == 3 })
	}()
	for i := 0; i < 3; i++ {
		mu.Lock()
		n++
		changes.NotifyLocked()
		mu.Unlock()
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Wait: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return after the state reached its goal")
	}
}

func TestWaitEndsWithContext(t *testing.T) {
	var (
		mu      sync.Mutex
		changes Changes
	)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := changes.Wait(ctx, &mu, func() bool { return false }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v, want context.Canceled", err)
	}
}
