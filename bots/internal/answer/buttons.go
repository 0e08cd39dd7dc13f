package answer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/runblock/runblock/bots/internal/attach"
	"github.com/runblock/runblock/bots/internal/replycache"
	"github.com/runblock/runblock/formatting"
)

// Buttons: every reply to a run carries Delete and Run again, Full
// output where its view was cut, and Export notebook on a session's cell. A button's id names its action and a
// token the flow keeps, in bounded memory, with what the button needs: a
// click whose token is gone (a restart, or past the memory) is answered
// with TooOld, never an error or silence. Each platform maps Reply.Buttons
// to its own components and turns a click into a Click.

// Action is what a button does.
type Action string

// The actions of a reply's buttons.
const (
	ActionDelete Action = "delete"
	ActionAgain  Action = "again"
	ActionFull   Action = "full"
	ActionExport Action = "export" // a session's cell: the session as a notebook (export.go)
)

// Button is a button of a reply.
type Button struct {
	Action Action
	Label  string
	ID     string // the platform's custom id: ButtonID
}

// What a click is answered with, where only the clicker sees it.
const (
	TooOld       = "This reply is too old for its buttons; run the code again."
	OnlyAuthor   = "Only the author can delete this."
	NotDeleted   = "This reply could not be deleted; try again in a moment, or ask a moderator to remove it."
	Deleted      = "This reply was deleted."
	FullOutputIs = "Full output of the reply above:"
	// FullOutputIn points to the file of a reply that holds its whole
	// output (Sent.Full): posting it again would be a second copy.
	FullOutputIn = "The full output is in output.txt, the file sent with the reply."
)

// buttonPrefix starts every button id the flow makes.
const buttonPrefix = "rb:"

// Bounds of the buttons' memory: the entries, and the whole output an
// entry keeps for Full output (a longer one has no Full output button;
// the reply has it as a file already).
const (
	maxButtons  = 2000
	buttonsTTL  = 24 * time.Hour
	maxFullKept = 128 << 10
)

// ButtonID is the id of the button for action on the reply of token.
func ButtonID(action Action, token string) string {
	return buttonPrefix + string(action) + ":" + token
}

// ParseButton returns the action and token of a button id the flow made;
// ok is false for any other id.
func ParseButton(id string) (action Action, token string, ok bool) {
	rest, ok := strings.CutPrefix(id, buttonPrefix)
	if !ok {
		return "", "", false
	}
	a, token, ok := strings.Cut(rest, ":")
	switch Action(a) {
	case ActionDelete, ActionAgain, ActionFull, ActionExport:
		return Action(a), token, ok && token != ""
	}
	return "", "", false
}

// armed is what the flow keeps of a reply with buttons.
type armed[S any] struct {
	src     S      // the message answered
	key     string // its Request.Key
	author  string // the scheduler's key of who ran it
	text    string // what its code was extracted from
	extract formatting.ExtractOptions
	stdin   string
	files   []attach.Source
	session string
	full    string
	reply   string   // the reply, once sent
	sent    []string // its separate files
	// fullFile is the file of the reply with its whole output, when the
	// platform sent one (Sent.Full).
	fullFile bool
	// deleted: a Delete claimed the reply, and it is gone unless that
	// delete fails; its buttons are never given back once it is gone.
	deleted bool
	ready   chan struct{} // closed once the reply is sent, or failed
}

// buttons keeps the replies with buttons by token.
type buttons[S any] struct {
	seq     atomic.Uint64
	prefix  string // per process: a token of an earlier process is never taken for one of this one's
	entries *replycache.Cache[armed[S]]
}

// arming is a reply whose buttons are given out and that is being sent.
type arming struct {
	token string
	ready chan struct{}
}

// arm gives out, a run's result for req, its buttons; nil for a reply
// without buttons.
func (f *Flow[S]) arm(req Request[S], out *Reply) *arming {
	if out.Reaction == "" || out.Private {
		return nil
	}
	b := f.btn
	token := b.prefix + strconv.FormatUint(b.seq.Add(1), 36)
	e := armed[S]{src: req.Src, key: req.Key, author: req.User, text: req.Text, extract: req.Extract, stdin: req.Stdin, files: req.Files, session: req.Session,
		ready: make(chan struct{})}
	out.Buttons = []Button{
		{Action: ActionAgain, Label: "Run again", ID: ButtonID(ActionAgain, token)},
		{Action: ActionDelete, Label: "Delete", ID: ButtonID(ActionDelete, token)},
	}
	if out.Full != "" && len(out.Full) <= maxFullKept {
		e.full = out.Full
		out.Buttons = append(out.Buttons, Button{Action: ActionFull, Label: "Full output", ID: ButtonID(ActionFull, token)})
	}
	if req.Session != "" && !f.cfg.NoSessions {
		out.Buttons = append(out.Buttons, Button{Action: ActionExport, Label: "Export notebook", ID: ButtonID(ActionExport, token)})
	}
	if out.Fallback != nil {
		out.Fallback.Buttons = out.Buttons
	}
	b.entries.Put(token, e)
	return &arming{token: token, ready: e.ready}
}

// asked is what a reply's buttons need of req, without its place in the
// queues.
func asked[S any](req Request[S]) Request[S] {
	return Request[S]{Src: req.Src, Key: req.Key, User: req.User, Text: req.Text, Extract: req.Extract, Stdin: req.Stdin, Files: req.Files, Session: req.Session}
}

// sent notes s, the reply of a's buttons (none when it failed); nil is a
// no-op.
func (f *Flow[S]) sent(a *arming, s Sent) {
	if a == nil {
		return
	}
	if s.ID == "" {
		f.btn.entries.Remove(a.token)
	} else {
		f.btn.entries.Update(a.token, func(e *armed[S]) { e.reply, e.sent, e.fullFile = s.ID, s.Files, s.Full })
	}
	close(a.ready)
}

// Click is a click on a reply's button.
type Click[S any] struct {
	ID string // the button's id
	// Src is where the click happened, as a message to answer: a Run
	// again replies there (in the reply's thread), as a job of User.
	Src  S
	User string // the clicker's key in the scheduler
	// Admin reports whether the clicker may delete anyone's reply; nil:
	// no one may but the author.
	Admin func(ctx context.Context) bool
	// Tell answers the clicker alone.
	Tell func(ctx context.Context, text string) error
	// Remove, when set, deletes the reply clicked on through the click
	// itself, instead of Platform.Delete: Discord's answer to a command,
	// which its own interaction may reach no longer (its token lives 15
	// minutes), while the click's may.
	Remove func(ctx context.Context) error
	Log    *slog.Logger // nil: the flow's
}

// Click carries out a click on a reply's button. The platform acknowledged
// it already (within its 3 s).
func (f *Flow[S]) Click(ctx context.Context, c Click[S]) {
	log := c.Log
	if log == nil {
		log = f.log
	}
	action, token, _ := ParseButton(c.ID)
	log = log.With("trigger", "button", "action", action, "user", c.User)
	e, ok := f.btn.entries.Get(token)
	if ok && e.reply == "" {
		// A click while the reply is still being sent (its files
		// uploaded): wait for it.
		select {
		case <-e.ready:
		case <-ctx.Done():
			return
		}
		e, ok = f.btn.entries.Get(token)
	}
	switch {
	case ok && e.deleted:
		f.tell(ctx, log, c, Deleted)
		return
	case !ok || action == ActionDelete && e.reply == "" || action == ActionFull && e.full == "":
		f.tell(ctx, log, c, TooOld)
		return
	}
	switch action {
	case ActionDelete:
		f.clickDelete(ctx, log, c, token, e)
	case ActionAgain:
		f.Answer(ctx, Request[S]{Src: c.Src, What: "run again", Log: c.Log, User: c.User, Text: e.text, Extract: e.extract, Stdin: e.stdin, Files: e.files, Session: e.session, tell: c.Tell})
	case ActionExport:
		f.export(ctx, log, Request[S]{Src: c.Src, Session: e.session})
	case ActionFull:
		if e.fullFile {
			f.tell(ctx, log, c, FullOutputIn)
			return
		}
		if _, err := f.p.Send(ctx, c.Src, Record[S]{}, Reply{Text: FullOutputIs, Full: e.full}); err != nil {
			log.Error("sending the full output", "err", err)
			return
		}
		f.cfg.Replied()
	}
}

// clickDelete deletes the reply of token for a clicker who may: a reply
// that is gone already, deleted by another click or by hand, is no
// failure.
func (f *Flow[S]) clickDelete(ctx context.Context, log *slog.Logger, c Click[S], token string, e armed[S]) {
	if c.User != e.author && (c.Admin == nil || !c.Admin(ctx)) {
		f.tell(ctx, log, c, OnlyAuthor)
		return
	}
	claimed := false
	f.btn.entries.Update(token, func(e *armed[S]) { claimed, e.deleted = !e.deleted, true })
	if !claimed { // another click is deleting it, or did
		f.tell(ctx, log, c, Deleted)
		return
	}
	switch err := f.deleteArmed(ctx, token, e, c.Remove); {
	case errors.Is(err, ErrGone):
		log.Info("the reply of a Delete was gone already", "reply", e.reply)
		f.tell(ctx, log, c, Deleted)
	case err != nil:
		// Given back, so that the clicker can try again.
		f.btn.entries.Update(token, func(e *armed[S]) { e.deleted = false })
		log.Warn("deleting a reply by its button", "reply", e.reply, "err", err)
		f.tell(ctx, log, c, NotDeleted)
	default:
		log.Info("reply deleted by its button", "reply", e.reply)
	}
}

// deleteArmed deletes the reply of token, through remove when it is set,
// and forgets it; the message's lock keeps it from racing an edit's re-run.
func (f *Flow[S]) deleteArmed(ctx context.Context, token string, e armed[S], remove func(context.Context) error) error {
	if e.key != "" {
		t := f.keys.take(e.key, e.src)
		defer t.release()
		t.lock()
		if rec, ok := f.replies.Get(e.key); ok && rec.Reply == e.reply {
			f.replies.Remove(e.key)
			f.nb.forget(e.key)
			e.sent = rec.Files
		}
	}
	if remove != nil {
		return remove(ctx)
	}
	return f.p.Delete(ctx, Record[S]{Src: e.src, Reply: e.reply, Files: e.sent})
}

// newButtons returns the buttons' memory, its tokens told apart from an
// earlier process's by a random prefix.
func newButtons[S any](cfg Config) *buttons[S] {
	var r [4]byte
	_, _ = rand.Read(r[:]) // crypto/rand.Read never fails
	return &buttons[S]{prefix: hex.EncodeToString(r[:]) + ".", entries: replycache.New[armed[S]](maxButtons, buttonsTTL, cfg.Now)}
}

func (f *Flow[S]) tell(ctx context.Context, log *slog.Logger, c Click[S], text string) {
	if c.Tell == nil || text == "" {
		return
	}
	if err := c.Tell(ctx, text); err != nil {
		log.Warn("answering a click", "err", err)
		return
	}
	f.cfg.Replied()
}
