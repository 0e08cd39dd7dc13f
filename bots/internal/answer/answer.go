// Package answer is the one way a chat adapter answers a message, whatever
// the platform: extract the code, queue it in the asker's turn (showing its
// place in the queue), run it, render the result, post the reply or edit
// the earlier one, remember it, and react on the message. An adapter turns
// its events into Requests and implements Platform, the few calls that
// differ between platforms; everything else is decided here once, so the
// platforms behave the same by construction.
//
// One message is answered by one handler at a time (its key's lock): an
// edit or a delete that comes while the message's run is in flight waits
// for that run's reply, without holding up the asker's later messages, and
// of several events that wait for the same message only the newest is
// carried out.
package answer

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/runblock/runblock/bots/internal/attach"
	"github.com/runblock/runblock/bots/internal/progress"
	"github.com/runblock/runblock/bots/internal/replycache"
	"github.com/runblock/runblock/bots/internal/turns"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/formatting"
)

// Platform is what the flow needs of a chat platform; S is the platform's
// own description of where a message is and how to answer it.
type Platform[S any] interface {
	// Send sends r in answer to src: a new reply when to.Reply is "",
	// else in place of that reply, whose files (to.Files) go. A Private
	// r with no reply to replace goes to the asker alone where the
	// platform can (then Sent.ID is ""), else as a reply to src.
	Send(ctx context.Context, src S, to Record[S], r Reply) (Sent, error)
	// Delete deletes the reply of rec and its files; ErrGone when the
	// reply is gone already.
	Delete(ctx context.Context, rec Record[S]) error
	// React adds (or removes) a reaction on src's message, if it has one;
	// a failure costs only the decoration and is the platform's to log.
	React(ctx context.Context, src S, emoji string, add bool)
	// Indicate shows that src's run is queued or running until the flow
	// calls the returned stop, once the result is ready and before it is
	// sent; stop returns settle, which the flow calls once it is sent,
	// with the result's reaction to put on src ("" for none).
	Indicate(ctx context.Context, src S) (stop func() (settle func(reaction string)))
	// Find looks on the platform for the reply to src that a process
	// before this one sent; nil when there is none.
	Find(ctx context.Context, src S) (*Record[S], error)
	// Earlier returns the messages of src's session (session.go) the bot
	// answered, oldest first, each with its reply: what the session's
	// record is recovered from, once, when the flow does not hold it.
	Earlier(ctx context.Context, src S, session string) ([]Past[S], error)
}

// ErrDropped is what a Platform returns for a reply it dropped and has
// logged why (the workspace's token was revoked): the flow logs it no
// more.
var ErrDropped = errors.New("reply dropped")

// ErrGone is what a Platform's Delete returns for a reply that is not
// there (deleted already): the delete is done.
var ErrGone = errors.New("reply gone")

// Reply is an answer ready to send.
type Reply struct {
	Text string
	// Full is the whole output when Text had to be cut, for a file.
	Full  string
	Files []executor.File // the run's files, after Full
	// Tables are for the platform's own tables (formatting.Reply.Tables).
	Tables []formatting.Table
	// Reaction is the reaction the message gets once the reply is sent:
	// a run's result (✅ or ❌); "" for a notice or a refusal.
	Reaction string
	// Private: a refusal that is the asker's business alone (busy,
	// rate-limited, too large).
	Private bool
	// Fallback is the reply without Files, which it names instead, for
	// when the platform refuses them as too large; nil without files, or
	// when Config.TooLarge is "".
	Fallback *Reply
	// Buttons are the reply's buttons (buttons.go), for the platform to
	// show.
	Buttons []Button

	outcome string                    // the run's, for the log
	took    time.Duration             // the run's
	fit     func(int64) (Reply, bool) // Fit; nil without files or Config.TooLarge
	below   bool                      // an edited cell: the cells below it are re-run
}

// Sent is a reply the platform sent.
type Sent struct {
	ID    string   // the reply; "" when it went where it cannot be edited
	Files []string // files the platform sent apart from the reply, to delete with it
	// Full: the platform sent the whole output (Reply.Full) as a file
	// beside the reply, which Full output points to.
	Full bool
}

// Record is what the flow remembers of a message it answered, so that an
// edit re-runs it into the same reply and a delete removes the reply.
type Record[S any] struct {
	Src   S        // the message as last answered
	Reply string   // the reply's id
	Files []string // the reply's separate files (Sent.Files)
	// Reaction is the result reaction on the message, "" for none;
	// ReactionUnknown: the reply was found on the platform (Find), which
	// does not say which result reaction the message shows.
	Reaction        string
	ReactionUnknown bool
	Created         time.Time // when the message was first answered
}

// Request is one event to answer.
type Request[S any] struct {
	Src  S
	What string       // the trigger, for logs: mention, edit, reaction, …
	Log  *slog.Logger // nil: the flow's
	// Key names the message (its channel and id); "" when there is none
	// (a command): nothing is remembered.
	Key  string
	User string // the asker's key in the scheduler; "" for a delete
	Text string // what to extract the code from
	// Extract are the extraction's options; the flow sets the platform.
	Extract formatting.ExtractOptions
	// Stdin, when set, is the run's standard input instead of the one
	// extracted (a modal's input field).
	Stdin string
	Files []attach.Source // the message's files, which go into the run
	// At is when the message was posted; zero when unknown.
	At time.Time
	// Quiet: the message was not addressed to the bot, so no code is no
	// reason to answer.
	Quiet bool
	// Once: an earlier reply means the message is answered already (a
	// redelivered event). Look: that reply may be from a process before
	// this one, to Find when the message is old enough. Rerun: only a
	// message answered before is answered (an edit), and, with Window,
	// only within Window of its first answer.
	Once, Look, Rerun bool
	Window            time.Duration
	// Notice, when set, is sent instead of running.
	Notice *formatting.Notice
	// Session, when set, makes the message a cell of that session
	// (session.go): "slack:T1:C1:1712.000100". Starts: the message is
	// the session's first, so there is nothing earlier to recover.
	// Reset: the message asks for the session to start fresh.
	Session       string
	Starts, Reset bool
	// Export: the message asks for the session as a notebook (export.go).
	Export bool

	turn   *turns.Turn
	ticket *ticket[S]
	tell   func(ctx context.Context, text string) error // a Run again's Click.Tell
	taken  time.Time                                    // when it came: a new record's Created
}

// Config configures a Flow.
type Config struct {
	Platform formatting.Platform
	Runner   executor.Submitter
	Render   formatting.RenderOptions
	// Fetch downloads a message's files into its run; its Log is set per
	// request.
	Fetch attach.Fetcher
	// MaxFiles is the most files one reply carries, the whole output's
	// included; the rest are named with the reason OverMaxFiles. 0: no
	// bound.
	MaxFiles     int
	OverMaxFiles string
	// TooLarge, when set, is why a reply's files are named in its
	// Fallback, for a platform that may refuse them as too large.
	TooLarge string
	// MaxReplies and ReplyTTL bound the memory of answered messages.
	MaxReplies int
	ReplyTTL   time.Duration
	Now        func() time.Time // nil: time.Now
	Replied    func()           // counts a reply or notice sent; nil: none
	Log        *slog.Logger
	// NoSessions (RUNBLOCK_SESSIONS off): every message runs alone, its
	// Request.Session ignored.
	NoSessions bool
	// End, when set, ends a reset session's live process.
	End Ender
	// Clock times the live output (live.go); nil: the real clock.
	Clock Clock
	// Colour: the platform renders ANSI colour (Discord), so the runs and
	// cells ask for coloured tracebacks (executor.Request.Colour).
	Colour bool
}

// clockSkew widens "posted before this process started" for a local clock
// behind the platform's.
const clockSkew = 2 * time.Minute

// Flow answers a platform's messages.
type Flow[S any] struct {
	cfg      Config
	p        Platform[S]
	log      *slog.Logger
	replies  *replycache.Cache[Record[S]] // by Request.Key
	keys     *keys[S]
	turns    *turns.Turns
	openedAt atomic.Int64 // Unix ns: older messages may have been answered by an earlier process
	clock    Clock

	nb        *notebook[S] // the sessions' cells
	sessTurns *turns.Turns // by session: its cells one at a time, in order
	btn       *buttons[S]  // the replies with buttons
}

// New returns a Flow that answers through p.
func New[S any](cfg Config, p Platform[S]) *Flow[S] {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Replied == nil {
		cfg.Replied = func() {}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = realClock{}
	}
	return &Flow[S]{
		cfg: cfg, p: p, log: cfg.Log, clock: cfg.Clock,
		replies:   replycache.New[Record[S]](cfg.MaxReplies, cfg.ReplyTTL, cfg.Now),
		keys:      newKeys[S](),
		turns:     turns.New(),
		nb:        newNotebook[S](),
		sessTurns: turns.New(),
		btn:       newButtons[S](cfg),
	}
}

// Opened marks the start of this process's connection: a message posted
// before it may have been answered by an earlier process.
func (f *Flow[S]) Opened(at time.Time) { f.openedAt.Store(at.UnixNano()) }

// Take gives req its place, where the adapter's events arrive in order:
// its turn among the asker's runs, and its message's newest event. A taken
// Request goes to Answer or Delete, or to Drop.
func (f *Flow[S]) Take(req *Request[S]) {
	req.taken = f.cfg.Now()
	if req.User != "" {
		req.turn = f.turns.Take(req.User)
	}
	if req.Key != "" {
		req.ticket = f.keys.take(req.Key, req.Src)
	}
}

// Drop gives up a taken Request that will not be answered.
func (f *Flow[S]) Drop(req Request[S]) {
	req.turn.Done()
	req.ticket.release()
}

// Recall returns what is remembered of the message key.
func (f *Flow[S]) Recall(key string) (Record[S], bool) { return f.replies.Get(key) }

// Last returns the message key as last taken (while it is being answered)
// or else as last answered, and whether there is one: an edit is told
// from an update that changed nothing by it.
func (f *Flow[S]) Last(key string) (S, bool) {
	if src, ok := f.keys.last(key); ok {
		return src, true
	}
	rec, ok := f.replies.Get(key)
	return rec.Src, ok
}

// Answer answers req: one reply per message, edited in place by re-runs;
// the platform's indication while it waits and runs, then the result's
// reaction. It goes through the phases of an answering, in order: take
// the message, run it (its place in the queue, then its output so far),
// settle the reply, remember it.
func (f *Flow[S]) Answer(ctx context.Context, req Request[S]) {
	if req.taken.IsZero() {
		req.taken = f.cfg.Now()
	}
	a := &answering[S]{f: f, req: req, log: f.logger(req), turn: req.turn}
	defer a.release() // also when the run panics
	ex, ok := a.take(ctx)
	if !ok {
		return
	}
	out, replyID := a.run(ctx, ex)
	if sent, prev, ok := a.settle(ctx, out, replyID); ok {
		a.remember(ctx, out, sent, prev)
	}
}

// answering is one Request being answered, phase by phase. The asker's
// turn comes before anything that may block and passes on once the
// scheduler has the job (or once there is none to give it); the
// message's lock and the session's turn are held to the end.
type answering[S any] struct {
	f    *Flow[S]
	req  Request[S]
	log  *slog.Logger
	turn *turns.Turn // the asker's
	rec  *Record[S]  // the message's earlier answer; nil for none
	cell *cellRun[S] // a session's cell; nil for a run alone
	ind  indication
}

// release gives up what the answering holds.
func (a *answering[S]) release() {
	a.cell.done()
	a.ind.end("")
	a.req.ticket.release()
	a.turn.Done()
}

// take waits for the asker's turn and, for a message with a key, its
// lock, and returns the code to run; false when the answer ends here: a
// notice, a reset, a redelivery, an edit out of time, no code.
func (a *answering[S]) take(ctx context.Context) (formatting.Extraction, bool) {
	f, req := a.f, a.req
	a.turn.Wait(ctx)
	switch {
	case req.Notice != nil:
		a.turn.Done()
		f.notify(ctx, a.log, req.Src, formatting.RenderNotice(f.cfg.Platform, *req.Notice))
		return formatting.Extraction{}, false
	case req.Reset:
		a.turn.Done()
		f.reset(ctx, a.log, req)
		return formatting.Extraction{}, false
	case req.Export:
		a.turn.Done()
		f.export(ctx, a.log, req)
		return formatting.Extraction{}, false
	case req.Key != "" && !a.lock(ctx):
		return formatting.Extraction{}, false
	}
	opts := req.Extract
	opts.Platform = f.cfg.Platform
	ex := formatting.Extract(req.Text, opts)
	if req.Stdin != "" {
		ex.Stdin = req.Stdin
	}
	switch {
	case !ex.Found && f.sessions(req) && hasNotebook(req.Files):
		a.turn.Done()
		f.importNotebook(ctx, a.log, req)
		return ex, false
	case !ex.Found:
		a.turn.Done()
		f.noCode(ctx, a.log, req, a.rec, ex)
		return ex, false
	}
	return ex, true
}

// lock locks the message and recalls its earlier answer; false when it is
// not to be answered (again).
func (a *answering[S]) lock(ctx context.Context) bool {
	f, req := a.f, &a.req
	if req.ticket == nil {
		req.ticket = f.keys.take(req.Key, req.Src)
	}
	if !req.ticket.tryLock() {
		// The message's earlier event is being answered: wait for it
		// without holding up the asker's later messages, then queue
		// again.
		a.turn.Done()
		req.ticket.lock()
		if req.User != "" {
			a.turn = f.turns.Take(req.User)
			a.turn.Wait(ctx)
		}
	}
	if req.ticket.stale() {
		a.log.Debug("a newer event for the message came meanwhile; it is answered instead")
		return false
	}
	a.rec = f.recall(ctx, a.log, *req)
	switch {
	case a.rec != nil && req.Once:
		a.log.Info("already answered; a redelivered event is not answered again", "reply", a.rec.Reply)
		return false
	case a.rec == nil && req.Rerun:
		return false
	case req.Rerun && req.Window > 0 && f.cfg.Now().Sub(a.rec.Created) > req.Window:
		a.log.Debug("edited past the edit window; not re-run")
		return false
	}
	return true
}

// run queues and runs ex, alone or as a cell of the request's session,
// showing its place in the queue, then its output so far, in the reply.
// It returns the result and the reply the waiting showed it in ("" for
// none).
func (a *answering[S]) run(ctx context.Context, ex formatting.Extraction) (Reply, string) {
	f, req := a.f, a.req
	a.ind = indication{stop: f.p.Indicate(ctx, req.Src)}
	replyID := ""
	if a.rec != nil {
		f.unreact(ctx, req.Src, *a.rec)
		replyID = a.rec.Reply
	}
	prog := f.watchProgress(ctx, a.log, req.Src, replyID)
	defer prog.Stop() // Stop is idempotent; this one covers a panicking runner
	lv := f.watchLive(ctx, a.log, req.Src, ex, prog)
	defer lv.stop()
	runCtx := executor.WithOutput(ctx, lv.output)
	var out Reply
	if f.sessions(req) {
		a.cell = f.enter(ctx, a.log, req)
		if r, ok := f.replies.Get(req.Key); ok && a.rec != nil {
			a.rec = &r // a re-run of the cells above may have changed it
		}
		out = a.cell.run(runCtx, a.log, a.turn, ex, lv.progress)
	} else {
		out = f.Run(runCtx, a.log, a.turn, req.User, ex, req.Files, lv.progress)
	}
	replyID = lv.stop()
	a.ind.stopIt()
	return out, replyID
}

// watchProgress shows a run's place in the queue in the reply id (""
// posts one).
func (f *Flow[S]) watchProgress(ctx context.Context, log *slog.Logger, src S, id string) *progress.Watcher {
	return progress.Watch(ctx, log, progress.Chat{
		Post: func(ctx context.Context, text string) (string, error) {
			s, err := f.p.Send(ctx, src, Record[S]{}, Reply{Text: text})
			return s.ID, err
		},
		Edit: func(ctx context.Context, id, text string) error {
			_, err := f.p.Send(ctx, src, Record[S]{Src: src, Reply: id}, Reply{Text: text})
			return err
		},
		Render: func(pr executor.Progress) string { return formatting.RenderProgress(f.cfg.Platform, pr) },
	}, id)
}

// settle sends out: a refusal with no reply to replace to the asker
// alone, else the reply, posted or in place of the earlier one (or of
// the waiting's, replyID), with its buttons and its reaction. It returns
// what was sent and the record it replaced; false when there is nothing
// to remember.
func (a *answering[S]) settle(ctx context.Context, out Reply, replyID string) (Sent, Record[S], bool) {
	f, req := a.f, a.req
	prev := Record[S]{Src: req.Src, Reply: replyID, Created: req.taken}
	switch {
	case out.Reaction == "" && ctx.Err() != nil:
		return Sent{}, prev, false // abandoned at shutdown: runerror logged it
	case out.Private && replyID == "":
		a.ind.end("")
		if req.tell != nil { // a button's clicker: only they see it
			f.tell(ctx, a.log, Click[S]{Tell: req.tell}, out.Text)
			return Sent{}, prev, false
		}
		f.remember(req, f.notify(ctx, a.log, req.Src, out.Text))
		return Sent{}, prev, false
	}
	if a.rec != nil {
		prev = *a.rec
	}
	token := f.arm(req, &out)
	sent, err := f.p.Send(ctx, req.Src, prev, out)
	f.sent(token, sent)
	switch {
	case err != nil && ctx.Err() != nil:
		a.log.Info("reply abandoned at shutdown", "err", err)
	case errors.Is(err, ErrDropped):
	case err != nil:
		a.log.Error("sending the reply", "err", err)
	}
	if err != nil {
		a.ind.end("")
		return sent, prev, false
	}
	a.ind.end(out.Reaction)
	f.cfg.Replied()
	if out.Reaction != "" {
		a.log.Info("answered", "outcome", out.outcome, "duration", out.took)
	}
	return sent, prev, true
}

// remember records the reply sent in place of prev, and for a cell, in
// its session's record, re-running the cells below an edited one.
func (a *answering[S]) remember(ctx context.Context, out Reply, sent Sent, prev Record[S]) {
	f, req := a.f, a.req
	if req.Key != "" && sent.ID != "" {
		f.replies.Put(req.Key, Record[S]{Src: req.Src, Reply: sent.ID, Files: sent.Files, Reaction: out.Reaction, Created: prev.Created})
	}
	if a.cell != nil {
		f.nb.replied(a.cell.th, sent.ID)
		if out.below {
			a.cell.below(ctx, a.log)
		}
	}
}

// noCode answers a message without code: an answered one says so in its
// reply, a new one addressed to the bot gets a notice.
func (f *Flow[S]) noCode(ctx context.Context, log *slog.Logger, req Request[S], rec *Record[S], ex formatting.Extraction) {
	text := formatting.RenderNotice(f.cfg.Platform, ex.Notice())
	switch {
	case rec != nil: // edited into something that does not run: say so in place
		sent, err := f.p.Send(ctx, req.Src, *rec, Reply{Text: text})
		if err != nil {
			if !errors.Is(err, ErrDropped) {
				log.Error("updating the reply", "err", err)
			}
			return
		}
		f.cfg.Replied()
		f.unreact(ctx, req.Src, *rec)
		f.nb.forget(req.Key) // no longer a cell
		f.replies.Put(req.Key, Record[S]{Src: req.Src, Reply: rec.Reply, Files: sent.Files, Created: rec.Created})
	case !req.Quiet:
		f.remember(req, f.notify(ctx, log, req.Src, text))
	}
}

// remember records a notice the platform sent as a reply (id), so that
// fixing the message runs it into that reply.
func (f *Flow[S]) remember(req Request[S], id string) {
	if id != "" && req.Key != "" {
		f.replies.Put(req.Key, Record[S]{Src: req.Src, Reply: id, Created: req.taken})
	}
}

// Delete deletes the reply of req's message, which was deleted; a delete
// that comes while the message is answered waits for that reply.
func (f *Flow[S]) Delete(ctx context.Context, req Request[S]) {
	req.turn.Done()
	log := f.logger(req)
	if req.ticket == nil {
		req.ticket = f.keys.take(req.Key, req.Src)
	}
	defer req.ticket.release()
	req.ticket.lock()
	rec := f.recall(ctx, log, req)
	if rec == nil {
		return
	}
	f.replies.Remove(req.Key)
	f.nb.forget(req.Key)
	if err := f.p.Delete(ctx, *rec); err != nil && !errors.Is(err, ErrDropped) && !errors.Is(err, ErrGone) {
		log.Warn("deleting the reply of a deleted message", "reply", rec.Reply, "err", err)
	}
}

func (f *Flow[S]) logger(req Request[S]) *slog.Logger {
	log := req.Log
	if log == nil {
		log = f.log
	}
	return log.With("trigger", req.What)
}

// recall returns the record of req's message: from memory, else, when
// req.Look is set and the message may have been answered before this
// process knew of it, from the platform. Nil means not answered, or not
// found (which is logged).
func (f *Flow[S]) recall(ctx context.Context, log *slog.Logger, req Request[S]) *Record[S] {
	if rec, ok := f.replies.Get(req.Key); ok {
		return &rec
	}
	if !req.Look || !f.MayHaveAnswered(req.At) {
		return nil
	}
	rec, err := f.p.Find(ctx, req.Src)
	if err != nil {
		log.Warn("looking for an earlier reply", "err", err)
		return nil
	}
	if rec != nil {
		log.Debug("earlier reply found", "reply", rec.Reply)
		f.replies.Put(req.Key, *rec)
	}
	return rec
}

// MayHaveAnswered reports whether a message posted at (zero: unknown) that
// the memory does not hold may still have a reply: it was posted before
// this process started (a restart), or so long ago that its entry may have
// expired, or the memory is full and may have dropped it.
func (f *Flow[S]) MayHaveAnswered(at time.Time) bool {
	if at.IsZero() {
		return false
	}
	return at.Before(time.Unix(0, f.openedAt.Load()).Add(clockSkew)) || f.cfg.Now().Sub(at) > f.cfg.ReplyTTL ||
		f.replies.Len() >= f.cfg.MaxReplies
}

// unreact takes the result reaction of rec off its message: both possible
// ones when which is unknown.
func (f *Flow[S]) unreact(ctx context.Context, src S, rec Record[S]) {
	if rec.ReactionUnknown {
		for _, ok := range []bool{true, false} {
			f.p.React(ctx, src, formatting.Reply{OK: ok}.Reaction(f.cfg.Platform), false)
		}
		return
	}
	if rec.Reaction != "" {
		f.p.React(ctx, src, rec.Reaction, false)
	}
}

// notify sends text to the asker and returns the id of the reply it became,
// if it did.
func (f *Flow[S]) notify(ctx context.Context, log *slog.Logger, src S, text string) string {
	sent, err := f.p.Send(ctx, src, Record[S]{}, Reply{Text: text, Private: true})
	if err != nil {
		if !errors.Is(err, ErrDropped) {
			log.Warn("sending a notice", "err", err)
		}
		return ""
	}
	f.cfg.Replied()
	return sent.ID
}

// indication is a Platform.Indicate in progress; stopIt and end may each
// be called more than once, end with the zero value too.
type indication struct {
	stop   func() func(string)
	settle func(string)
	ended  bool
}

func (in *indication) stopIt() {
	if in.settle == nil && in.stop != nil {
		in.settle = in.stop()
	}
}

// end settles the indication with the result's reaction, once.
func (in *indication) end(reaction string) {
	in.stopIt()
	if !in.ended && in.settle != nil {
		in.ended = true
		in.settle(reaction)
	}
}
