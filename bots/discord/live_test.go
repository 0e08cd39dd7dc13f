package discord_test

import (
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/bots/discord"
	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/internal/fakediscord"
)

// TestLiveOutputEditsTheReplyThroughARateLimit: a run still going after
// the grace posts its output so far, its next output is edited into that
// reply through a 429 (waited out for its retry_after), and the result
// replaces it in the same message: one reply, no output twice.
func TestLiveOutputEditsTheReplyThroughARateLimit(t *testing.T) {
	t.Parallel()
	clock := fakerunner.NewClock()
	runner, outputs, written, end := fakerunner.Scripted(4 * time.Second)
	e := start(t, runner, func(c *discord.Config) { c.LiveClock, c.NoSessions = clock, true })
	path := "/channels/" + e.channel + "/messages"
	m := e.say("!run " + block)
	outputs <- "step one\n"
	<-written
	clock.Advance(2 * time.Second)
	first, err := fake.WaitRequest(e.ctx, isReplyTo(e.channel, m.ID))
	if err != nil {
		t.Fatal(err)
	}
	if c := first.Content(); !strings.HasPrefix(c, "**Running** · 2 s\n") || !strings.Contains(c, "step one") {
		t.Fatalf("live reply %q", c)
	}
	var reply discordgo.Message
	if err := first.DecodeResponse(&reply); err != nil {
		t.Fatal(err)
	}
	edit := fakediscord.Match("PATCH", path+"/"+reply.ID)
	fake.RateLimitNext(edit, 200*time.Millisecond, false)
	outputs <- "step one\nstep two\n"
	<-written
	clock.Advance(time.Second)
	live, err := fake.WaitRequest(e.ctx, func(r fakediscord.Request) bool { return edit(r) && r.Status == 200 })
	if err != nil {
		t.Fatal(err)
	}
	if c := live.Content(); !strings.HasPrefix(c, "**Running** · 3 s\n") || !strings.Contains(c, "step two") {
		t.Fatalf("live edit %q", c)
	}
	close(end)
	final, err := fake.WaitRequest(e.ctx, func(r fakediscord.Request) bool {
		return edit(r) && r.Status == 200 && strings.HasPrefix(r.Content(), "**OK**")
	})
	if err != nil {
		for _, r := range fake.Requests(func(fakediscord.Request) bool { return true }) {
			t.Logf("%s %s %d %q", r.Method, r.Path, r.Status, r.Content())
		}
		t.Fatal(err)
	}
	if c := final.Content(); strings.Count(c, "step one") != 1 || strings.Count(c, "step two") != 1 {
		t.Fatalf("result %q", c)
	}
	edits := fake.Requests(edit)
	if len(edits) != 3 || edits[0].Status != 429 {
		t.Fatalf("%d edits of the reply (first status %d), want a 429, the live edit and the result", len(edits), edits[0].Status)
	}
	posts := fake.Requests(isReplyTo(e.channel, m.ID))
	if len(posts) != 1 {
		t.Fatalf("%d replies posted, want 1", len(posts))
	}
}
