package answer

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/formatting"
)

// sessionFlow is a Flow with sessions on fakerunner.Sessions.
func sessionFlow(t *testing.T) (*Flow[msg], *fakePlatform, fakerunner.SessionRunner) {
	t.Helper()
	runner := fakerunner.NewSessions()
	f, p := newFlow(t, runner, func(c *Config) { c.End = runner })
	return f, p, runner
}

// cellReq is message m by u in session s.
func cellReq(m msg, u, s, code string) Request[msg] {
	r := request(m, u, code)
	r.Session = s
	return r
}

func wantStrings(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n  %s\nwant:\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// replyText is what the flow posts for a successful cell n.
func replyText(header, stdout string) string {
	return formatting.RenderRun(formatting.Discord, formatting.Extraction{Found: true}, executor.Result{Success: true, Stdout: stdout},
		formatting.RenderOptions{Header: header}).Text
}

// posts returns the texts posted and edited, by reply id, in order.
func posts(p *fakePlatform) []string {
	var out []string
	for _, e := range p.Events() {
		if strings.HasPrefix(e, "post ") || strings.HasPrefix(e, "edit ") {
			head, text, _ := strings.Cut(e, ": ")
			first, _, _ := strings.Cut(text, "\n")
			out = append(out, head+": "+first)
		}
	}
	return out
}

// TestCellsReplayTheirSessionsSuccessfulCells: each cell goes with the
// earlier successful cells of its own session, a failed one left out, and
// its reply says which cell it is; another session sees none of them.
func TestCellsReplayTheirSessionsSuccessfulCells(t *testing.T) {
	f, p, runner := sessionFlow(t)
	first := cellReq("m1", "u", "s1", "a=1")
	first.Starts = true
	<-answer(f, first)
	<-answer(f, cellReq("m2", "v", "s1", "raise"))
	other := cellReq("o1", "u", "s2", "b=1")
	other.Starts = true
	<-answer(f, other)
	<-answer(f, cellReq("m3", "u", "s1", "print(a)"))
	wantStrings(t, "jobs", runner.Replays(),
		"a=1 <- []", "raise <- [a=1]", "b=1 <- []", "print(a) <- [a=1]")
	wantStrings(t, "replies", posts(p), "post m1: [1]", "post m2: [2]", "post o1: [1]", "post m3: [3]")
	if got := p.Events(); !slices.Contains(got, "post m3: "+replyText("[3]", "after a=1: print(a)\n")) {
		t.Fatalf("events %v: m3's reply is not its output under [3]", got)
	}
	if f.SessionOf("m2") != "s1" || f.SessionOf("r2") != "s1" || f.SessionOf("o1") != "s2" || f.SessionOf("x") != "" {
		t.Fatal("SessionOf does not know the cells and their replies")
	}
	for _, e := range p.Events() {
		if strings.HasPrefix(e, "earlier") {
			t.Fatalf("a session begun in this process was looked up: %s", e)
		}
	}
}

// TestEditRerunsTheCellsBelow: an edit of the first cell re-runs it and
// the cells below it in order, each with the replay of the cells above it
// as they now are, into their own replies.
func TestEditRerunsTheCellsBelow(t *testing.T) {
	f, p, runner := sessionFlow(t)
	for i, code := range []string{"a=1", "b=a", "print(b)"} {
		<-answer(f, cellReq(msg("m"+string(rune('1'+i))), "u", "s", code))
	}
	edit := cellReq("m1", "u", "s", "a=2")
	edit.Rerun = true
	<-answer(f, edit)
	wantStrings(t, "jobs", runner.Replays()[3:],
		"a=2 <- []", "b=a <- [a=2]", "print(b) <- [a=2 b=a]")
	wantStrings(t, "replies", posts(p)[3:], "edit r1: [1]", "edit r2: [2]", "edit r3: [3]")
}

// TestEditRerunsAtMostMaxRerunCells: past the bound, the last cell re-run
// says which were not.
func TestEditRerunsAtMostMaxRerunCells(t *testing.T) {
	f, p, runner := sessionFlow(t)
	n := MaxRerun + 2
	for i := range n {
		<-answer(f, cellReq(msg("m"+strconv.Itoa(i+1)), "u", "s", "x"+strconv.Itoa(i+1)+"=1"))
	}
	edit := cellReq("m1", "u", "s", "x1=2")
	edit.Rerun = true
	<-answer(f, edit)
	if got := len(runner.Jobs()) - n; got != MaxRerun {
		t.Fatalf("%d cells re-run, want %d", got, MaxRerun)
	}
	ps := posts(p)
	want := "edit r20: [20] · cells [21] to [22] were not re-run: an edit re-runs at most 20 cells"
	if ps[len(ps)-1] != want {
		t.Fatalf("last reply %q, want %q", ps[len(ps)-1], want)
	}
}

// TestResetStartsTheSessionFresh: a reset ends the live process, says so
// in the thread, and the next cell starts from nothing as [1].
func TestResetStartsTheSessionFresh(t *testing.T) {
	f, p, runner := sessionFlow(t)
	<-answer(f, cellReq("m1", "u", "s", "a=1"))
	reset := Request[msg]{Src: "m2", What: "reset", Key: "m2", User: "v", Session: "s", Reset: true}
	<-answer(f, reset)
	<-answer(f, cellReq("m3", "u", "s", "print(a)"))
	wantStrings(t, "jobs", runner.Replays(), "a=1 <- []", "print(a) <- []")
	wantStrings(t, "replies", posts(p), "post m1: [1]", "post m2: "+ResetText, "post m3: [1]")
	if got := runner.Ended(); !slices.Equal(got, []string{"s"}) {
		t.Fatalf("ended %v, want the session's live process ended", got)
	}
}

// TestTimeoutEndsAndTheNextCellRebuilds: a cell that times out is left
// out of the replay and says that the next cell rebuilds; the next one
// says it did.
func TestTimeoutEndsAndTheNextCellRebuilds(t *testing.T) {
	f, p, runner := sessionFlow(t)
	<-answer(f, cellReq("m1", "u", "s", "a=1"))
	<-answer(f, cellReq("m2", "u", "s", "b=2"))
	<-answer(f, cellReq("m3", "u", "s", "timeout"))
	<-answer(f, cellReq("m4", "u", "s", "print(a+b)"))
	wantStrings(t, "jobs", runner.Replays()[2:], "timeout <- [a=1 b=2]", "print(a+b) <- [a=1 b=2]")
	wantStrings(t, "replies", posts(p)[2:],
		"post m3: [3] · the session ended with this cell; the next one rebuilds its state",
		"post m4: [4] · state rebuilt from 2 earlier cells")
}

// TestRestartRecoversTheSessionOnce: a flow that does not hold a session
// recovers it from the platform once, after its last reset, the failed
// cells and the notices left out of the replay, then numbers on.
func TestRestartRecoversTheSessionOnce(t *testing.T) {
	f, p, runner := sessionFlow(t)
	text := func(code string) string { return "```py\n" + code + "\n```" }
	p.earlier = func(src msg, session string) ([]Past[msg], error) {
		past := func(m msg, code, reaction string) Past[msg] {
			return Past[msg]{Request: Request[msg]{Src: m, Key: string(m), User: "u", Text: text(code)},
				Reply: Record[msg]{Reply: "old-" + string(m), Reaction: reaction}}
		}
		reset := past("p0", "", "")
		reset.Reset = true
		return []Past[msg]{
			past("q1", "gone=1", "✅"), reset,
			past("p1", "a=1", "✅"), past("p2", "raise", "❌"), past("n1", "", ""), past("p3", "b=a", "✅"),
		}, nil
	}
	started := cellReq("new", "u", "other", "x=1")
	started.Starts = true
	<-answer(f, started)
	<-answer(f, cellReq("m4", "u", "s", "print(b)"))
	<-answer(f, cellReq("m5", "u", "s", "print(a)"))
	wantStrings(t, "jobs", runner.Replays(), "x=1 <- []", "print(b) <- [a=1 b=a]", "print(a) <- [a=1 b=a print(b)]")
	var lookups []string
	for _, e := range p.Events() {
		if strings.HasPrefix(e, "earlier") {
			lookups = append(lookups, e)
		}
	}
	wantStrings(t, "lookups", lookups, "earlier m4 s")
	wantStrings(t, "replies", posts(p)[1:], "post m4: [4] · state rebuilt from 2 earlier cells", "post m5: [5]")
	if rec, ok := f.Recall("p3"); !ok || rec.Reply != "old-p3" || rec.Src != "p3" {
		t.Fatalf("the recovered cell's reply is not remembered: %+v", rec)
	}
	// An edit of a recovered cell re-runs the cells below it into their
	// replies.
	edit := cellReq("p1", "u", "s", "a=5")
	edit.Rerun = true
	<-answer(f, edit)
	wantStrings(t, "re-runs", runner.Replays()[3:],
		"a=5 <- []", "raise <- [a=5]", "b=a <- [a=5]", "print(b) <- [a=5 b=a]", "print(a) <- [a=5 b=a print(b)]")
	wantStrings(t, "updated replies", posts(p)[3:],
		"edit old-p1: [1]", "edit old-p2: [2]", "edit old-p3: [3]", "edit r2: [4]", "edit r3: [5]")
}

// TestSessionsOff: with NoSessions every message runs alone.
func TestSessionsOff(t *testing.T) {
	runner := &fakerunner.Runner{}
	f, p := newFlow(t, runner, func(c *Config) { c.NoSessions = true })
	<-answer(f, cellReq("m1", "u", "s", "a=1"))
	<-answer(f, cellReq("m2", "u", "s", "print(a)"))
	for _, j := range runner.Jobs() {
		if j.Request.Session != nil {
			t.Fatalf("job %q has a session", j.Request.Code)
		}
	}
	for _, e := range posts(p) {
		if strings.Contains(e, ": [") {
			t.Fatalf("reply %q has a cell number", e)
		}
	}
}

// TestCellsOfASessionRunOneAtATime: a cell waits for the cell before it in
// its session, whoever posted it; another session's cell does not.
func TestCellsOfASessionRunOneAtATime(t *testing.T) {
	live := &fakerunner.Sessions{}
	started, release := make(chan string, 4), make(chan struct{})
	runner := &fakerunner.Runner{Func: func(ctx context.Context, job executor.Job) (executor.Result, error) {
		started <- job.Request.Code
		if job.Request.Code == "slow" {
			<-release
		}
		return live.Run(ctx, job)
	}}
	f, _ := newFlow(t, runner, nil)
	slow := answer(f, cellReq("m1", "u", "s", "slow"))
	if got := <-started; got != "slow" {
		t.Fatalf("started %q", got)
	}
	next := answer(f, cellReq("m2", "v", "s", "after"))
	other := answer(f, cellReq("o1", "w", "t", "elsewhere"))
	<-other
	if got := <-started; got != "elsewhere" {
		t.Fatalf("started %q before the slow cell ended, want the other session's cell", got)
	}
	close(release)
	<-slow
	<-next
	if got := <-started; got != "after" {
		t.Fatalf("started %q", got)
	}
	wantStrings(t, "jobs", runner.Replays(), "slow <- []", "elsewhere <- []", "after <- [slow]")
}
