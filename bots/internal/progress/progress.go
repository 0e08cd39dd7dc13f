// Package progress shows a queued run's place in the chat: the first time
// the run waits behind others it posts a "queued, N ahead" reply (the one
// the result later replaces), or shows it in the run's earlier reply (an
// edited message's), and marks it "running" when it starts.
package progress

import (
	"context"
	"log/slog"

	"github.com/runblock/runblock/executor"
)

// Chat is how a Watcher writes: Post sends a new reply and returns its id,
// Edit changes it, Render words a Progress for the platform.
type Chat struct {
	Post   func(ctx context.Context, text string) (id string, err error)
	Edit   func(ctx context.Context, id, text string) error
	Render func(executor.Progress) string
}

// Watcher follows one run's progress. Updates are coalesced to the latest,
// so the scheduler never waits for the chat.
type Watcher struct {
	ch   chan executor.Progress
	quit chan struct{}
	done chan struct{}
	id   string
}

// Watch starts a Watcher for a run whose reply is id ("" while it has
// none: the queue position is then posted as a new reply). Stop must be
// called.
func Watch(ctx context.Context, log *slog.Logger, chat Chat, id string) *Watcher {
	w := &Watcher{ch: make(chan executor.Progress, 1), quit: make(chan struct{}), done: make(chan struct{}), id: id}
	go func() {
		defer close(w.done)
		shown, running := false, false
		for {
			var pr executor.Progress
			select {
			case <-w.quit:
				return
			case pr = <-w.ch:
			}
			switch {
			case !shown && w.id == "" && pr.State == executor.StateQueued && pr.Ahead > 0:
				id, err := chat.Post(ctx, chat.Render(pr))
				if err != nil {
					log.Warn("posting the queue position", "err", err)
					continue
				}
				w.id, shown = id, true
			case !shown && pr.State == executor.StateQueued && pr.Ahead > 0:
				if err := chat.Edit(ctx, w.id, chat.Render(pr)); err != nil {
					log.Warn("showing the queue position in the reply", "err", err)
					continue
				}
				shown = true
			case shown && pr.State == executor.StateRunning && !running:
				running = true
				if err := chat.Edit(ctx, w.id, chat.Render(pr)); err != nil {
					log.Warn("updating the queue position", "err", err)
				}
			}
		}
	}()
	return w
}

// Update is the Job.Progress callback: it never blocks, keeping the latest.
func (w *Watcher) Update(pr executor.Progress) {
	for {
		select {
		case w.ch <- pr:
			return
		default:
		}
		select {
		case <-w.ch:
		default:
		}
	}
}

// Stop ends the Watcher and returns the id of the run's reply: the one it
// was given or the one it posted, "" for none. It may be called more than
// once.
func (w *Watcher) Stop() string {
	select {
	case <-w.done:
	default:
		close(w.quit)
		<-w.done
	}
	return w.id
}
