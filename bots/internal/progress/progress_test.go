package progress

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/internal/eventually"
	"github.com/runblock/runblock/internal/syncbuf"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	running = executor.Progress{State: executor.StateRunning}
	errChat = errors.New("chat refused")
)

func queued(ahead int) executor.Progress {
	return executor.Progress{State: executor.StateQueued, Ahead: ahead}
}

// fakeChat records what a Watcher writes, as "post TEXT" and "edit ID
// TEXT"; the first failPosts posts and failEdits edits fail.
type fakeChat struct {
	mu                   sync.Mutex
	calls                []string
	failPosts, failEdits int
}

func (c *fakeChat) chat() Chat {
	return Chat{
		Post: func(_ context.Context, text string) (string, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.calls = append(c.calls, "post "+text)
			if c.failPosts > 0 {
				c.failPosts--
				return "", errChat
			}
			return "posted", nil
		},
		Edit: func(_ context.Context, id, text string) error {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.calls = append(c.calls, "edit "+id+" "+text)
			if c.failEdits > 0 {
				c.failEdits--
				return errChat
			}
			return nil
		},
		Render: func(pr executor.Progress) string {
			if pr.State == executor.StateRunning {
				return "running"
			}
			return fmt.Sprintf("queued, %d ahead", pr.Ahead)
		},
	}
}

// TestWatcher proves, per sequence of updates, what the Watcher writes:
// the first place in the queue posted as a new reply (or shown in the
// run's reply), "running" shown once and only after a place was, nothing
// for a run that never waited behind another, a failed write tried again
// at the next update and logged, and the reply's id from Stop.
func TestWatcher(t *testing.T) {
	tests := []struct {
		name                 string
		id                   string
		failPosts, failEdits int
		updates              []executor.Progress
		want                 []string
		wantID               string
		wantWarn             string
	}{
		{
			name:    "no reply yet: the place is posted, then running",
			updates: []executor.Progress{queued(2), queued(1), running, running},
			want:    []string{"post queued, 2 ahead", "edit posted running"},
			wantID:  "posted",
		},
		{
			name:    "an earlier reply shows the place, then running",
			id:      "r1",
			updates: []executor.Progress{queued(3), queued(2), running},
			want:    []string{"edit r1 queued, 3 ahead", "edit r1 running"},
			wantID:  "r1",
		},
		{
			name:    "first in the queue: nothing is written",
			updates: []executor.Progress{queued(0), running},
			wantID:  "",
		},
		{
			name:    "running with no place shown leaves the reply alone",
			id:      "r1",
			updates: []executor.Progress{running},
			wantID:  "r1",
		},
		{
			name:      "a failed post is tried again at the next place",
			failPosts: 1,
			updates:   []executor.Progress{queued(2), queued(1), running},
			want:      []string{"post queued, 2 ahead", "post queued, 1 ahead", "edit posted running"},
			wantID:    "posted",
			wantWarn:  "posting the queue position",
		},
		{
			name:      "a failed edit of the place is tried again",
			id:        "r1",
			failEdits: 1,
			updates:   []executor.Progress{queued(2), queued(1), running},
			want:      []string{"edit r1 queued, 2 ahead", "edit r1 queued, 1 ahead", "edit r1 running"},
			wantID:    "r1",
			wantWarn:  "showing the queue position in the reply",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := &fakeChat{failPosts: tt.failPosts, failEdits: tt.failEdits}
			var logs syncbuf.Buffer
			w := Watch(context.Background(), slog.New(slog.NewTextHandler(&logs, nil)), fc.chat(), tt.id)
			for _, pr := range tt.updates {
				w.Update(pr)
				// Taken from the channel before the next one comes, so none
				// is coalesced; Stop waits for the last one's writes.
				eventually.True(t, func() bool { return len(w.ch) == 0 }, "the Watcher never took update %+v", pr)
			}
			if id := w.Stop(); id != tt.wantID {
				t.Errorf("Stop = %q, want %q", id, tt.wantID)
			}
			if id := w.Stop(); id != tt.wantID {
				t.Errorf("a second Stop = %q, want %q again", id, tt.wantID)
			}
			fc.mu.Lock()
			defer fc.mu.Unlock()
			if !slices.Equal(fc.calls, tt.want) {
				t.Errorf("wrote %q, want %q", fc.calls, tt.want)
			}
			if got := logs.String(); tt.wantWarn != "" && !strings.Contains(got, tt.wantWarn) {
				t.Errorf("log %q, want %q", got, tt.wantWarn)
			}
		})
	}
}

// TestUpdateNeverBlocks proves Update returns while the chat is stuck in
// a post, keeping only the latest update: the scheduler never waits for
// the chat.
func TestUpdateNeverBlocks(t *testing.T) {
	release := make(chan struct{})
	var posts []string
	var mu sync.Mutex
	chat := Chat{
		Post: func(_ context.Context, text string) (string, error) {
			mu.Lock()
			posts = append(posts, text)
			mu.Unlock()
			<-release
			return "posted", nil
		},
		Edit:   func(context.Context, string, string) error { return nil },
		Render: func(pr executor.Progress) string { return fmt.Sprint(pr.Ahead) },
	}
	w := Watch(context.Background(), slog.New(slog.DiscardHandler), chat, "")
	w.Update(queued(100))
	eventually.True(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(posts) == 1 }, "the first place was never posted")
	updated := make(chan struct{})
	go func() {
		defer close(updated)
		for ahead := 99; ahead > 0; ahead-- {
			w.Update(queued(ahead)) // a full channel: the older update goes
		}
	}()
	select {
	case <-updated:
	case <-time.After(eventually.Hang):
		t.Fatal("Update blocked while the chat was stuck in a post")
	}
	if got := (<-w.ch).Ahead; got != 1 {
		t.Errorf("the update kept is %d ahead, want the latest, 1", got)
	}
	close(release)
	w.Stop()
}
