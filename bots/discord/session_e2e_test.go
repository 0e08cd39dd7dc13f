package discord_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/bots/discord"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/executor/session"
)

// sessionRunner is a scheduler in front of the session manager in front of
// a real sandbox with debianPython and timeout a cell. It skips where
// debianPython cannot import modules, and fails there instead under
// CI=true, whose machines have them.
func sessionRunner(t *testing.T, timeout time.Duration, modules ...string) (*executor.Scheduler, *session.Manager) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs real Python sessions behind the fake Discord; skipped with -short")
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
	e2eTurns <- struct{}{}
	t.Cleanup(func() { <-e2eTurns })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ex, err := sandbox.New(ctx, sandbox.Config{Python: debianPython, Timeout: timeout, MemoryBytes: 512 << 20, AllowUnisolated: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("executor: %v", err)
	}
	t.Cleanup(func() { ex.Close() })
	m := session.New(ex, ex, session.Options{SessionBytes: 512 << 20})
	sched := executor.NewScheduler(m, executor.Config{Concurrency: 1})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = sched.Close(ctx)
		_ = m.Close(ctx)
	})
	return sched, m
}

// TestE2EThreadIsANotebook: in a thread, three cells build a DataFrame
// and plot it, the plot attached to the third's reply; another thread
// never sees them; an edit of the first re-runs all three into their
// replies.
func TestE2EThreadIsANotebook(t *testing.T) {
	t.Parallel()
	sched, m := sessionRunner(t, 60*time.Second, "pandas", "matplotlib")
	e := start(t, sched, func(c *discord.Config) { c.EditWindow = 10 * time.Minute; c.End = m.End })
	th, other := e.thread(), e.thread()
	c1 := e.post(th, e.user, "", run("import pandas as pd\ndf = pd.DataFrame({'x': [1, 2, 3]})\nprint(len(df))"))
	r1 := e.cell(c1, "[1]", "3")
	r2 := e.cell(e.post(th, e.user, "", run("df['y'] = df.x ** 2\nprint(df.y.sum())")), "[2]", "14")
	r3 := e.cell(e.post(th, e.user, "", run("import matplotlib\nmatplotlib.use('Agg')\ndf.plot(x='x', y='y').figure.savefig('plot.png')\nprint(df.y.max())")), "[3]", "9")
	stored, _ := fake.Message(r3)
	var names []string
	for _, a := range stored.Attachments {
		names = append(names, a.Filename)
		if data, _ := fake.AttachmentData(a.URL); a.Filename == "plot.png" && !bytes.HasPrefix(data, pngMagic) {
			t.Fatal("plot.png is no PNG")
		}
	}
	if !slices.Contains(names, "plot.png") {
		t.Fatalf("attachments of the third reply %v, want plot.png", names)
	}
	e.cell(e.post(other, e.user, "", run("print('df' in globals())")), "[1]", "False")

	edit := *c1
	edit.Content = run("import pandas as pd\ndf = pd.DataFrame({'x': [1, 2, 3, 4]})\nprint(len(df))")
	e.fbot.MessageUpdate(edit)
	e.edited(th, r1, "4")
	e.edited(th, r2, "30")
	e.edited(th, r3, "16")
}

// TestE2ESessionRebuilds: a timeout ends the session's process and the
// next cell is rebuilt; after a restart of the bot (and the executor's
// loss of the process) the state is rebuilt from the thread.
func TestE2ESessionRebuilds(t *testing.T) {
	t.Parallel()
	sched, m := sessionRunner(t, 3*time.Second)
	clk := &offsetClock{}
	clk.offset.Store(int64(-5 * time.Minute))
	e := start(t, sched, func(c *discord.Config) { c.Clock = clk.Now; c.End = m.End })
	th := e.thread()
	e.cell(e.post(th, e.user, "", run("a = 1\nprint('a')")), "[1]", "a")
	e.cell(e.post(th, e.user, "", run("b = a + 1\nprint('b')")), "[2]", "b")
	e.cell(e.post(th, e.user, "", run("import time\ntime.sleep(30)")), "[3] · the session ended with this cell; the next one rebuilds its state", "Timed out")
	e.cell(e.post(th, e.user, "", run("print(a + b)")), "[4] · state rebuilt from 2 earlier cells", "3")

	e.restart(clk)
	e.fbot.Dispatch("GUILD_CREATE", map[string]any{
		"id": e.guild, "name": "school",
		"threads": []any{map[string]any{"id": th, "type": discordgo.ChannelTypeGuildPublicThread, "guild_id": e.guild, "parent_id": e.channel}},
	})
	if err := m.End(context.Background(), "discord:"+e.guild+":"+th); err != nil {
		t.Fatal(err)
	}
	e.cell(e.post(th, e.user, "", run("print(a * b * 10)")), "[5] · state rebuilt from 3 earlier cells", "20")
}

// TestE2ERunReactionOnAnLLMsSecondMessage: an LLM answers in two messages
// of a thread, the second using a function of the first; the run reaction
// on each runs them as one session.
func TestE2ERunReactionOnAnLLMsSecondMessage(t *testing.T) {
	t.Parallel()
	sched, m := sessionRunner(t, 10*time.Second)
	e := start(t, sched, func(c *discord.Config) { c.End = m.End })
	th := e.thread()
	llm := &discordgo.User{ID: fake.NewID(), Username: "llm", Bot: true}
	first := e.post(th, llm, "", "First the helper:\n```python\ndef area(r):\n    return 3 * r * r\n```")
	e.fbot.ReactionAdd(th, first.ID, e.guild, discord.DefaultRunReaction, e.user)
	e.cell(first, "[1]", "OK")
	second := e.post(th, llm, "", "Then use it:\n```python\nprint(area(2))\n```")
	e.fbot.ReactionAdd(th, second.ID, e.guild, discord.DefaultRunReaction, e.user)
	e.cell(second, "[2]", "12")
}
