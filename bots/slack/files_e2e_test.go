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
	"github.com/runblock/runblock/internal/fakeslack"
)

// debianPython is the interpreter with Debian's scientific stack (.ci/run
// installs python3-numpy, python3-pandas, python3-matplotlib).
const debianPython = "/usr/bin/python3"

// sciPython is python with debianPython, skipping unless it imports
// modules. Its limits fit pandas with a plot on a slow shared machine
// (512 MiB of address space until issue 11, see the README).
func sciPython(t *testing.T, modules ...string) *executor.Scheduler {
	t.Helper()
	if testing.Short() {
		t.Skipf("imports %s behind the fake Slack; skipped with -short", strings.Join(modules, ", "))
	}
	if _, err := os.Stat(debianPython); err != nil {
		t.Skipf("needs %s with %s (apt-get install python3-numpy python3-pandas python3-matplotlib)", debianPython, strings.Join(modules, ", "))
	}
	if out, err := exec.Command(debianPython, "-c", "import "+strings.Join(modules, ", ")).CombinedOutput(); err != nil {
		t.Skipf("needs %s to import %s (apt-get install python3-numpy python3-pandas python3-matplotlib): %s", debianPython, strings.Join(modules, ", "), bytes.TrimSpace(out))
	}
	pythonTurns <- struct{}{}
	t.Cleanup(func() { <-pythonTurns })
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	ex, err := sandbox.New(ctx, sandbox.Config{Python: debianPython, Timeout: 60 * time.Second, MemoryBytes: 512 << 20, AllowUnisolated: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("executor: %v", err)
	}
	t.Cleanup(func() { ex.Close() })
	sched := executor.NewScheduler(ex, executor.Config{Concurrency: 1})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		_ = sched.Close(ctx)
	})
	return sched
}

var pngMagic = []byte("\x89PNG\r\n\x1a\n")

func TestPythonPlotInTheThreadAndEditReplacesIt(t *testing.T) {
	t.Parallel()
	var clk clock
	h := start(t, Config{EditWindow: 10 * time.Minute}, sciPython(t, "matplotlib"), true, clk.install())
	ch := h.channel()
	m := h.mention(ch, h.user(), "```python\nimport matplotlib.pyplot as plt\nplt.plot([1,2,3])\nplt.show()\n```")
	h.reply(m, "OK")
	files := waitFiles(t, h, ch, m.TS, "figure-1.png")
	if !bytes.HasPrefix(files[0].Content, pngMagic) || files[0].AltText == "" {
		t.Fatalf("figure-1.png: alt %q, content %q…", files[0].AltText, files[0].Content[:min(8, len(files[0].Content))])
	}
	first := files[0]

	m = h.edit(m, "<@"+fakeslack.BotUserID+"> ```python\nimport matplotlib.pyplot as plt\nplt.plot([3,2,1])\nplt.show()\nplt.bar(['a'], [1])\nprint('two')\n```")
	h.reply(m, "two")
	files = waitFiles(t, h, ch, m.TS, "figure-1.png", "figure-2.png")
	if files[0].ID == first.ID || bytes.Equal(files[0].Content, first.Content) {
		t.Fatalf("the edit kept the first run's plot")
	}
}

func TestPythonCSVInSummaryOut(t *testing.T) {
	t.Parallel()
	h := start(t, Config{}, sciPython(t, "pandas"), true)
	data := h.fake.AddUserFile(fakeslack.UserFile{Name: "data.csv", Mimetype: "text/csv", Content: []byte("x,y\n1,10\n2,20\n3,30\n"), Size: -1})
	m := h.mentionWithFiles(h.channel(), h.user(),
		"```python\nimport pandas as pd\ndf = pd.read_csv('data.csv')\ndf.describe().to_csv('summary.csv')\nprint(df['y'].sum())\n```", data)
	h.reply(m, "60")
	files := waitFiles(t, h, m.Channel, m.TS, "summary.csv")
	if s := string(files[0].Content); !strings.HasPrefix(s, ",x,y\ncount,3.0,3.0\nmean,2.0,20.0\n") {
		t.Fatalf("summary.csv: %q", s)
	}
}
