package slack

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/executor/session"
	"github.com/runblock/runblock/internal/fakeslack"
)

// sessionPython returns the real thing behind the adapter with sessions: a
// scheduler in front of the session manager in front of a sandbox running
// debianPython with timeout a cell. It skips where debianPython cannot
// import modules, and fails there instead under CI=true, whose machines
// have them.
func sessionPython(t *testing.T, timeout time.Duration, modules ...string) (*executor.Scheduler, *session.Manager) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs real Python sessions behind the fake Slack; skipped with -short")
	}
	missing := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf(format+" (a failure under CI=true, whose machines have it)", args...)
		}
		t.Skipf(format, args...)
	}
	if _, err := os.Stat(debianPython); err != nil {
		missing("needs %s (apt-get install python3-pandas python3-matplotlib)", debianPython)
	}
	if len(modules) > 0 {
		if out, err := exec.Command(debianPython, "-c", "import "+strings.Join(modules, ", ")).CombinedOutput(); err != nil {
			missing("needs %s to import %s (apt-get install python3-pandas python3-matplotlib): %s", debianPython, strings.Join(modules, ", "), bytes.TrimSpace(out))
		}
	}
	pythonTurns <- struct{}{}
	t.Cleanup(func() { <-pythonTurns })
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	ex, err := sandbox.New(ctx, sandbox.Config{Python: debianPython, Timeout: timeout, MemoryBytes: 512 << 20, AllowUnisolated: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("executor: %v", err)
	}
	t.Cleanup(func() { ex.Close() })
	m := session.New(ex, ex, session.Options{SessionBytes: 512 << 20})
	sched := executor.NewScheduler(m, executor.Config{Concurrency: 1})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		_ = sched.Close(ctx)
		_ = m.Close(ctx)
	})
	return sched, m
}

func py(code string) string { return "```python\n" + code + "\n```" }

// TestPythonThreadIsANotebook: three cells build a DataFrame and plot it,
// the plot coming back with the third; another thread never sees them;
// an edit of the first re-runs all three and updates the three replies.
func TestPythonThreadIsANotebook(t *testing.T) {
	t.Parallel()
	sched, m := sessionPython(t, 60*time.Second, "pandas", "matplotlib")
	h := start(t, Config{EditWindow: 10 * time.Minute, End: m.End}, sched, true)
	ch, ada, bob := h.channel(), h.user(), h.user()
	c1 := h.say(ch, "", ada, py("import pandas as pd\ndf = pd.DataFrame({'x': [1, 2, 3]})\nprint(len(df))"))
	r1 := h.cell(c1, "[1]", "3")
	r2 := h.cell(h.say(ch, c1.TS, bob, py("df['y'] = df.x ** 2\nprint(df.y.sum())")), "[2]", "14")
	r3 := h.cell(h.say(ch, c1.TS, ada, py("import matplotlib\nmatplotlib.use('Agg')\ndf.plot(x='x', y='y').figure.savefig('plot.png')\nprint(df.y.max())")), "[3]", "9")
	// The figure the cell saved, and the same figure still open at the
	// cell's end, attached as a run's are.
	files := waitFiles(t, h, ch, c1.TS, "plot.png", "figure-1.png")
	if !bytes.HasPrefix(files[0].Content, pngMagic) {
		t.Fatalf("plot.png is no PNG: %q…", files[0].Content[:min(8, len(files[0].Content))])
	}
	other := h.say(ch, "", bob, py("print('df' in globals())"))
	h.cell(other, "[1]", "False")

	h.edit(c1, "<@"+fakeslack.BotUserID+"> "+py("import pandas as pd\ndf = pd.DataFrame({'x': [1, 2, 3, 4]})\nprint(len(df))"))
	for _, want := range []struct {
		r    fakeslack.Message
		text string
	}{{r1, "4"}, {r2, "30"}, {r3, "16"}} {
		if _, err := h.fake.WaitMessage(h.ctx, ch, func(m fakeslack.Message) bool {
			return m.TS == want.r.TS && strings.Contains(m.Text, want.text) && m.Edits > 0
		}); err != nil {
			got, _ := h.fake.Get(ch, want.r.TS)
			t.Fatalf("reply %q, want it updated to hold %q: %v", got.Text, want.text, err)
		}
	}
	waitFiles(t, h, ch, c1.TS, "plot.png", "figure-1.png")
}

// TestPythonSessionRebuilds: a cell that times out ends the session's
// process and the next cell rebuilds the state; after a restart of the bot
// (and the executor's loss of the process) the state is rebuilt from the
// thread.
func TestPythonSessionRebuilds(t *testing.T) {
	t.Parallel()
	sched, m := sessionPython(t, 3*time.Second)
	h, clk := restartable(t, Config{End: m.End}, sched)
	ch, ada := h.channel(), h.user()
	c1 := h.say(ch, "", ada, py("a = 1\nprint('a')"))
	h.cell(c1, "[1]", "a")
	h.cell(h.say(ch, c1.TS, ada, py("b = a + 1\nprint('b')")), "[2]", "b")
	h.cell(h.say(ch, c1.TS, ada, py("import time\ntime.sleep(30)")), "[3] · the session ended with this cell; the next one rebuilds its state", "Timed out")
	h.cell(h.say(ch, c1.TS, ada, py("print(a + b)")), "[4] · state rebuilt from 2 earlier cells", "3")

	h.restart(clk)
	session := "slack:" + fakeslack.TeamID + ":" + ch + ":" + c1.TS
	if err := m.End(h.ctx, session); err != nil {
		t.Fatal(err)
	}
	h.cell(h.say(ch, c1.TS, ada, py("print(a * b * 10)")), "[5] · state rebuilt from 3 earlier cells", "20")
}

// TestPythonRunReactionOnAnLLMsSecondMessage: an LLM answers in two
// messages whose second uses a name from the first; the run reaction on
// each runs them as one session.
func TestPythonRunReactionOnAnLLMsSecondMessage(t *testing.T) {
	t.Parallel()
	sched, m := sessionPython(t, 10*time.Second)
	h := start(t, Config{End: m.End}, sched, true)
	ch, u := h.channel(), h.user()
	react := func(m fakeslack.Message) {
		h.fake.SendEvent(map[string]any{"type": "reaction_added", "user": u, "reaction": DefaultRunReaction, "item_user": m.User,
			"item": map[string]any{"type": "message", "channel": m.Channel, "ts": m.TS}, "event_ts": m.TS})
	}
	first := h.fake.PutMessage(fakeslack.Message{Channel: ch, User: "U0LLM", BotID: "B0LLM", Text: "First the helper:\n" + py("def area(r):\n    return 3 * r * r")})
	react(first)
	h.cell(first, "[1]", "OK")
	second := h.fake.PutMessage(fakeslack.Message{Channel: ch, User: "U0LLM", BotID: "B0LLM", ThreadTS: first.TS, Text: "Then use it:\n" + py("print(area(2))")})
	react(second)
	h.cell(second, "[2]", "12")
}
