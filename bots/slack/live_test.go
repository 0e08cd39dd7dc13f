package slack

import (
	"strings"
	"testing"
	"time"

	"github.com/runblock/runblock/bots/internal/fakerunner"
)

// TestLiveOutputUpdatesTheReply: a run still going after the grace posts
// its output so far with the real slack-go client, and the result
// replaces it with chat.update in the same message: one post, the output
// once.
func TestLiveOutputUpdatesTheReply(t *testing.T) {
	t.Parallel()
	clk := fakerunner.NewClock()
	runner, outputs, written, end := fakerunner.Scripted(4 * time.Second)
	h := start(t, Config{NoSessions: true, LiveClock: clk}, runner, true)
	m := h.mention(h.channel(), h.user(), "```loop()```")
	outputs <- "step one\n"
	<-written
	clk.Advance(2 * time.Second)
	live := h.liveReply(m, "*Running* · 2 s")
	if !strings.Contains(live.Text, "step one") {
		t.Fatalf("live reply %q", live.Text)
	}
	close(end)
	r := h.reply(m, "*OK* · 4 s")
	if r.TS != live.TS || strings.Count(r.Text, "step one") != 1 {
		t.Fatalf("result %+v, want the live reply %s updated, its output once", r, live.TS)
	}
	h.settle()
	if n := len(h.fake.Calls("chat.postMessage")); n != 1 {
		t.Fatalf("%d posts, want 1", n)
	}
	if n := len(h.fake.Calls("chat.update")); n != 1 {
		t.Fatalf("%d updates, want 1 (the result)", n)
	}
}
