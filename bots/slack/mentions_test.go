package slack

import (
	"context"
	"strings"
	"testing"

	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/executor"
)

// TestOutputCannotPing: output with mentions is shown exactly as printed,
// only & < > escaped as Slack requires (no invisible character to copy
// out), and every message is sent with parse=none and link_names=false, so
// neither "@channel" nor "<!here>" pings.
func TestOutputCannotPing(t *testing.T) {
	runner := fakerunner.Func(func(context.Context, executor.Job) (executor.Result, error) {
		return executor.Result{Success: true, Stdout: "@channel @here @everyone <!here> <@U0123> <!subteam^S1> a & b\n"}, nil
	})
	h := start(t, Config{}, runner, true)
	m := h.mention(h.channel(), h.user(), "```print('@channel')```")
	r := h.reply(m, "@channel")
	if want := "\n@channel @here @everyone &lt;!here&gt; &lt;@U0123&gt; &lt;!subteam^S1&gt; a &amp; b\n"; !strings.Contains(r.Text, want) || strings.ContainsRune(r.Text, '\u200b') {
		t.Fatalf("text %q, want the output exactly, escaped: %q", r.Text, want)
	}
	posts, err := h.fake.WaitCalls(h.ctx, "chat.postMessage", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range posts {
		if p.Get("parse") != "none" || p.Get("link_names") != "false" {
			t.Fatalf("a message lets mentions through: parse=%q link_names=%q", p.Get("parse"), p.Get("link_names"))
		}
	}
}
