package answer

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/runblock/runblock/bots/internal/runerror"
	"github.com/runblock/runblock/bots/internal/turns"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/formatting"
)

// Sessions: a thread is a notebook. A message whose Request names a
// Session is a cell of it: it runs with the session's earlier successful
// cells as the flow recorded them (executor.Session.Replay), so that the
// executor can rebuild the state when the live process is gone; its reply
// starts with the cell's number. An edit of an earlier cell re-runs it and
// the cells below it, in order, into their replies. The flow's notebook
// (notebook.go) holds each session's thread of cells in memory, bounded;
// a thread it does not hold (after a restart, or once evicted) is
// recovered once from the platform (Platform.Earlier).

// ResetText is the reply to a reset; Platform.Earlier recognises the
// bot's reply that holds it.
const ResetText = "Session reset: the next cell starts from nothing."

// IsReset reports whether a message addressed to the bot (its trigger
// stripped) asks for a reset of its session: the word reset alone. Every
// adapter, the console's included, reads resets with it.
func IsReset(text string) bool { return strings.TrimSpace(text) == "reset" }

// IsExport reports whether a message addressed to the bot asks for its
// session as a notebook: the word export alone.
func IsExport(text string) bool { return strings.TrimSpace(text) == "export" }

// MaxRerun is the most cells an edit re-runs, the edited one included.
const MaxRerun = 20

// Ender ends a session's live process: the executor's session manager.
type Ender interface {
	End(ctx context.Context, id string) error
}

// EndFunc is an Ender that is a func.
type EndFunc func(ctx context.Context, id string) error

// End calls f.
func (f EndFunc) End(ctx context.Context, id string) error { return f(ctx, id) }

// EnderOf is the way to end a session's live process: end when set (a
// platform's Config.End), else runner's End, if it has one; nil without
// either.
func EnderOf(end func(ctx context.Context, id string) error, runner any) Ender {
	if end != nil {
		return EndFunc(end)
	}
	if e, ok := runner.(Ender); ok {
		return e
	}
	return nil
}

// Past is a message of a session found on the platform, with the bot's
// reply to it: what a session's record is recovered from.
type Past[S any] struct {
	Request[S] // the message: Src, Key, User, Text, Extract, Files
	// Reply is the bot's reply; its Reaction ("" for a notice) says how
	// the cell ran, ReactionUnknown when the platform cannot tell.
	Reply Record[S]
	// Reset: the reply says the session was reset there.
	Reset bool
}

// CellHeader is the first line of a cell's reply: its number, and what
// became of the session's state.
func CellHeader(n int, info *executor.SessionInfo) string {
	h := "[" + strconv.Itoa(n) + "]"
	switch {
	case info == nil:
	case info.Fresh:
		h += " · the session's state could not be rebuilt: this cell ran in a fresh session"
	case info.Restored > 0:
		h += " · state rebuilt from " + plural(info.Restored, "earlier cell")
	}
	if info != nil && info.Ended {
		h += " · the session ended with this cell; the next one rebuilds its state"
	}
	return h
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}

// SessionOf returns the session of the message key, or of the reply id,
// as far as the flow's record knows: "" when it does not.
func (f *Flow[S]) SessionOf(id string) string { return f.nb.sessionOf(id) }

// Recent returns the session whose id starts with prefix that user last
// ran a cell in, or "": where a command names no thread.
func (f *Flow[S]) Recent(user, prefix string) string { return f.nb.recent(user, prefix) }

// sessions reports whether req is a cell of a session.
func (f *Flow[S]) sessions(req Request[S]) bool {
	return req.Session != "" && !f.cfg.NoSessions
}

// Reset starts session id fresh once its cell in flight is done: its
// record is forgotten, its live process ended, and its next cell runs
// from nothing.
func (f *Flow[S]) Reset(ctx context.Context, log *slog.Logger, id string) {
	t := f.sessTurns.Take(id)
	defer t.Done()
	t.Wait(ctx)
	f.nb.reset(id)
	if f.cfg.End != nil {
		if err := f.cfg.End.End(ctx, id); err != nil {
			log.Warn("ending a session's live process", "session", id, "err", err)
		}
	}
	log.Info("session reset", "session", id)
}

// reset answers a reset request: the session starts fresh, and the reply
// says so where everyone in the thread sees it.
func (f *Flow[S]) reset(ctx context.Context, log *slog.Logger, req Request[S]) {
	if !f.sessions(req) {
		f.notify(ctx, log, req.Src, formatting.RenderNotice(f.cfg.Platform, formatting.NoticeNoCode))
		return
	}
	f.Reset(ctx, log, req.Session)
	sent, err := f.p.Send(ctx, req.Src, Record[S]{}, Reply{Text: ResetText})
	if err != nil {
		log.Error("sending the reply to a reset", "err", err)
		return
	}
	f.cfg.Replied()
	if req.Key != "" && sent.ID != "" {
		f.replies.Put(req.Key, Record[S]{Src: req.Src, Reply: sent.ID, Files: sent.Files, Created: req.taken})
	}
}

// cellRun is a cell being answered: it holds its session's turn until
// done.
type cellRun[S any] struct {
	f    *Flow[S]
	turn *turns.Turn // the session's
	th   *thread[S]
	req  Request[S]
	i    int // its place in the session
}

// enter waits for the turn of req's session and returns req's cell in it,
// recovering the session's record from the platform first when the flow
// does not hold it.
func (f *Flow[S]) enter(ctx context.Context, log *slog.Logger, req Request[S]) *cellRun[S] {
	t := f.sessTurns.Take(req.Session)
	t.Wait(ctx)
	th := f.nb.open(req.Session)
	if !th.known {
		th.known = true
		if !req.Starts {
			f.recover(ctx, log, req, th)
		}
	}
	i := f.nb.index(th, req.Key)
	if i < 0 || req.Key == "" {
		i = f.nb.len(th)
	}
	return &cellRun[S]{f: f, turn: t, th: th, req: req, i: i}
}

// done passes the session's turn on; nil is a no-op.
func (c *cellRun[S]) done() {
	if c != nil {
		c.turn.Done()
	}
}

// full reports whether the session has no room for another cell.
func (c *cellRun[S]) full() bool {
	return c.i >= c.f.nb.maxCells
}

// run runs the cell in its turn among its poster's runs and records it.
func (c *cellRun[S]) run(ctx context.Context, log *slog.Logger, turn *turns.Turn, ex formatting.Extraction, progress func(executor.Progress)) Reply {
	f := c.f
	if c.full() {
		turn.Done()
		return Reply{Text: fmt.Sprintf("This session has %d cells, the most it keeps: reset it (mention me with `reset`) or start a new thread.", f.nb.maxCells)}
	}
	in, skipped := f.fetch(ctx, log, c.req.Files)
	rec := cell[S]{key: c.req.Key, src: c.req.Src, user: c.req.User, ex: ex, files: in, skipped: skipped, asked: asked(c.req)}
	out := f.runCell(ctx, log, turn, c.th, c.i, rec, progress, "")
	if c.i+1 < f.nb.len(c.th) {
		// An edit of an earlier cell: the cells below it are re-run
		// after its reply is sent (below).
		out.below = true
	}
	return out
}

// runCell runs rec as cell i of th, records it and renders its reply with
// note after its header.
func (f *Flow[S]) runCell(ctx context.Context, log *slog.Logger, turn *turns.Turn, th *thread[S], i int, rec cell[S], progress func(executor.Progress), note string) Reply {
	req := rec.request()
	req.Session, req.Colour = &executor.Session{ID: th.id, Replay: f.nb.replay(th, i)}, f.cfg.Colour
	res, err := turn.Submit(ctx, f.cfg.Runner, executor.Job{User: rec.user, Request: req, Progress: progress})
	rec.ok = err == nil && res.Success && (res.Session == nil || !res.Session.Ended)
	if err == nil {
		kept := res
		kept.Files = nil
		rec.res = &kept
	}
	f.nb.put(th, i, rec)
	if err != nil {
		text, private := runerror.Report(ctx, log.With("user", rec.user), f.cfg.Platform, err)
		return Reply{Text: text, Private: private}
	}
	header := CellHeader(i+1, res.Session)
	if note != "" {
		header += " · " + note
	}
	return f.render(rec.ex, res, rec.skipped, header, i+1)
}

// below re-runs the cells below an edited one, in order, into their
// replies, up to MaxRerun cells in all; the last one re-run says which
// were not.
func (c *cellRun[S]) below(ctx context.Context, log *slog.Logger) {
	f := c.f
	n := f.nb.len(c.th)
	last := min(n, c.i+MaxRerun)
	for j := c.i + 1; j < last && ctx.Err() == nil; j++ {
		note := ""
		if j == last-1 && last < n {
			note = fmt.Sprintf("cells [%d] to [%d] were not re-run: an edit re-runs at most %d cells", last+1, n, MaxRerun)
		}
		f.rerun(ctx, log, c.th, j, note)
	}
}

// rerun runs cell j of th again and updates its reply in place.
func (f *Flow[S]) rerun(ctx context.Context, log *slog.Logger, th *thread[S], j int, note string) {
	rec := f.nb.at(th, j)
	log = log.With("cell", j+1, "rerun_of", rec.key)
	prev, ok := f.replies.Get(rec.key)
	if !ok {
		found, err := f.p.Find(ctx, rec.src)
		if err != nil {
			log.Warn("looking for the reply of a cell to re-run", "err", err)
		}
		if found != nil {
			prev = *found
		}
	}
	ind := indication{stop: f.p.Indicate(ctx, rec.src)}
	defer ind.end("")
	if prev.Reply != "" {
		f.unreact(ctx, rec.src, prev)
	}
	out := f.runCell(ctx, log, nil, th, j, rec, nil, note)
	ind.stopIt()
	if out.Reaction == "" && ctx.Err() != nil {
		return
	}
	rec.asked.Session = th.id
	a := f.arm(rec.asked, &out)
	if prev.Reply == "" {
		prev = Record[S]{Src: rec.src, Created: f.cfg.Now()}
	}
	sent, err := f.p.Send(ctx, rec.src, prev, out)
	f.sent(a, sent)
	if err != nil {
		ind.end("")
		log.Error("updating the reply of a re-run cell", "err", err)
		return
	}
	ind.end(out.Reaction)
	f.cfg.Replied()
	if sent.ID != "" {
		f.nb.replied(th, sent.ID)
		f.replies.Put(rec.key, Record[S]{Src: rec.src, Reply: sent.ID, Files: sent.Files, Reaction: out.Reaction, Created: prev.Created})
	}
}

// recover rebuilds th's record from the platform: the messages of the
// session it answered as cells, after its last reset.
func (f *Flow[S]) recover(ctx context.Context, log *slog.Logger, req Request[S], th *thread[S]) {
	past, err := f.p.Earlier(ctx, req.Src, th.id)
	if err != nil {
		log.Warn("recovering a session's earlier cells", "session", th.id, "err", err)
		return
	}
	ok := formatting.Reply{OK: true}.Reaction(f.cfg.Platform)
	var cells []Past[S]
	for _, p := range past {
		switch {
		case p.Reset:
			cells = nil
		case p.Reply.Reaction != "" || p.Reply.ReactionUnknown:
			cells = append(cells, p)
		}
	}
	for i, p := range cells {
		if i == f.nb.maxCells {
			break
		}
		opts := p.Extract
		opts.Platform = f.cfg.Platform
		ex := formatting.Extract(p.Text, opts)
		if !ex.Found {
			continue
		}
		in, skipped := f.fetch(ctx, log, p.Files)
		f.nb.put(th, f.nb.len(th), cell[S]{key: p.Key, src: p.Src, user: p.User, ex: ex, files: in, skipped: skipped,
			ok: p.Reply.Reaction == ok || p.Reply.ReactionUnknown, asked: asked(p.Request)})
		if p.Reply.Reply != "" {
			p.Reply.Src = p.Src
			f.nb.replied(th, p.Reply.Reply)
			if _, known := f.replies.Get(p.Key); !known {
				f.replies.Put(p.Key, p.Reply)
			}
		}
	}
	log.Info("session recovered from the platform", "session", th.id, "cells", f.nb.len(th))
}
