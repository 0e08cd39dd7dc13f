package discord_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runblock/runblock/bots/discord"
	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/executor/sandbox/sandboxtest"
	"github.com/runblock/runblock/executor/session"
)

// colourRunner is a scheduler in front of the session manager in front of
// a real sandbox whose python is 3.13.
func colourRunner(t *testing.T) (*executor.Scheduler, *session.Manager) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs real Python behind the fake Discord; skipped with -short")
	}
	py := sandboxtest.Python313(t)
	e2eTurns <- struct{}{}
	t.Cleanup(func() { <-e2eTurns })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ex, err := sandbox.New(ctx, sandbox.Config{Python: py, Timeout: 30 * time.Second, AllowUnisolated: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("executor: %v", err)
	}
	t.Cleanup(func() { ex.Close() })
	if v := ex.Isolation().Python; !strings.Contains(v, "3.13") {
		t.Fatalf("the executor runs %q, not python 3.13", v)
	}
	m := session.New(ex, ex, session.Options{})
	sched := executor.NewScheduler(m, executor.Config{Concurrency: 1})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = sched.Close(ctx)
		_ = m.Close(ctx)
	})
	return sched, m
}

// ansiBlock is the ```ansi block of a reply's content, "" when it has
// none.
func ansiBlock(content string) string {
	_, block, ok := strings.Cut(content, "```ansi\n")
	if !ok {
		return ""
	}
	block, _, _ = strings.Cut(block, "```")
	return block
}

// TestE2EColouredTraceback: with Python 3.13 behind it, a failing
// snippet's traceback comes back in colour, in an ```ansi block, to a
// message (testdata/coloured-traceback.golden.txt), to /run and to a cell
// of a thread's session; the error in the status line stays plain.
func TestE2EColouredTraceback(t *testing.T) {
	t.Parallel()
	sched, m := colourRunner(t)
	const code = "def f(x):\n    return 1 / x\n\nf(0)"

	t.Run("run", func(t *testing.T) {
		e := start(t, sched, func(c *discord.Config) { c.NoSessions = true })
		r := e.replyTo(e.channel, e.say(run(code)).ID)
		goldenText(t, "coloured-traceback.golden.txt", r.Content())
		want := ansiBlock(r.Content())
		if !strings.Contains(want, "\x1b[1;35mZeroDivisionError\x1b[0m") || !strings.Contains(r.Content(), "`ZeroDivisionError: division by zero`") {
			t.Fatalf("the message's reply has no coloured traceback or a coloured status line:\n%q", r.Content())
		}
		in := e.slash(codeOption(code))
		e.callback(in)
		if got := ansiBlock(e.original(in).Content()); got != want {
			t.Errorf("/run's traceback:\n%q\nwant the message's:\n%q", got, want)
		}
	})

	t.Run("session", func(t *testing.T) {
		e := start(t, sched, func(c *discord.Config) { c.End = m.End })
		th := e.thread()
		e.cell(e.post(th, e.user, "", run("def f(x):\n    return 1 / x")), "[1]", "")
		r := e.replyTo(th, e.post(th, e.user, "", run("f(0)")).ID)
		if got := ansiBlock(r.Content()); !strings.Contains(got, "\x1b[1;35mZeroDivisionError\x1b[0m: \x1b[35mdivision by zero\x1b[0m") || !strings.Contains(got, `"<cell 1>"`) {
			t.Errorf("the session cell's traceback is not in colour:\n%q", r.Content())
		}
	})
}

// TestRequestsAskForColour: every run Discord submits asks for colour:
// a message's and a thread's (cells of their sessions) and /run's (a run
// alone).
func TestRequestsAskForColour(t *testing.T) {
	t.Parallel()
	runner := fakerunner.NewSessions()
	e := start(t, runner, nil)
	e.replyTo(e.channel, e.say(run("print(1)")).ID)
	in := e.slash(codeOption("print(2)"))
	e.callback(in)
	e.original(in)
	th := e.thread()
	e.cell(e.post(th, e.user, "", run("x = 3")), "[1]", "")
	jobs := runner.Jobs()
	if len(jobs) != 3 {
		t.Fatalf("%d jobs, want 3", len(jobs))
	}
	for _, j := range jobs {
		if !j.Request.Colour {
			t.Errorf("job %q (session %v) does not ask for colour", j.Request.Code, j.Request.Session != nil)
		}
	}
}

// goldenText compares got with testdata/name (-update rewrites it).
func goldenText(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("reply:\n%q\nwant (%s):\n%q", got, path, want)
	}
}
