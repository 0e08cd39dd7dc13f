package syncbuf_test

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/runblock/runblock/internal/syncbuf"
)

// TestConcurrentWritesAndReads: a logger written from many goroutines while
// the test reads the buffer keeps every line whole (run with -race).
func TestConcurrentWritesAndReads(t *testing.T) {
	const writers, lines = 8, 200
	var buf syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range lines {
				logger.Info("line", "writer", w, "i", i)
			}
		})
	}
	stop := make(chan struct{})
	read := make(chan struct{})
	go func() {
		defer close(read)
		for {
			select {
			case <-stop:
				return
			default:
				_ = buf.String()
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-read

	got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(got) != writers*lines {
		t.Fatalf("%d lines, want %d", len(got), writers*lines)
	}
	seen := map[string]bool{}
	for _, l := range got {
		_, rest, ok := strings.Cut(l, " msg=line ")
		if !ok || !strings.HasPrefix(l, "time=") {
			t.Fatalf("line torn: %q", l)
		}
		seen[rest] = true
	}
	for w := range writers {
		for i := range lines {
			if k := fmt.Sprintf("writer=%d i=%d", w, i); !seen[k] {
				t.Fatalf("line %q missing", k)
			}
		}
	}
}

func TestZeroValueIsEmpty(t *testing.T) {
	var buf syncbuf.Buffer
	if s := buf.String(); s != "" {
		t.Fatalf("String() = %q, want empty", s)
	}
	if n, err := buf.Write([]byte("ab")); n != 2 || err != nil || buf.String() != "ab" {
		t.Fatalf("Write = %d, %v; String() = %q", n, err, buf.String())
	}
}
