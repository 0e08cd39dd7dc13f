package answer

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/formatting"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// msg is the fake platform's source: a message id.
type msg string

// fakePlatform records what the flow does, in order, as lines like
// "post m1: text" or "react m1 +✅"; a nil func field takes the default.
type fakePlatform struct {
	notify  func(src msg, text string) (string, error)
	find    func(src msg) (*Record[msg], error)
	earlier func(src msg, session string) ([]Past[msg], error)
	del     func(rec Record[msg]) error
	full    bool // a reply with Full sends it as a file (Sent.Full)

	mu      sync.Mutex
	events  []string
	replies int
	waits   map[string]chan struct{}
}

func (p *fakePlatform) add(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := fmt.Sprintf(format, args...)
	p.events = append(p.events, e)
	if w, ok := p.waits[e]; ok {
		close(w)
		delete(p.waits, e)
	}
}

// await returns a channel that closes once event e is done.
func (p *fakePlatform) await(e string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waits == nil {
		p.waits = make(map[string]chan struct{})
	}
	w := make(chan struct{})
	p.waits[e] = w
	return w
}

// Events returns what was done so far.
func (p *fakePlatform) Events() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.events)
}

// Send records a post, an edit or a notice, as the flow asked for one.
func (p *fakePlatform) Send(ctx context.Context, src msg, to Record[msg], r Reply) (Sent, error) {
	switch {
	case to.Reply != "":
		return p.edit(to, r)
	case r.Private:
		id, err := p.notice(src, r.Text)
		return Sent{ID: id}, err
	}
	return p.post(src, r)
}

func (p *fakePlatform) post(src msg, r Reply) (Sent, error) {
	p.mu.Lock()
	p.replies++
	id := fmt.Sprintf("r%d", p.replies)
	p.mu.Unlock()
	p.add("post %s: %s", src, r.Text)
	return Sent{ID: id, Full: p.full && r.Full != ""}, nil
}

func (p *fakePlatform) edit(rec Record[msg], r Reply) (Sent, error) {
	p.add("edit %s: %s", rec.Reply, r.Text)
	return Sent{ID: rec.Reply}, nil
}

func (p *fakePlatform) Delete(_ context.Context, rec Record[msg]) error {
	p.add("delete %s", rec.Reply)
	if p.del != nil {
		return p.del(rec)
	}
	return nil
}

func (p *fakePlatform) React(_ context.Context, src msg, emoji string, add bool) {
	sign := "-"
	if add {
		sign = "+"
	}
	p.add("react %s %s%s", src, sign, emoji)
}

func (p *fakePlatform) Indicate(ctx context.Context, src msg) func() func(string) {
	p.add("react %s +⏳", src)
	return func() func(string) {
		return func(reaction string) {
			p.add("react %s -⏳", src)
			if reaction != "" {
				p.React(ctx, src, reaction, true)
			}
		}
	}
}

func (p *fakePlatform) notice(src msg, text string) (string, error) {
	if p.notify != nil {
		return p.notify(src, text)
	}
	p.add("notify %s: %s", src, text)
	return "", nil
}

func (p *fakePlatform) Find(_ context.Context, src msg) (*Record[msg], error) {
	if p.find != nil {
		return p.find(src)
	}
	return nil, nil
}

func (p *fakePlatform) Earlier(_ context.Context, src msg, session string) ([]Past[msg], error) {
	p.add("earlier %s %s", src, session)
	if p.earlier != nil {
		return p.earlier(src, session)
	}
	return nil, nil
}

// newFlow returns a Flow on a fake platform for Discord's rendering.
func newFlow(t *testing.T, r executor.Submitter, configure func(*Config)) (*Flow[msg], *fakePlatform) {
	t.Helper()
	p := &fakePlatform{}
	cfg := Config{Platform: formatting.Discord, Runner: r, MaxReplies: 100, ReplyTTL: time.Hour}
	if configure != nil {
		configure(&cfg)
	}
	return New[msg](cfg, p), p
}

// request is a message m by user u with Python code.
func request(m msg, u, code string) Request[msg] {
	return Request[msg]{Src: m, What: "test", Key: string(m), User: u, Text: "```py\n" + code + "\n```"}
}

// answer takes req in order and answers it in a goroutine; the returned
// channel closes once it is answered.
func answer(f *Flow[msg], req Request[msg]) <-chan struct{} {
	f.Take(&req)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.Answer(context.Background(), req)
	}()
	return done
}

func want(t *testing.T, p *fakePlatform, events ...string) {
	t.Helper()
	if got := p.Events(); !slices.Equal(got, events) {
		t.Fatalf("events:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(events, "\n  "))
	}
}

// ran is the reply to a run of code on fakerunner.Runner.
func ran(code string) string {
	return formatting.RenderRun(formatting.Discord, formatting.Extraction{Found: true, Code: code},
		executor.Result{Success: true, Stdout: "ran: " + code + "\n"}, formatting.RenderOptions{}).Text
}

func progressText(pr executor.Progress) string {
	return formatting.RenderProgress(formatting.Discord, pr)
}

func TestAnswerPostsReactsAndDoesNotAnswerARedeliveryAgain(t *testing.T) {
	runner := &fakerunner.Runner{}
	f, p := newFlow(t, runner, nil)
	req := request("m1", "u", "print(1)")
	req.Once = true
	<-answer(f, req)
	<-answer(f, req)
	want(t, p, "react m1 +⏳", "post m1: "+ran("print(1)"), "react m1 -⏳", "react m1 +✅")
	if rec, ok := f.Recall("m1"); !ok || rec.Reply != "r1" || rec.Reaction != "✅" {
		t.Fatalf("record %+v %v", rec, ok)
	}
	if n := len(runner.Jobs()); n != 1 {
		t.Fatalf("%d jobs, want 1", n)
	}
}

// TestEditRerunsInItsTurnAndShowsItsPlace: an edit's re-run takes its
// author's turn where it came, shows its place in the queue in the reply,
// and replaces the reply with its result; the earlier reaction goes first.
func TestEditRerunsInItsTurnAndShowsItsPlace(t *testing.T) {
	release := make(chan struct{})
	runner := &fakerunner.Runner{Func: func(ctx context.Context, job executor.Job) (executor.Result, error) {
		if job.Request.Code == "print(2)" {
			job.Progress(executor.Progress{State: executor.StateQueued, Ahead: 2})
			<-release
			job.Progress(executor.Progress{State: executor.StateRunning})
		}
		return fakerunner.Echo("ran: ")(ctx, job)
	}}
	f, p := newFlow(t, runner, nil)
	<-answer(f, request("m1", "u", "print(1)"))
	queued := p.await("edit r1: " + progressText(executor.Progress{State: executor.StateQueued, Ahead: 2}))

	edit := request("m1", "u", "print(2)")
	edit.Rerun = true
	f.Take(&edit)
	next := request("m2", "u", "print(3)")
	nextDone := answer(f, next) // its handler starts first, but waits for the edit's turn
	editDone := make(chan struct{})
	go func() {
		defer close(editDone)
		f.Answer(context.Background(), edit)
	}()
	<-queued
	// fakerunner.Runner reports the job running before Func runs; the
	// queue position comes after it, as from a slow scheduler.
	close(release)
	<-editDone
	<-nextDone
	var codes []string
	for _, j := range runner.Jobs() {
		codes = append(codes, j.Request.Code)
	}
	if !slices.Equal(codes, []string{"print(1)", "print(2)", "print(3)"}) {
		t.Fatalf("jobs %v: the edit lost its place", codes)
	}
	var edits []string
	for _, e := range p.Events() {
		if strings.HasPrefix(e, "edit r1: ") || e == "react m1 -✅" {
			edits = append(edits, e)
		}
	}
	wantEdits := []string{
		"react m1 -✅",
		"edit r1: " + progressText(executor.Progress{State: executor.StateQueued, Ahead: 2}),
		"edit r1: " + progressText(executor.Progress{State: executor.StateRunning}),
		"edit r1: " + ran("print(2)"),
	}
	if !slices.Equal(edits, wantEdits) {
		t.Fatalf("the reply of m1:\n  %s\nwant:\n  %s", strings.Join(edits, "\n  "), strings.Join(wantEdits, "\n  "))
	}
}

// TestEventsWhileInFlight: edits that come while the message runs wait for
// its reply without holding up the author's next message, and only the
// newest of them runs; a delete that comes then deletes the reply once it
// is there.
func TestEventsWhileInFlight(t *testing.T) {
	runner, started, release := fakerunner.Gated()
	f, p := newFlow(t, runner, nil)
	first := answer(f, request("m1", "u", "print(1)"))
	<-started

	var edits []<-chan struct{}
	for _, code := range []string{"print('a')", "print('b')"} {
		edit := request("m1", "u", code)
		edit.Rerun = true
		edits = append(edits, answer(f, edit))
	}
	next := answer(f, request("m2", "u", "print(2)"))
	<-started // the next message runs while m1 still does
	close(release)
	<-first
	<-next
	for _, done := range edits {
		<-done
	}
	var codes []string
	for _, j := range runner.Jobs() {
		codes = append(codes, j.Request.Code)
	}
	if !slices.Equal(codes, []string{"print(1)", "print(2)", "print('b')"}) {
		t.Fatalf("jobs %v, want m1, m2, then only the newest edit", codes)
	}
	rec, _ := f.Recall("m1")
	var m1 []string
	for _, e := range p.Events() {
		if strings.Contains(e, " m1 ") || strings.HasPrefix(e, "edit "+rec.Reply+":") {
			m1 = append(m1, e)
		}
	}
	if m1[len(m1)-1] != "react m1 +✅" || m1[len(m1)-3] != "edit "+rec.Reply+": "+ran("print('b')") {
		t.Fatalf("events of m1 %v, want its reply edited into the newest edit's result", m1)
	}

	// A delete while the message runs again.
	runner, started, release = fakerunner.Gated()
	f, p = newFlow(t, runner, nil)
	running := answer(f, request("m1", "u", "print(1)"))
	<-started
	del := Request[msg]{Src: "m1", What: "delete", Key: "m1"}
	f.Take(&del)
	deleted := make(chan struct{})
	go func() {
		defer close(deleted)
		f.Delete(context.Background(), del)
	}()
	close(release)
	<-running
	<-deleted
	if evs := p.Events(); evs[len(evs)-1] != "delete r1" {
		t.Fatalf("events %v, want the reply deleted last", evs)
	}
	if _, ok := f.Recall("m1"); ok {
		t.Fatal("the deleted message is still remembered")
	}
}

// TestNoCode: a notice the platform sends as a reply is remembered, and
// fixing the message runs it into that reply; an ephemeral notice is not,
// and a quiet message without code gets nothing.
func TestNoCode(t *testing.T) {
	f, p := newFlow(t, &fakerunner.Runner{}, nil)
	p.notify = func(src msg, text string) (string, error) {
		p.add("reply %s: %s", src, text)
		return "n1", nil
	}
	<-answer(f, Request[msg]{Src: "m1", Key: "m1", User: "u", Text: "hello there", Extract: formatting.ExtractOptions{Triggered: true}})
	fix := request("m1", "u", "print(1)")
	fix.Rerun = true
	<-answer(f, fix)
	noCode := formatting.RenderNotice(formatting.Discord, formatting.NoticeNoCode)
	want(t, p, "reply m1: "+noCode, "react m1 +⏳", "edit n1: "+ran("print(1)"), "react m1 -⏳", "react m1 +✅")

	f, p = newFlow(t, &fakerunner.Runner{}, nil)
	<-answer(f, Request[msg]{Src: "m1", Key: "m1", User: "u", Text: "hello", Extract: formatting.ExtractOptions{Triggered: true}})
	<-answer(f, fix)
	<-answer(f, Request[msg]{Src: "m2", Key: "m2", User: "u", Text: "hello", Quiet: true})
	notAllowed := formatting.NoticeChannelNotAllowed
	<-answer(f, Request[msg]{Src: "m3", Key: "m3", User: "u", Text: "```py\nprint(1)\n```", Notice: &notAllowed})
	want(t, p, "notify m1: "+noCode, "notify m3: "+formatting.RenderNotice(formatting.Discord, notAllowed))
	for _, m := range []string{"m1", "m2", "m3"} {
		if _, ok := f.Last(m); ok {
			t.Errorf("%s is still held or remembered", m)
		}
	}
}

// TestFoundReplyIsEditedAndBothReactionsGo: a reply found on the platform
// (an earlier process's) is edited in place; which result reaction the
// message shows is unknown, so both go before the new one.
func TestFoundReplyIsEditedAndBothReactionsGo(t *testing.T) {
	f, p := newFlow(t, &fakerunner.Runner{}, nil)
	started := time.Now()
	f.Opened(started)
	p.find = func(src msg) (*Record[msg], error) {
		return &Record[msg]{Src: src, Reply: "old", ReactionUnknown: true, Created: started.Add(-time.Minute)}, nil
	}
	fresh := request("m2", "u", "print(1)")
	fresh.Look, fresh.Rerun, fresh.At = true, true, started.Add(5*time.Minute)
	<-answer(f, fresh) // newer than the process: not looked for
	edit := request("m1", "u", "print(2)")
	edit.Look, edit.Rerun, edit.At = true, true, started.Add(-time.Minute)
	<-answer(f, edit)
	want(t, p, "react m1 +⏳", "react m1 -✅", "react m1 -❌", "edit old: "+ran("print(2)"), "react m1 -⏳", "react m1 +✅")

	late := edit
	late.Window = time.Second
	<-answer(f, late)
	if n := len(p.Events()); n != 6 {
		t.Fatalf("an edit past the window was answered: %v", p.Events())
	}
}

func TestPrivateRefusalGoesToTheAskerAlone(t *testing.T) {
	f, p := newFlow(t, fakerunner.Func(func(context.Context, executor.Job) (executor.Result, error) {
		return executor.Result{}, &executor.Error{Code: executor.ErrRateLimited, RetryAfter: 7 * time.Second}
	}), nil)
	<-answer(f, request("m1", "u", "print(1)"))
	evs := p.Events()
	if len(evs) != 3 || !strings.HasPrefix(evs[2], "notify m1: ") || !strings.Contains(evs[2], "7 s") {
		t.Fatalf("events %v, want ⏳ on and off, then a notice to the asker", evs)
	}
	if _, ok := f.Recall("m1"); ok {
		t.Fatal("an ephemeral refusal is remembered")
	}
}

func TestRenderBoundsTheFilesAndKeepsAFallback(t *testing.T) {
	file := func(name string) executor.File {
		return executor.File{Path: name, Size: 1, MIME: "text/plain", Content: []byte("x")}
	}
	res := executor.Result{Success: true, Stdout: "made\n", Files: []executor.File{file("a.txt"), file("b.txt"), file("c.txt")}}
	for _, tc := range []struct {
		name      string
		cfg       Config
		files     []string
		fallback  bool
		textNames []string
	}{
		{"unbounded", Config{}, []string{"a.txt", "b.txt", "c.txt"}, false, nil},
		{"bounded", Config{MaxFiles: 2, OverMaxFiles: "too many", TooLarge: "too large"}, []string{"a.txt", "b.txt"}, true, []string{"`c.txt` (1 B, too many)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Platform = formatting.Discord
			f := New[msg](tc.cfg, &fakePlatform{})
			r := f.render(formatting.Extraction{Found: true, Code: "make()"}, res, nil, "", 0)
			var names []string
			for _, f := range r.Files {
				names = append(names, f.Path)
			}
			if !slices.Equal(names, tc.files) || r.Reaction != "✅" {
				t.Fatalf("files %v, reaction %q", names, r.Reaction)
			}
			for _, n := range tc.textNames {
				if !strings.Contains(r.Text, n) {
					t.Errorf("text %q lacks %q", r.Text, n)
				}
			}
			if (r.Fallback != nil) != tc.fallback {
				t.Fatalf("fallback %+v", r.Fallback)
			}
			if r.Fallback != nil && (len(r.Fallback.Files) != 0 || !strings.Contains(r.Fallback.Text, "`a.txt` (1 B, too large)") || !strings.Contains(r.Fallback.Text, "`c.txt` (1 B, too many)")) {
				t.Fatalf("fallback %+v", r.Fallback)
			}
		})
	}
}
