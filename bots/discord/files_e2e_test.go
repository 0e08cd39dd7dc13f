package discord_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/bots/discord"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/internal/fakediscord"
)

// debianPython is the interpreter with Debian's scientific stack (.ci/run
// installs python3-numpy, python3-pandas, python3-matplotlib).
const debianPython = "/usr/bin/python3"

// sciRunner is a scheduler in front of a real executor with debianPython,
// skipping unless it imports modules. Its limits fit pandas with a plot on
// a slow shared machine (512 MiB of address space until issue 11).
func sciRunner(t *testing.T, modules ...string) *executor.Scheduler {
	t.Helper()
	if testing.Short() {
		t.Skipf("imports %s behind the fake Discord; skipped with -short", strings.Join(modules, ", "))
	}
	if _, err := os.Stat(debianPython); err != nil {
		t.Skipf("needs %s with %s (apt-get install python3-numpy python3-pandas python3-matplotlib)", debianPython, strings.Join(modules, ", "))
	}
	if out, err := exec.Command(debianPython, "-c", "import "+strings.Join(modules, ", ")).CombinedOutput(); err != nil {
		t.Skipf("needs %s to import %s (apt-get install python3-numpy python3-pandas python3-matplotlib): %s", debianPython, strings.Join(modules, ", "), bytes.TrimSpace(out))
	}
	e2eTurns <- struct{}{}
	t.Cleanup(func() { <-e2eTurns })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ex, err := sandbox.New(ctx, sandbox.Config{Python: debianPython, Timeout: 60 * time.Second, MemoryBytes: 512 << 20, AllowUnisolated: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("executor: %v", err)
	}
	t.Cleanup(func() { ex.Close() })
	sched := executor.NewScheduler(ex, executor.Config{Concurrency: 1})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = sched.Close(ctx)
	})
	return sched
}

var pngMagic = []byte("\x89PNG\r\n\x1a\n")

func TestE2EPlotAttachedAndEditReplacesIt(t *testing.T) {
	t.Parallel()
	e := start(t, sciRunner(t, "matplotlib"), func(c *discord.Config) { c.EditWindow = 10 * time.Minute })
	m := e.say("!run ```py\nimport matplotlib.pyplot as plt\nplt.plot([1,2,3])\nplt.show()\n```")
	r, reply := e.storedReply(m.ID)
	if !strings.Contains(r.Content(), "OK") {
		t.Fatalf("reply %q", r.Content())
	}
	if len(reply.Attachments) != 1 || reply.Attachments[0].Filename != "figure-1.png" || reply.Attachments[0].ContentType != "image/png" {
		t.Fatalf("attachments %+v", reply.Attachments)
	}
	first, _ := fake.AttachmentData(reply.Attachments[0].URL)
	if !bytes.HasPrefix(first, pngMagic) {
		t.Fatalf("figure-1.png is not a PNG: %q…", first[:min(8, len(first))])
	}

	edited := *m
	edited.Content = "!run ```py\nimport matplotlib.pyplot as plt\nplt.plot([3,2,1])\nplt.show()\nplt.bar(['a'], [1])\nprint('two')\n```"
	e.fbot.MessageUpdate(edited)
	if _, err := fake.WaitRequest(e.ctx, func(r fakediscord.Request) bool {
		return fakediscord.Match("PATCH", "/channels/"+e.channel+"/messages/"+reply.ID)(r) && strings.Contains(r.Content(), "two") && !isProgress(r.Content())
	}); err != nil {
		t.Fatal(err)
	}
	stored, _ := fake.Message(reply.ID)
	var names []string
	for _, a := range stored.Attachments {
		names = append(names, a.Filename)
		if data, _ := fake.AttachmentData(a.URL); !bytes.HasPrefix(data, pngMagic) || bytes.Equal(data, first) {
			t.Errorf("%s: not a new PNG", a.Filename)
		}
	}
	if strings.Join(names, " ") != "figure-1.png figure-2.png" {
		t.Fatalf("attachments after the edit: %v", names)
	}
}

func TestE2ECSVInSummaryOut(t *testing.T) {
	t.Parallel()
	e := start(t, sciRunner(t, "pandas"), nil)
	data := fake.Attachment("data.csv", "text/csv; charset=utf-8", []byte("x,y\n1,10\n2,20\n3,30\n"), -1)
	m := e.fbot.MessageCreate(discordgo.Message{ChannelID: e.channel, GuildID: e.guild, Author: e.user, Attachments: []*discordgo.MessageAttachment{data},
		Content: "!run ```py\nimport pandas as pd\ndf = pd.read_csv('data.csv')\ndf.describe().to_csv('summary.csv')\nprint(df['y'].sum())\n```"})
	r, reply := e.storedReply(m.ID)
	if !strings.Contains(r.Content(), "60") {
		t.Fatalf("reply %q", r.Content())
	}
	if len(reply.Attachments) != 1 || reply.Attachments[0].Filename != "summary.csv" {
		t.Fatalf("attachments %+v (data.csv, unchanged, does not come back)", reply.Attachments)
	}
	if s, _ := fake.AttachmentData(reply.Attachments[0].URL); !strings.HasPrefix(string(s), ",x,y\ncount,3.0,3.0\nmean,2.0,20.0\n") {
		t.Fatalf("summary.csv: %q", s)
	}
}
