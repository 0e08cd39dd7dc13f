package discord_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/bots/discord"
	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/bots/internal/netretry"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/formatting"
	"github.com/runblock/runblock/internal/fakediscord"
)

const block = "```python\nprint(1)\n```"

func TestPrefixMessageGetsReplyWithReferenceAndNoMentions(t *testing.T) {
	t.Parallel()
	runner := &fakerunner.Runner{}
	e := start(t, runner, nil)
	m := e.say("!run\n" + block)
	r := e.replyTo(e.channel, m.ID)

	id, fail := reference(t, r)
	if id != m.ID || fail == nil || *fail {
		t.Fatalf("reference %q fail_if_not_exists %v", id, fail)
	}
	if !strings.Contains(string(r.JSON), `"parse":[]`) {
		t.Fatalf("wire JSON lacks \"parse\":[]: %s", r.JSON)
	}
	assertNoMentions(t, r)
	if !strings.Contains(r.Content(), "ran: print(1)") {
		t.Fatalf("content %q", r.Content())
	}
	jobs := runner.Jobs()
	if len(jobs) != 1 || jobs[0].Request.Code != "print(1)" || jobs[0].User != "discord:"+e.guild+":"+e.user.ID {
		t.Fatalf("jobs %+v", jobs)
	}
	// ⏳ while running, typing, then ✅ and ⏳ removed.
	base := "/channels/" + e.channel + "/messages/" + m.ID + "/reactions/"
	for _, want := range []func(fakediscord.Request) bool{
		fakediscord.Match("POST", "/channels/"+e.channel+"/typing"),
		fakediscord.Match("PUT", base+"⏳/@me"),
		fakediscord.Match("DELETE", base+"⏳/@me"),
		fakediscord.Match("PUT", base+"✅/@me"),
	} {
		if _, err := fake.WaitRequest(e.ctx, want); err != nil {
			t.Fatal(err)
		}
	}
	ids := e.fbot.Identifies()
	if len(ids) != 1 || ids[0].Intents != discord.Intents {
		t.Fatalf("identify %+v", ids)
	}
	for _, bit := range []discordgo.Intent{discordgo.IntentGuildMessages, discordgo.IntentDirectMessages, discordgo.IntentMessageContent, discordgo.IntentGuildMessageReactions, discordgo.IntentDirectMessageReactions} {
		if discord.Intents&bit == 0 {
			t.Errorf("intent %d missing", bit)
		}
	}
}

func TestCommandsRegisteredGloballyOrPerGuild(t *testing.T) {
	t.Parallel()
	for _, guild := range []string{"", "4242"} {
		e := start(t, &fakerunner.Runner{}, func(c *discord.Config) { c.GuildID = guild })
		path := "/applications/" + e.fbot.AppID + "/commands"
		if guild != "" {
			path = "/applications/" + e.fbot.AppID + "/guilds/" + guild + "/commands"
		}
		r, err := fake.WaitRequest(e.ctx, fakediscord.Match("PUT", path))
		if err != nil {
			t.Fatal(err)
		}
		var cmds []discordgo.ApplicationCommand
		if err := r.Decode(&cmds); err != nil {
			t.Fatal(err)
		}
		if len(cmds) != 3 || cmds[0].Name != "run" || cmds[0].Options[0].Name != "code" ||
			cmds[1].Name != "Run code" || cmds[1].Type != discordgo.MessageApplicationCommand || cmds[2].Name != "runblock" {
			t.Fatalf("commands %s", r.JSON)
		}
	}
}

func TestMentionAndDMAndListedChannelTrigger(t *testing.T) {
	t.Parallel()
	runner := &fakerunner.Runner{}
	listed := fake.NewID()
	e := start(t, runner, func(c *discord.Config) { c.Channels = []string{listed} })
	cases := []struct {
		name, channel, guild, content string
	}{
		{"mention", listed, "g1", "<@" + e.fbot.UserID + "> " + block},
		{"nick mention", listed, "g1", "<@!" + e.fbot.UserID + ">\n" + block},
		{"dm", fake.NewID(), "", block},
		{"dm inline after prefix", fake.NewID(), "", "!run `print(1)`"},
		{"listed channel", listed, "g1", "look:\n" + block},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := e.sayIn(c.channel, c.guild, e.user, c.content)
			r := e.replyTo(c.channel, m.ID)
			if !strings.Contains(r.Content(), "ran: print(1)") {
				t.Fatalf("content %q", r.Content())
			}
		})
	}
}

func TestNoticesForNotPythonNoCodeAndNotAllowedChannel(t *testing.T) {
	t.Parallel()
	listed := fake.NewID()
	runner := &fakerunner.Runner{}
	e := start(t, runner, func(c *discord.Config) { c.Channels = []string{listed} })
	other := fake.NewID()
	cases := []struct {
		name, channel, content, want string
	}{
		{"not python", listed, "!run\n```js\nconsole.log(1)\n```", formatting.RenderNotice(formatting.Discord, formatting.NoticeNotPython)},
		{"no code", listed, "!run please", formatting.RenderNotice(formatting.Discord, formatting.NoticeNoCode)},
		{"not allowed channel", other, "!run\n" + block, formatting.RenderNotice(formatting.Discord, formatting.NoticeChannelNotAllowed)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := e.sayIn(c.channel, e.guild, e.user, c.content)
			r := e.replyTo(c.channel, m.ID)
			if r.Content() != c.want {
				t.Fatalf("content %q, want %q", r.Content(), c.want)
			}
			assertNoMentions(t, r)
		})
	}
	// A message without Python in a listed channel is just chat.
	quiet := e.sayIn(listed, e.guild, e.user, "hello ```js\nx\n```")
	last := e.sayIn(listed, e.guild, e.user, block)
	e.replyTo(listed, last.ID)
	closeBot(t, e)
	if rs := fake.Requests(isReplyTo(listed, quiet.ID)); len(rs) != 0 {
		t.Fatalf("chat in a listed channel was answered: %s", rs[0].JSON)
	}
	if n := len(runner.Jobs()); n != 1 {
		t.Fatalf("%d jobs, want 1", n)
	}
}

// closeBot closes the adapter, which waits for every event in flight, so
// that a test can assert that something did not happen.
func closeBot(t *testing.T, e *env) {
	t.Helper()
	if err := e.bot.Close(e.ctx); err != nil {
		t.Fatal(err)
	}
}

func TestBotsAndSelfAreIgnored(t *testing.T) {
	t.Parallel()
	runner := &fakerunner.Runner{}
	e := start(t, runner, nil)
	other := &discordgo.User{ID: fake.NewID(), Username: "llm", Bot: true}
	self := &discordgo.User{ID: e.fbot.UserID, Username: "runblock"}
	a := e.sayIn(e.channel, e.guild, other, "!run\n"+block)
	b := e.sayIn(e.channel, e.guild, self, "!run\n"+block)
	c := e.fbot.MessageCreate(discordgo.Message{ChannelID: e.channel, GuildID: e.guild, Author: e.user, WebhookID: "77", Content: "!run\n" + block})
	last := e.say("!run\n```python\nprint(2)\n```")
	e.replyTo(e.channel, last.ID)
	closeBot(t, e)
	for _, m := range []*discordgo.Message{a, b, c} {
		if rs := fake.Requests(isReplyTo(e.channel, m.ID)); len(rs) != 0 {
			t.Fatalf("answered a bot: %s", rs[0].JSON)
		}
	}
	if jobs := runner.Jobs(); len(jobs) != 1 || jobs[0].Request.Code != "print(2)" {
		t.Fatalf("jobs %+v", jobs)
	}
}

func TestReplyInThread(t *testing.T) {
	t.Parallel()
	e := start(t, &fakerunner.Runner{}, nil)
	thread := fake.NewID()
	m := e.sayIn(thread, e.guild, e.user, "!run "+block)
	r := e.replyTo(thread, m.ID)
	if id, _ := reference(t, r); id != m.ID {
		t.Fatalf("reference %q", id)
	}
}

func TestLongOutputAttachesFullOutput(t *testing.T) {
	t.Parallel()
	var full strings.Builder
	for i := range 300 {
		full.WriteString(strings.Repeat("x", 20) + " line " + string(rune('a'+i%26)) + "\n")
	}
	runner := &fakerunner.Runner{Func: func(context.Context, executor.Job) (executor.Result, error) {
		return executor.Result{Success: true, Stdout: full.String()}, nil
	}}
	e := start(t, runner, nil)
	m := e.say("!run " + block)
	r := e.replyTo(e.channel, m.ID)
	if n := len([]rune(r.Content())); n > 2000 {
		t.Fatalf("content has %d characters", n)
	}
	if len(r.Files) != 1 || r.Files[0].Name != "output.txt" || r.Files[0].Field != "files[0]" {
		t.Fatalf("files %+v", r.Files)
	}
	if !strings.Contains(string(r.Files[0].Data), "xxxxxxxxxxxxxxxxxxxx line n") || len(r.Files[0].Data) < full.Len()-10 {
		t.Fatalf("attachment holds %d bytes", len(r.Files[0].Data))
	}
	assertNoMentions(t, r)
}

// TestOutputCannotPing: output with mentions is shown exactly as printed
// (copied out of the reply it holds no invisible character), and the reply
// allows no mention at all, so none of them pings.
func TestOutputCannotPing(t *testing.T) {
	t.Parallel()
	const out = "@everyone @here <@123> <@!123> <@&456> <#789>"
	runner := &fakerunner.Runner{Func: func(context.Context, executor.Job) (executor.Result, error) {
		return executor.Result{Success: true, Stdout: out + "\n"}, nil
	}}
	e := start(t, runner, nil)
	m := e.say("!run\n```py\nprint('@everyone')\n```")
	r := e.replyTo(e.channel, m.ID)
	if !strings.Contains(r.Content(), "\n"+out+"\n") || strings.ContainsRune(r.Content(), '\u200b') {
		t.Fatalf("the output is not shown exactly: %q", r.Content())
	}
	assertNoMentions(t, r)
}

func TestRejectionsAndInternalErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"busy", &executor.Error{Code: executor.ErrBusy, RetryAfter: 3 * time.Second}, ""},
		{"rate limited", &executor.Error{Code: executor.ErrRateLimited, RetryAfter: 12 * time.Second}, ""},
		{"too large", executor.Errorf(executor.ErrTooLarge, "code is 2 MiB"), ""},
		{"internal", errors.New("secret path /root/x exploded"), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runner := &fakerunner.Runner{Func: func(context.Context, executor.Job) (executor.Result, error) { return executor.Result{}, c.err }}
			e := start(t, runner, nil)
			m := e.say("!run " + block)
			r := e.replyTo(e.channel, m.ID)
			if want := formatting.RenderError(formatting.Discord, c.err); r.Content() != want {
				t.Fatalf("content %q, want %q", r.Content(), want)
			}
			if strings.Contains(r.Content(), "secret") {
				t.Fatalf("internal detail echoed: %q", r.Content())
			}
			if c.name == "internal" {
				closeBot(t, e)
				if n := strings.Count(e.logs.String(), "secret path"); n != 1 {
					t.Fatalf("internal error logged %d times, want once", n)
				}
			}
		})
	}
}

func TestFailedRunReactsCross(t *testing.T) {
	t.Parallel()
	runner := &fakerunner.Runner{Func: func(context.Context, executor.Job) (executor.Result, error) {
		return executor.Result{Stderr: "Traceback...\nZeroDivisionError: division by zero\n", Error: "ZeroDivisionError: division by zero", ExitCode: 1}, nil
	}}
	e := start(t, runner, nil)
	m := e.say("!run " + block)
	r := e.replyTo(e.channel, m.ID)
	if !strings.Contains(r.Content(), "ZeroDivisionError") {
		t.Fatalf("content %q", r.Content())
	}
	if _, err := fake.WaitRequest(e.ctx, fakediscord.Match("PUT", "/channels/"+e.channel+"/messages/"+m.ID+"/reactions/❌/@me")); err != nil {
		t.Fatal(err)
	}
}

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestEditAfterWindowIsIgnored(t *testing.T) {
	t.Parallel()
	clk := &clock{now: time.Unix(1_700_000_000, 0)}
	runner := &fakerunner.Runner{}
	e := start(t, runner, func(c *discord.Config) { c.Clock = clk.Now; c.EditWindow = time.Minute })
	m := e.say("!run\n" + block)
	e.replyTo(e.channel, m.ID)
	clk.Add(61 * time.Second)
	edited := *m
	edited.Content = "!run\n```python\nprint(2)\n```"
	e.fbot.MessageUpdate(edited)
	last := e.say("!run\n```python\nprint(3)\n```")
	e.replyTo(e.channel, last.ID)
	closeBot(t, e)
	if n := len(fake.Requests(fakediscord.MatchPrefix("PATCH", "/channels/"+e.channel+"/messages/"))); n != 0 {
		t.Fatalf("%d edits after the window", n)
	}
	if n := len(runner.Jobs()); n != 2 {
		t.Fatalf("%d jobs, want 2", n)
	}
}

// TestEditWindowZeroNeverReruns: DISCORD_EDIT_WINDOW=0s means edits never
// re-run; deleting the message still deletes the reply.
func TestEditWindowZeroNeverReruns(t *testing.T) {
	t.Parallel()
	runner := &fakerunner.Runner{}
	e := start(t, runner, func(c *discord.Config) { c.EditWindow = 0 })
	m := e.say("!run\n" + block)
	r := e.replyTo(e.channel, m.ID)
	var reply discordgo.Message
	if err := r.DecodeResponse(&reply); err != nil {
		t.Fatal(err)
	}
	edited := *m
	edited.Content = "!run\n```python\nprint(2)\n```"
	e.fbot.MessageUpdate(edited)
	e.fbot.MessageDelete(e.channel, m.ID, e.guild)
	if _, err := fake.WaitRequest(e.ctx, fakediscord.Match("DELETE", "/channels/"+e.channel+"/messages/"+reply.ID)); err != nil {
		t.Fatal(err)
	}
	closeBot(t, e)
	if n := len(fake.Requests(fakediscord.MatchPrefix("PATCH", "/channels/"+e.channel+"/messages/"))); n != 0 {
		t.Fatalf("%d edits with the window at 0", n)
	}
	if n := len(runner.Jobs()); n != 1 {
		t.Fatalf("%d jobs, want 1", n)
	}
}

// TestOpenWithoutNetwork: Discord out of reach is a network problem, said
// so and retried with backoff, not a bad token.
func TestOpenWithoutNetwork(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/"
	l.Close()
	var waits []time.Duration
	retry := netretry.Backoff{Initial: time.Second, Max: 4 * time.Second, Attempts: 4, Sleep: func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}}
	b := discord.New(discord.Config{Token: "some-token", APIURL: closed, Retry: retry}, &fakerunner.Runner{}, nil)
	err = b.Open(testCtx(t))
	var unreachable *netretry.Error
	if !errors.As(err, &unreachable) || errors.Is(err, discord.ErrBadToken) || !strings.Contains(err.Error(), "cannot reach Discord") {
		t.Fatalf("Open = %v, want a network error that does not blame the token", err)
	}
	if want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}; !slices.Equal(waits, want) {
		t.Fatalf("waits %v, want %v", waits, want)
	}
	if err := b.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}

func TestReactionRunsAnotherBotsMessage(t *testing.T) {
	t.Parallel()
	runner := &fakerunner.Runner{}
	e := start(t, runner, nil)
	llm := &discordgo.User{ID: fake.NewID(), Username: "llm", Bot: true}
	m := fake.PutMessage(discordgo.Message{ChannelID: e.channel, Author: llm, Content: "Here you go:\n```python\nprint(40 + 2)\n```"})
	e.fbot.ReactionAdd(e.channel, m.ID, e.guild, "▶️", e.user)
	r := e.replyTo(e.channel, m.ID)
	if !strings.Contains(r.Content(), "ran: print(40 + 2)") {
		t.Fatalf("content %q", r.Content())
	}
	if _, err := fake.WaitRequest(e.ctx, fakediscord.Match("GET", "/channels/"+e.channel+"/messages/"+m.ID)); err != nil {
		t.Fatal(err)
	}
	if jobs := runner.Jobs(); jobs[0].User != "discord:"+e.guild+":"+e.user.ID {
		t.Fatalf("job user %q", jobs[0].User)
	}
}

func TestReactionByBotOrOtherEmojiIgnored(t *testing.T) {
	t.Parallel()
	runner := &fakerunner.Runner{}
	e := start(t, runner, nil)
	m := fake.PutMessage(discordgo.Message{ChannelID: e.channel, Author: e.user, Content: block})
	e.fbot.ReactionAdd(e.channel, m.ID, e.guild, "▶️", &discordgo.User{ID: fake.NewID(), Bot: true})
	e.fbot.ReactionAdd(e.channel, m.ID, e.guild, "👍", e.user)
	e.fbot.ReactionAdd(e.channel, m.ID, e.guild, "▶️", &discordgo.User{ID: e.fbot.UserID})
	last := e.say("!run " + block)
	e.replyTo(e.channel, last.ID)
	closeBot(t, e)
	if rs := fake.Requests(isReplyTo(e.channel, m.ID)); len(rs) != 0 {
		t.Fatalf("reaction by a bot ran: %s", rs[0].JSON)
	}
}

func TestRateLimitedReplyStillArrives(t *testing.T) {
	t.Parallel()
	e := start(t, &fakerunner.Runner{}, nil)
	path := "/channels/" + e.channel + "/messages"
	fake.RateLimitNext(fakediscord.Match("POST", path), 300*time.Millisecond, false)
	m := e.say("!run " + block)
	r := e.replyTo(e.channel, m.ID)
	all := fake.Requests(fakediscord.Match("POST", path))
	if len(all) != 2 || all[0].Status != 429 || r.Seq != all[1].Seq {
		t.Fatalf("requests %d, first status %d", len(all), all[0].Status)
	}
}

func TestGlobalRateLimitDelaysNotLoses(t *testing.T) {
	t.Parallel()
	e := start(t, &fakerunner.Runner{}, nil)
	fake.RateLimitNext(fakediscord.Match("POST", "/channels/"+e.channel+"/messages"), 200*time.Millisecond, true)
	var ms []*discordgo.Message
	for range 3 {
		ms = append(ms, e.say("!run "+block))
	}
	for _, m := range ms {
		e.replyTo(e.channel, m.ID)
	}
}

func TestReconnects(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		do   func(*fakediscord.Bot) error
	}{
		{"op 7", (*fakediscord.Bot).Reconnect},
		{"op 9", (*fakediscord.Bot).InvalidSession},
		{"dropped socket", (*fakediscord.Bot).Drop},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := start(t, &fakerunner.Runner{}, nil)
			if err := c.do(e.fbot); err != nil {
				t.Fatal(err)
			}
			if err := e.fbot.WaitSessions(e.ctx, 2); err != nil {
				t.Fatal(err)
			}
			m := e.say("!run " + block)
			e.replyTo(e.channel, m.ID)
			if n := e.metrics.Reconnects(); n != 1 {
				t.Fatalf("Reconnected %d times, want 1", n)
			}
			if !e.bot.Ready() {
				t.Fatal("not ready after reconnect")
			}
		})
	}
}

func TestBadTokenFailsOpen(t *testing.T) {
	t.Parallel()
	b := discord.New(discord.Config{Token: "not-a-token", APIURL: fake.URL()}, &fakerunner.Runner{}, nil)
	if err := b.Open(testCtx(t)); !errors.Is(err, discord.ErrBadToken) {
		t.Fatalf("open error %v", err)
	}
	if err := b.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}

func TestInviteURLHasExactlyTheNeededPermissions(t *testing.T) {
	t.Parallel()
	// view channel 1<<10, send 1<<11, threads 1<<38, history 1<<16,
	// attach 1<<15, reactions 1<<6, application commands 1<<31.
	const want = 1<<10 | 1<<11 | 1<<38 | 1<<16 | 1<<15 | 1<<6 | 1<<31
	if discord.Permissions != want || want != 277025492032 {
		t.Fatalf("permissions %d, want %d", discord.Permissions, want)
	}
	u := discord.InviteURL("123")
	for _, part := range []string{"client_id=123", "permissions=277025492032", "scope=bot+applications.commands"} {
		if !strings.Contains(u, part) {
			t.Fatalf("invite URL %s lacks %s", u, part)
		}
	}
}

func TestCloseWaitsForReplyInFlight(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan struct{})
	runner := &fakerunner.Runner{Func: func(ctx context.Context, job executor.Job) (executor.Result, error) {
		close(started)
		<-release
		return executor.Result{Success: true, Stdout: "late\n"}, nil
	}}
	e := start(t, runner, nil)
	m := e.say("!run " + block)
	<-started
	closed := make(chan error, 1)
	go func() { closed <- e.bot.Close(e.ctx) }()
	close(release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if rs := fake.Requests(isReplyTo(e.channel, m.ID)); len(rs) != 1 {
		t.Fatalf("%d replies after close", len(rs))
	}
	if e.bot.Ready() {
		t.Fatal("ready after close")
	}
}

func TestCloseDeadlineCancelsRun(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	runner := &fakerunner.Runner{Func: func(ctx context.Context, job executor.Job) (executor.Result, error) {
		close(started)
		<-ctx.Done()
		return executor.Result{}, &executor.Error{Code: executor.ErrCanceled, Err: ctx.Err()}
	}}
	e := start(t, runner, nil)
	e.say("!run " + block)
	<-started
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	if err := e.bot.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("close error %v", err)
	}
}

func TestDeleteWhileRunningDeletesTheReplyWhenItLands(t *testing.T) {
	t.Parallel()
	runner, started, release := fakerunner.Gated()
	e := start(t, runner, nil)
	m := e.say("!run " + block)
	<-started
	e.fbot.MessageDelete(e.channel, m.ID, e.guild)
	// The delete event is handled before the next event is read.
	next := e.say("!run ```py\nprint(9)\n```")
	<-started
	close(release)
	e.replyTo(e.channel, next.ID)
	r := e.replyTo(e.channel, m.ID)
	var reply discordgo.Message
	if err := r.DecodeResponse(&reply); err != nil {
		t.Fatal(err)
	}
	if _, err := fake.WaitRequest(e.ctx, fakediscord.Match("DELETE", "/channels/"+e.channel+"/messages/"+reply.ID)); err != nil {
		t.Fatal(err)
	}
}

func TestEditWhileRunningRerunsAfterTheFirstReply(t *testing.T) {
	t.Parallel()
	runner, started, release := fakerunner.Gated()
	e := start(t, runner, func(c *discord.Config) { c.EditWindow = time.Minute })
	m := e.say("!run " + block)
	<-started
	edited := *m
	edited.Content = "!run ```py\nprint('edited')\n```"
	e.fbot.MessageUpdate(edited)
	next := e.say("!run ```py\nprint(9)\n```")
	<-started
	close(release)
	e.replyTo(e.channel, next.ID)
	var reply discordgo.Message
	if err := e.replyTo(e.channel, m.ID).DecodeResponse(&reply); err != nil {
		t.Fatal(err)
	}
	patch, err := fake.WaitRequest(e.ctx, fakediscord.Match("PATCH", "/channels/"+e.channel+"/messages/"+reply.ID))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(patch.Content(), "ran: print('edited')") {
		t.Fatalf("edit %q", patch.Content())
	}
}

func TestAnswerMappingIsBounded(t *testing.T) {
	t.Parallel()
	runner := &fakerunner.Runner{}
	e := start(t, runner, func(c *discord.Config) { c.MaxAnswers = 1; c.EditWindow = time.Minute })
	first := e.say("!run " + block)
	e.replyTo(e.channel, first.ID)
	second := e.say("!run " + block)
	e.replyTo(e.channel, second.ID)
	edited := *first
	edited.Content = "!run ```py\nprint('edited')\n```"
	e.fbot.MessageUpdate(edited)
	last := e.say("!run " + block)
	e.replyTo(e.channel, last.ID)
	closeBot(t, e)
	// The map forgot the first answer, so the edit finds the reply on
	// Discord (recall.go) and updates it: still one reply.
	if rs := fake.Requests(isReplyTo(e.channel, first.ID)); len(rs) != 1 {
		t.Fatalf("%d replies to the evicted answer's message, want 1", len(rs))
	}
	if n := len(fake.Requests(fakediscord.MatchPrefix("PATCH", "/channels/"+e.channel+"/"))); n != 1 {
		t.Fatalf("%d edits of the evicted answer's reply, want 1", n)
	}
}

func TestFailedCommandRegistrationFailsOpen(t *testing.T) {
	t.Parallel()
	fbot := fake.NewBot("no-commands")
	fake.FailNext(fakediscord.Match("PUT", "/applications/"+fbot.AppID+"/commands"), 403)
	b := discord.New(discord.Config{Token: fbot.Token, APIURL: fake.URL()}, &fakerunner.Runner{}, nil)
	ctx := testCtx(t)
	err := b.Open(ctx)
	if err == nil || !strings.Contains(err.Error(), "registering") {
		t.Fatalf("open error %v", err)
	}
	if b.Ready() {
		t.Fatal("ready after failed open")
	}
	if err := fbot.WaitDisconnected(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestThreadOfListedChannelIsListed(t *testing.T) {
	t.Parallel()
	listed, thread, elsewhere := fake.NewID(), fake.NewID(), fake.NewID()
	e := start(t, &fakerunner.Runner{}, func(c *discord.Config) { c.Channels = []string{listed} })
	e.fbot.Dispatch("GUILD_CREATE", map[string]any{
		"id": e.guild, "name": "school",
		"channels": []any{map[string]any{"id": listed, "type": discordgo.ChannelTypeGuildText, "guild_id": e.guild}},
		"threads": []any{
			map[string]any{"id": thread, "type": discordgo.ChannelTypeGuildPublicThread, "guild_id": e.guild, "parent_id": listed},
			map[string]any{"id": elsewhere, "type": discordgo.ChannelTypeGuildPublicThread, "guild_id": e.guild, "parent_id": fake.NewID()},
		},
	})
	m := e.sayIn(thread, e.guild, e.user, "no prefix needed:\n"+block)
	if r := e.replyTo(thread, m.ID); !strings.Contains(r.Content(), "ran: print(1)") {
		t.Fatalf("content %q", r.Content())
	}
	o := e.sayIn(elsewhere, e.guild, e.user, "!run "+block)
	if r := e.replyTo(elsewhere, o.ID); r.Content() != formatting.RenderNotice(formatting.Discord, formatting.NoticeChannelNotAllowed) {
		t.Fatalf("content %q", r.Content())
	}
}

func TestFixingAMessageAfterANoticeRunsIt(t *testing.T) {
	t.Parallel()
	e := start(t, &fakerunner.Runner{}, func(c *discord.Config) { c.EditWindow = time.Minute })
	m := e.say("!run\n```js\nconsole.log(1)\n```")
	var reply discordgo.Message
	r := e.replyTo(e.channel, m.ID)
	if err := r.DecodeResponse(&reply); err != nil {
		t.Fatal(err)
	}
	if r.Content() != formatting.RenderNotice(formatting.Discord, formatting.NoticeNotPython) {
		t.Fatalf("content %q", r.Content())
	}
	fixed := *m
	fixed.Content = "!run\n```python\nprint('fixed')\n```"
	e.fbot.MessageUpdate(fixed)
	patch, err := fake.WaitRequest(e.ctx, fakediscord.Match("PATCH", "/channels/"+e.channel+"/messages/"+reply.ID))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(patch.Content(), "ran: print('fixed')") {
		t.Fatalf("edited to %q", patch.Content())
	}
	if _, err := fake.WaitRequest(e.ctx, fakediscord.Match("PUT", "/channels/"+e.channel+"/messages/"+m.ID+"/reactions/✅/@me")); err != nil {
		t.Fatal(err)
	}
}

func TestPanicInAHandlerIsLoggedAndTheBotCarriesOn(t *testing.T) {
	t.Parallel()
	runner := &fakerunner.Runner{}
	runner.Func = func(ctx context.Context, job executor.Job) (executor.Result, error) {
		if job.Request.Code == "boom" {
			panic("runner exploded")
		}
		return executor.Result{Success: true, Stdout: "fine\n"}, nil
	}
	e := start(t, runner, nil)
	e.say("!run ```py\nboom\n```")
	m := e.say("!run " + block)
	if r := e.replyTo(e.channel, m.ID); !strings.Contains(r.Content(), "fine") {
		t.Fatalf("content %q", r.Content())
	}
}

func TestUpdateWithoutContentChangeDoesNotRerun(t *testing.T) {
	t.Parallel()
	runner := &fakerunner.Runner{}
	e := start(t, runner, func(c *discord.Config) { c.EditWindow = time.Minute })
	m := e.say("!run https://example.com\n" + block)
	e.replyTo(e.channel, m.ID)
	embedded := *m
	embedded.Embeds = []*discordgo.MessageEmbed{{URL: "https://example.com", Title: "Example"}}
	e.fbot.MessageUpdate(embedded) // Discord adds the link preview
	last := e.say("!run " + block)
	e.replyTo(e.channel, last.ID)
	closeBot(t, e)
	if n := len(fake.Requests(fakediscord.MatchPrefix("PATCH", "/channels/"+e.channel+"/"))); n != 0 {
		t.Fatalf("%d edits for an embed update", n)
	}
	if n := len(runner.Jobs()); n != 2 {
		t.Fatalf("%d jobs, want 2", n)
	}
}

func TestQueuedRunShowsItsPlaceThenTheResultInTheSameReply(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	runner := &fakerunner.Runner{Func: func(ctx context.Context, job executor.Job) (executor.Result, error) {
		job.Progress(executor.Progress{State: executor.StateQueued, Ahead: 2})
		<-release
		job.Progress(executor.Progress{State: executor.StateRunning})
		return executor.Result{Success: true, Stdout: "ran: " + job.Request.Code + "\n"}, nil
	}}
	e := start(t, runner, nil)
	m := e.say("!run " + block)
	queued, err := fake.WaitRequest(e.ctx, isReplyTo(e.channel, m.ID))
	if err != nil {
		t.Fatal(err)
	}
	if want := formatting.RenderProgress(formatting.Discord, executor.Progress{State: executor.StateQueued, Ahead: 2}); queued.Content() != want {
		t.Fatalf("first reply %q, want %q", queued.Content(), want)
	}
	assertNoMentions(t, queued)
	close(release)
	r := e.replyTo(e.channel, m.ID)
	if r.Method != "PATCH" || !strings.Contains(r.Content(), "ran: ") {
		t.Fatalf("answer %s %q, want the queued reply edited into the result", r.Method, r.Content())
	}
	closeBot(t, e)
	if rs := fake.Requests(isReplyTo(e.channel, m.ID)); len(rs) != 1 {
		t.Fatalf("%d replies, want 1", len(rs))
	}
	e.metrics.mu.Lock()
	replied := e.metrics.replied
	e.metrics.mu.Unlock()
	if replied != 1 {
		t.Fatalf("replied counted %d times, want 1", replied)
	}
}

// TestEditKeepsItsPlaceInTheQueueAndShowsIt: an edit re-runs in its
// author's turn, as a new message does: the message the author posts right
// after the edit waits until the scheduler has taken the re-run; and while
// the re-run waits in the queue, its reply shows its place there.
func TestEditKeepsItsPlaceInTheQueueAndShowsIt(t *testing.T) {
	t.Parallel()
	const edit = "print('edited')"
	arrived := make(chan string, 8)
	admit, release := make(chan struct{}), make(chan struct{})
	runner := fakerunner.Func(func(ctx context.Context, job executor.Job) (executor.Result, error) {
		arrived <- job.Request.Code
		if job.Request.Code == edit {
			<-admit // the scheduler is slow to take the re-run
			if job.Progress != nil {
				job.Progress(executor.Progress{State: executor.StateQueued, Ahead: 1})
				<-release
			}
		}
		if job.Progress != nil {
			job.Progress(executor.Progress{State: executor.StateRunning})
		}
		return fakerunner.Echo("ran: ")(ctx, job)
	})
	e := start(t, runner, func(c *discord.Config) { c.EditWindow = time.Minute })
	openAdmit, openRelease := sync.OnceFunc(func() { close(admit) }), sync.OnceFunc(func() { close(release) })
	t.Cleanup(func() { openAdmit(); openRelease() }) // before the bot closes, when the test fails
	m := e.say("!run " + block)
	reply := replyID(t, e.replyTo(e.channel, m.ID))
	<-arrived

	edited := *m
	edited.Content = "!run `" + edit + "`"
	e.fbot.MessageUpdate(edited)
	if code := <-arrived; code != edit {
		t.Fatalf("ran %q, want the edit's %q", code, edit)
	}
	after := e.say("!run `print('after')`")
	// Another user's message, answered in full, gives the author's next
	// message every chance to overtake the re-run.
	other := e.sayIn(e.channel, e.guild, &discordgo.User{ID: fake.NewID(), Username: "bob"}, "!run `print('other')`")
	e.replyTo(e.channel, other.ID)
	for len(arrived) > 0 {
		if code := <-arrived; code != "print('other')" {
			t.Fatalf("%q reached the scheduler before the edit's re-run was taken", code)
		}
	}

	openAdmit()
	onReply := fakediscord.Match("PATCH", "/channels/"+e.channel+"/messages/"+reply)
	first, err := fake.WaitRequest(e.ctx, onReply)
	if err != nil {
		t.Fatal(err)
	}
	if want := formatting.RenderProgress(formatting.Discord, executor.Progress{State: executor.StateQueued, Ahead: 1}); first.Content() != want {
		t.Fatalf("the reply was first edited to %q, want the queue position %q", first.Content(), want)
	}
	openRelease()
	if _, err := fake.WaitRequest(e.ctx, func(r fakediscord.Request) bool {
		return onReply(r) && strings.Contains(r.Content(), "ran: "+edit)
	}); err != nil {
		t.Fatal(err)
	}
	if r := e.replyTo(e.channel, after.ID); !strings.Contains(r.Content(), "ran: print('after')") {
		t.Fatalf("the next message's reply %q", r.Content())
	}
}
