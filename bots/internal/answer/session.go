package answer

import (
	"container/list"
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"

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
// the cells below it, in order, into their replies. The record lives in
// memory, bounded; a session it does not hold (after a restart, or once
// evicted) is recovered once from the platform (Platform.Earlier).

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

// Bounds of the record of sessions.
const (
	maxSessions = 1000      // sessions recorded, the least recently used dropped first
	MaxCells    = 200       // cells of one session
	maxBytes    = 256 << 20 // code, stdin and input files of all the cells recorded
)

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

// cell is one cell of a session's record.
type cell[S any] struct {
	key     string // its message's Request.Key
	src     S
	user    string
	ex      formatting.Extraction
	files   []executor.File // its input files, which go into its replay
	skipped []executor.OmittedFile
	ok      bool       // ran to success: part of the later cells' replay
	asked   Request[S] // what its re-run reply's buttons need (buttons.go)
	// res is how it ran, its files left out, for the session's notebook
	// (export.go); nil when it did not run.
	res *executor.Result
}

func (c cell[S]) size() int64 {
	n := int64(len(c.ex.Code) + len(c.ex.Stdin))
	for _, f := range c.files {
		n += int64(len(f.Content))
	}
	if c.res != nil {
		n += int64(len(c.res.Stdout) + len(c.res.Stderr))
		for _, d := range c.res.Results {
			for k, v := range d.Data {
				n += int64(len(k) + len(v))
			}
		}
	}
	return n
}

func (c cell[S]) request() executor.Request {
	return executor.Request{Code: c.ex.Code, Stdin: c.ex.Stdin, Files: c.files}
}

// session is the record of one session.
type session[S any] struct {
	id    string
	cells []cell[S]
	// known: the record holds the session's earlier cells (it began in
	// this process, was recovered or reset); else it is recovered first.
	known   bool
	bytes   int64
	posters map[string]uint64 // user → the sequence number of their last cell
	keys    []string          // its entries in notebook.keys
}

// notebook is the record of the sessions, bounded; safe for concurrent
// use. The cells of one session change under its turn only.
type notebook[S any] struct {
	mu    sync.Mutex
	order *list.List // of *session[S], most recent first
	byID  map[string]*list.Element
	keys  map[string]*session[S] // a cell's message key or reply id → its session
	bytes int64
	seq   uint64

	maxSessions, maxCells int
	maxBytes              int64
}

func newNotebook[S any]() *notebook[S] {
	return &notebook[S]{order: list.New(), byID: make(map[string]*list.Element), keys: make(map[string]*session[S]),
		maxSessions: maxSessions, maxCells: MaxCells, maxBytes: maxBytes}
}

// open returns the record of session id, new when there is none.
func (nb *notebook[S]) open(id string) *session[S] {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	if el, ok := nb.byID[id]; ok {
		nb.order.MoveToFront(el)
		return el.Value.(*session[S])
	}
	s := &session[S]{id: id, posters: make(map[string]uint64)}
	nb.byID[id] = nb.order.PushFront(s)
	nb.evictLocked(s)
	return s
}

// evictLocked drops the least recently used sessions but keep while the
// record is over its bounds.
func (nb *notebook[S]) evictLocked(keep *session[S]) {
	for el := nb.order.Back(); el != nil && (nb.order.Len() > nb.maxSessions || nb.bytes > nb.maxBytes); {
		prev := el.Prev()
		if s := el.Value.(*session[S]); s != keep {
			nb.dropLocked(s)
		}
		el = prev
	}
}

func (nb *notebook[S]) dropLocked(s *session[S]) {
	if el, ok := nb.byID[s.id]; ok && el.Value == s {
		nb.order.Remove(el)
		delete(nb.byID, s.id)
	}
	nb.clearLocked(s)
}

// clearLocked forgets s's cells.
func (nb *notebook[S]) clearLocked(s *session[S]) {
	for _, k := range s.keys {
		if nb.keys[k] == s {
			delete(nb.keys, k)
		}
	}
	nb.bytes -= s.bytes
	s.bytes, s.cells, s.keys = 0, nil, nil
}

// heldLocked reports whether s is in the record (not dropped).
func (nb *notebook[S]) heldLocked(s *session[S]) bool {
	el, ok := nb.byID[s.id]
	return ok && el.Value == s
}

// keyLocked maps key to s.
func (nb *notebook[S]) keyLocked(s *session[S], key string) {
	if key != "" && nb.keys[key] != s {
		nb.keys[key] = s
		s.keys = append(s.keys, key)
	}
}

// sessionOf returns the session of a cell's message key or reply id.
func (nb *notebook[S]) sessionOf(id string) string {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	if s := nb.keys[id]; s != nil {
		return s.id
	}
	return ""
}

// index returns the position of key's cell in s, or -1.
func (nb *notebook[S]) index(s *session[S], key string) int {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	for i, c := range s.cells {
		if c.key == key {
			return i
		}
	}
	return -1
}

// len returns the number of s's cells.
func (nb *notebook[S]) len(s *session[S]) int {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	return len(s.cells)
}

// at returns s's cell i.
func (nb *notebook[S]) at(s *session[S], i int) cell[S] {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	return s.cells[i]
}

// replay returns the successful cells before cell i of s: never nil, so
// that an empty replay says the session starts from nothing.
func (nb *notebook[S]) replay(s *session[S], i int) []executor.Request {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	out := []executor.Request{}
	for _, c := range s.cells[:min(i, len(s.cells))] {
		if c.ok {
			out = append(out, c.request())
		}
	}
	return out
}

// put records c as cell i of s (i == its length: a new cell), unless s
// was dropped meanwhile: its next cell recovers it.
func (nb *notebook[S]) put(s *session[S], i int, c cell[S]) {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	if !nb.heldLocked(s) {
		return
	}
	if i < len(s.cells) {
		s.bytes -= s.cells[i].size()
		nb.bytes -= s.cells[i].size()
		s.cells[i] = c
	} else {
		s.cells = append(s.cells, c)
	}
	s.bytes += c.size()
	nb.bytes += c.size()
	nb.seq++
	s.posters[c.user] = nb.seq
	nb.keyLocked(s, c.key)
	nb.evictLocked(s)
}

// replied notes reply as the reply of a cell of s.
func (nb *notebook[S]) replied(s *session[S], reply string) {
	if reply == "" {
		return
	}
	nb.mu.Lock()
	defer nb.mu.Unlock()
	if nb.heldLocked(s) {
		nb.keyLocked(s, reply)
	}
}

// forget drops the cell of the message key, wherever it is.
func (nb *notebook[S]) forget(key string) {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	s := nb.keys[key]
	if s == nil {
		return
	}
	delete(nb.keys, key)
	for i, c := range s.cells {
		if c.key == key {
			s.bytes -= c.size()
			nb.bytes -= c.size()
			s.cells = append(s.cells[:i:i], s.cells[i+1:]...)
			return
		}
	}
}

// reset forgets the cells of session id; the next one starts fresh.
func (nb *notebook[S]) reset(id string) {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	el, ok := nb.byID[id]
	if !ok {
		s := &session[S]{id: id, posters: make(map[string]uint64)}
		el = nb.order.PushFront(s)
		nb.byID[id] = el
	}
	s := el.Value.(*session[S])
	nb.clearLocked(s)
	s.known = true
	nb.evictLocked(s)
}

// recent returns the session whose id starts with prefix that user last
// ran a cell in, or "".
func (nb *notebook[S]) recent(user, prefix string) string {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	best, id := uint64(0), ""
	for el := nb.order.Front(); el != nil; el = el.Next() {
		s := el.Value.(*session[S])
		if seq := s.posters[user]; seq > best && strings.HasPrefix(s.id, prefix) {
			best, id = seq, s.id
		}
	}
	return id
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
	s    *session[S]
	req  Request[S]
	i    int // its place in the session
}

// enter waits for the turn of req's session and returns req's cell in it,
// recovering the session's record from the platform first when the flow
// does not hold it.
func (f *Flow[S]) enter(ctx context.Context, log *slog.Logger, req Request[S]) *cellRun[S] {
	t := f.sessTurns.Take(req.Session)
	t.Wait(ctx)
	s := f.nb.open(req.Session)
	if !s.known {
		s.known = true
		if !req.Starts {
			f.recover(ctx, log, req, s)
		}
	}
	i := f.nb.index(s, req.Key)
	if i < 0 || req.Key == "" {
		i = f.nb.len(s)
	}
	return &cellRun[S]{f: f, turn: t, s: s, req: req, i: i}
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
	out := f.runCell(ctx, log, turn, c.s, c.i, rec, progress, "")
	if c.i+1 < f.nb.len(c.s) {
		// An edit of an earlier cell: the cells below it are re-run
		// after its reply is sent (below).
		out.below = true
	}
	return out
}

// runCell runs rec as cell i of s, records it and renders its reply with
// note after its header.
func (f *Flow[S]) runCell(ctx context.Context, log *slog.Logger, turn *turns.Turn, s *session[S], i int, rec cell[S], progress func(executor.Progress), note string) Reply {
	req := rec.request()
	req.Session, req.Colour = &executor.Session{ID: s.id, Replay: f.nb.replay(s, i)}, f.cfg.Colour
	res, err := turn.Submit(ctx, f.cfg.Runner, executor.Job{User: rec.user, Request: req, Progress: progress})
	rec.ok = err == nil && res.Success && (res.Session == nil || !res.Session.Ended)
	if err == nil {
		kept := res
		kept.Files = nil
		rec.res = &kept
	}
	f.nb.put(s, i, rec)
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
	n := f.nb.len(c.s)
	last := min(n, c.i+MaxRerun)
	for j := c.i + 1; j < last && ctx.Err() == nil; j++ {
		note := ""
		if j == last-1 && last < n {
			note = fmt.Sprintf("cells [%d] to [%d] were not re-run: an edit re-runs at most %d cells", last+1, n, MaxRerun)
		}
		f.rerun(ctx, log, c.s, j, note)
	}
}

// rerun runs cell j of s again and updates its reply in place.
func (f *Flow[S]) rerun(ctx context.Context, log *slog.Logger, s *session[S], j int, note string) {
	rec := f.nb.at(s, j)
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
	out := f.runCell(ctx, log, nil, s, j, rec, nil, note)
	ind.stopIt()
	if out.Reaction == "" && ctx.Err() != nil {
		return
	}
	rec.asked.Session = s.id
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
		f.nb.replied(s, sent.ID)
		f.replies.Put(rec.key, Record[S]{Src: rec.src, Reply: sent.ID, Files: sent.Files, Reaction: out.Reaction, Created: prev.Created})
	}
}

// recover rebuilds s's record from the platform: the messages of the
// session it answered as cells, after its last reset.
func (f *Flow[S]) recover(ctx context.Context, log *slog.Logger, req Request[S], s *session[S]) {
	past, err := f.p.Earlier(ctx, req.Src, s.id)
	if err != nil {
		log.Warn("recovering a session's earlier cells", "session", s.id, "err", err)
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
		f.nb.put(s, f.nb.len(s), cell[S]{key: p.Key, src: p.Src, user: p.User, ex: ex, files: in, skipped: skipped,
			ok: p.Reply.Reaction == ok || p.Reply.ReactionUnknown, asked: asked(p.Request)})
		if p.Reply.Reply != "" {
			p.Reply.Src = p.Src
			f.nb.replied(s, p.Reply.Reply)
			if _, known := f.replies.Get(p.Key); !known {
				f.replies.Put(p.Key, p.Reply)
			}
		}
	}
	log.Info("session recovered from the platform", "session", s.id, "cells", f.nb.len(s))
}
