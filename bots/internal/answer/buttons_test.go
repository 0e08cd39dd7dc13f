package answer

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/formatting"
)

// buttonPlatform is the fake platform that also keeps the buttons of each
// reply it posts, by reply id.
type buttonPlatform struct {
	*fakePlatform
	mu      sync.Mutex
	buttons map[string][]Button
}

func (p *buttonPlatform) Send(ctx context.Context, src msg, to Record[msg], r Reply) (Sent, error) {
	s, err := p.fakePlatform.Send(ctx, src, to, r)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buttons[s.ID] = r.Buttons
	return s, err
}

// button returns the id of reply's button for action, "" when it has none.
func (p *buttonPlatform) button(reply string, action Action) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range p.buttons[reply] {
		if b.Action == action {
			return b.ID
		}
	}
	return ""
}

func newButtonFlow(t *testing.T, r executor.Submitter) (*Flow[msg], *buttonPlatform) {
	t.Helper()
	p := &buttonPlatform{fakePlatform: &fakePlatform{}, buttons: make(map[string][]Button)}
	cfg := Config{Platform: formatting.Discord, Runner: r, MaxReplies: 100, ReplyTTL: time.Hour}
	cfg.Render.MaxLines = 3
	return New[msg](cfg, p), p
}

// click clicks id as user (admin or not) at src and returns what the
// clicker alone was told.
func click(f *Flow[msg], src msg, id, user string, admin bool) []string {
	var told []string
	f.Click(context.Background(), Click[msg]{ID: id, Src: src, User: user,
		Admin: func(context.Context) bool { return admin },
		Tell:  func(_ context.Context, text string) error { told = append(told, text); return nil }})
	return told
}

// tenLines runs code that has "range(10)" in it to ten lines of output,
// more than the view's 3.
func tenLines(ctx context.Context, job executor.Job) (executor.Result, error) {
	if strings.Contains(job.Request.Code, "range(10)") {
		return executor.Result{Success: true, Stdout: strings.Repeat("line\n", 10)}, nil
	}
	return fakerunner.Echo("ran: ")(ctx, job)
}

func TestButtons(t *testing.T) {
	long := "print('\\n'.join(map(str, range(10))))"
	for _, tc := range []struct {
		name   string
		code   string
		action Action
		user   string
		admin  bool
		told   []string
		last   string // the platform's last event
		jobs   int
	}{
		{"the author deletes", "print(1)", ActionDelete, "u", false, nil, "delete r1", 1},
		{"a stranger is refused", "print(1)", ActionDelete, "v", false, []string{OnlyAuthor}, "react m1 +✅", 1},
		{"an admin deletes", "print(1)", ActionDelete, "v", true, nil, "delete r1", 1},
		{"run again is the clicker's job", "print(1)", ActionAgain, "v", false, nil, "react r1 +✅", 2},
		{"full output of a cut reply", long, ActionFull, "v", false, nil, "post r1: " + FullOutputIs, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runner := &fakerunner.Runner{Func: tenLines}
			f, p := newButtonFlow(t, runner)
			<-answer(f, request("m1", "u", tc.code))
			id := p.button("r1", tc.action)
			if id == "" {
				t.Fatalf("reply r1 has no %s button: %+v", tc.action, p.buttons["r1"])
			}
			told := click(f, "r1", id, tc.user, tc.admin)
			if !slices.Equal(told, tc.told) {
				t.Fatalf("told %q, want %q", told, tc.told)
			}
			evs := p.Events()
			if got := evs[len(evs)-1]; got != tc.last {
				t.Fatalf("last event %q, want %q (all: %q)", got, tc.last, evs)
			}
			jobs := runner.Jobs()
			if len(jobs) != tc.jobs || jobs[len(jobs)-1].User != map[bool]string{true: tc.user, false: "u"}[tc.action == ActionAgain] {
				t.Fatalf("jobs %+v", jobs)
			}
			if tc.last == "delete r1" {
				if _, ok := f.Recall("m1"); ok {
					t.Fatal("a deleted reply is still remembered")
				}
				if told := click(f, "r1", id, tc.user, tc.admin); !slices.Equal(told, []string{Deleted}) {
					t.Fatalf("a click on a deleted reply told %q", told)
				}
			}
		})
	}
}

// TestCellsKeepTheirButtons: the cells re-run below an edited one keep
// their buttons, and Run again on a cell is a new cell of its session.
func TestCellsKeepTheirButtons(t *testing.T) {
	runner := fakerunner.NewSessions()
	f, p := newButtonFlow(t, runner)
	for i, code := range []string{"a=1", "print(a)"} {
		<-answer(f, cellReq(msg("m"+string(rune('1'+i))), "u", "s", code))
	}
	edit := cellReq("m1", "u", "s", "a=2")
	edit.Rerun = true
	<-answer(f, edit)
	wantStrings(t, "replies", posts(p.fakePlatform)[2:], "edit r1: [1]", "edit r2: [2]")
	id := p.button("r2", ActionAgain)
	if id == "" {
		t.Fatalf("the re-run cell's reply lost its buttons: %+v", p.buttons["r2"])
	}
	click(f, "r2", id, "v", false)
	wantStrings(t, "jobs", runner.Replays()[4:], "print(a) <- [a=2 print(a)]")
	wantStrings(t, "replies", posts(p.fakePlatform)[4:], "post r2: [3]")
}

// TestRunAgainRefusedToTheClickerAlone: a Run again over the clicker's
// rate limit is told to them, not posted.
func TestRunAgainRefusedToTheClickerAlone(t *testing.T) {
	runner := fakerunner.Func(func(ctx context.Context, job executor.Job) (executor.Result, error) {
		if job.User == "v" {
			return executor.Result{}, &executor.Error{Code: executor.ErrRateLimited, RetryAfter: 7 * time.Second}
		}
		return fakerunner.Echo("ran: ")(ctx, job)
	})
	f, p := newButtonFlow(t, runner)
	<-answer(f, request("m1", "u", "print(1)"))
	told := click(f, "r1", p.button("r1", ActionAgain), "v", false)
	if len(told) != 1 || !strings.Contains(told[0], "7 s") {
		t.Fatalf("told %q", told)
	}
	for _, e := range p.Events() {
		if strings.HasPrefix(e, "notify") || strings.HasPrefix(e, "post r1") {
			t.Fatalf("the refusal went to the channel: %q", p.Events())
		}
	}
}

func TestFullOutputOnlyOnACutReply(t *testing.T) {
	f, p := newButtonFlow(t, &fakerunner.Runner{})
	<-answer(f, request("m1", "u", "print(1)"))
	var actions []Action
	for _, b := range p.buttons["r1"] {
		actions = append(actions, b.Action)
	}
	if !slices.Equal(actions, []Action{ActionAgain, ActionDelete}) {
		t.Fatalf("buttons %v", actions)
	}
}

func TestAnOldButtonIsAnsweredToTheClicker(t *testing.T) {
	f, p := newButtonFlow(t, &fakerunner.Runner{})
	for _, id := range []string{ButtonID(ActionDelete, "gone.1"), ButtonID(ActionAgain, "gone.2"), ButtonID(ActionFull, "gone.3")} {
		if told := click(f, "r9", id, "u", true); !slices.Equal(told, []string{TooOld}) {
			t.Fatalf("%s: told %q", id, told)
		}
	}
	if evs := p.Events(); len(evs) != 0 {
		t.Fatalf("events %q", evs)
	}
	if _, _, ok := ParseButton("other:delete:1"); ok {
		t.Fatal("a foreign id parsed")
	}
	if a, tok, ok := ParseButton(ButtonID(ActionFull, "ab.c")); !ok || a != ActionFull || tok != "ab.c" || strings.Contains(tok, ":") {
		t.Fatal("round trip")
	}
}

// TestRemoveThroughTheClick: a platform's Remove deletes the reply instead
// of Platform.Delete; when it fails the clicker is told so, not left in
// silence, and the button still works.
func TestRemoveThroughTheClick(t *testing.T) {
	f, p := newButtonFlow(t, &fakerunner.Runner{})
	<-answer(f, request("m1", "u", "print(1)"))
	id := p.button("r1", ActionDelete)
	removed := 0
	remove := func(fail bool) func(context.Context) error {
		return func(context.Context) error {
			if fail {
				return errors.New("unknown webhook")
			}
			removed++
			return nil
		}
	}
	for _, tc := range []struct {
		fail bool
		told []string
	}{{true, []string{NotDeleted}}, {false, nil}, {false, []string{Deleted}}} {
		var told []string
		f.Click(context.Background(), Click[msg]{ID: id, Src: "r1", User: "u", Remove: remove(tc.fail),
			Tell: func(_ context.Context, text string) error { told = append(told, text); return nil }})
		if !slices.Equal(told, tc.told) {
			t.Fatalf("told %q, want %q", told, tc.told)
		}
	}
	if removed != 1 || slices.ContainsFunc(p.Events(), func(e string) bool { return strings.HasPrefix(e, "delete") }) {
		t.Fatalf("removed %d times; events %q", removed, p.Events())
	}
}

// TestRunAgainKeepsTheStdin: a request's own stdin (a modal's field) goes
// into its run and into a Run again's.
func TestRunAgainKeepsTheStdin(t *testing.T) {
	runner := &fakerunner.Runner{}
	f, p := newButtonFlow(t, runner)
	req := request("m1", "u", "print(input())")
	req.Stdin = "hi"
	<-answer(f, req)
	click(f, "r1", p.button("r1", ActionAgain), "v", false)
	jobs := runner.Jobs()
	if len(jobs) != 2 || jobs[0].Request.Stdin != "hi" || jobs[1].Request.Stdin != "hi" {
		t.Fatalf("jobs %+v", jobs)
	}
}

// TestDeleteOfAReplyGone: a Delete whose reply is gone already (deleted
// by hand, or by a click a moment before) is told so, never that it
// failed, and the reply's buttons do not come back; a second click while
// the first is deleting does not delete again.
func TestDeleteOfAReplyGone(t *testing.T) {
	f, p := newButtonFlow(t, &fakerunner.Runner{})
	<-answer(f, request("m1", "u", "print(1)"))
	id := p.button("r1", ActionDelete)
	entered, release := make(chan struct{}), make(chan struct{})
	p.del = func(Record[msg]) error {
		close(entered)
		<-release
		return ErrGone
	}
	first := make(chan []string)
	go func() { first <- click(f, "r1", id, "u", false) }()
	<-entered
	if told := click(f, "r1", id, "u", false); !slices.Equal(told, []string{Deleted}) {
		t.Fatalf("a second click while the first deletes told %q", told)
	}
	close(release)
	if told := <-first; !slices.Equal(told, []string{Deleted}) {
		t.Fatalf("a click on a reply gone told %q", told)
	}
	if told := click(f, "r1", p.button("r1", ActionAgain), "u", false); !slices.Equal(told, []string{Deleted}) {
		t.Fatalf("the buttons of a deleted reply came back: told %q", told)
	}
	if _, ok := f.Recall("m1"); ok {
		t.Fatal("a deleted reply is still remembered")
	}
}

// TestFullOutputPointsToItsFile: where the platform sent the whole output
// as a file beside the reply (Sent.Full), Full output tells the clicker
// where it is instead of posting a second copy.
func TestFullOutputPointsToItsFile(t *testing.T) {
	f, p := newButtonFlow(t, &fakerunner.Runner{Func: tenLines})
	p.full = true
	<-answer(f, request("m1", "u", "print('\\n'.join(map(str, range(10))))"))
	n := len(p.Events())
	if told := click(f, "r1", p.button("r1", ActionFull), "v", false); !slices.Equal(told, []string{FullOutputIn}) {
		t.Fatalf("told %q", told)
	}
	if evs := p.Events(); len(evs) != n {
		t.Fatalf("Full output sent %q", evs[n:])
	}
}

// TestExportButton: a session's cell has Export notebook, which posts
// the session as a notebook where the click was; a run alone has none.
func TestExportButton(t *testing.T) {
	f, p := newButtonFlow(t, fakerunner.NewSessions())
	<-answer(f, cellReq("m1", "u", "s", "a=1"))
	<-answer(f, request("m2", "u", "print(1)"))
	if p.button("r2", ActionExport) != "" {
		t.Fatal("a run alone has Export notebook")
	}
	click(f, "r1", p.button("r1", ActionExport), "v", false)
	evs := p.Events()
	if last := evs[len(evs)-1]; last != "post r1: This thread's session as a Jupyter notebook: 1 cell." {
		t.Fatalf("last event %q", last)
	}
}
