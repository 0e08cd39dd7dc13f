package fakediscord_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/runblock/runblock/internal/fakediscord"
)

var fake *fakediscord.Server

func TestMain(m *testing.M) {
	fake = fakediscord.New(fakediscord.Options{})
	code := m.Run()
	fake.Close()
	os.Exit(code)
}

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// session opens a real discordgo session for bot; events go to ch.
func session(t *testing.T, bot *fakediscord.Bot, ch chan<- *discordgo.MessageCreate) *discordgo.Session {
	t.Helper()
	s, err := discordgo.New("Bot " + bot.Token)
	if err != nil {
		t.Fatal(err)
	}
	s.Client = fake.Client()
	s.SyncEvents = true
	s.Identify.Intents = discordgo.IntentsGuildMessages | discordgo.IntentMessageContent
	if ch != nil {
		s.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageCreate) { ch <- m })
	}
	if err := s.Open(); err != nil {
		t.Fatalf("open: %v", err)
	}
	// ShouldReconnectOnError stays as it is: discordgo reads it without a
	// lock from its heartbeat goroutine, so writing it here would race.
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestIdentifyReadyAndDispatch(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	bot := fake.NewBot("ready")
	ch := make(chan *discordgo.MessageCreate, 1)
	s := session(t, bot, ch)
	if s.State.User.ID != bot.UserID {
		t.Fatalf("ready user %q, want %q", s.State.User.ID, bot.UserID)
	}
	ids := bot.Identifies()
	if len(ids) != 1 || ids[0].Intents&discordgo.IntentMessageContent == 0 || ids[0].Token != "Bot "+bot.Token {
		t.Fatalf("identify = %+v", ids)
	}
	channel := fake.NewID()
	bot.MessageCreate(discordgo.Message{ChannelID: channel, Content: "hi", Author: &discordgo.User{ID: "1"}})
	select {
	case m := <-ch:
		if m.Content != "hi" || m.ChannelID != channel {
			t.Fatalf("got %+v", m.Message)
		}
	case <-ctx.Done():
		t.Fatal("no MESSAGE_CREATE")
	}
}

func TestDisallowedIntentCloses4014(t *testing.T) {
	t.Parallel()
	bot := fake.NewBot("deny")
	bot.DenyMessageContent()
	s, err := discordgo.New("Bot " + bot.Token)
	if err != nil {
		t.Fatal(err)
	}
	s.Client = fake.Client()
	s.Identify.Intents = discordgo.IntentMessageContent
	err = s.Open()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != fakediscord.CloseDisallowedIntents {
		t.Fatalf("open error %v, want close 4014", err)
	}
}

func TestUnknownTokenOrSchemeIsUnauthorized(t *testing.T) {
	t.Parallel()
	bot := fake.NewBot("scheme")
	for _, tok := range []string{"Bot nobody", bot.Token} {
		s, err := discordgo.New(tok)
		if err != nil {
			t.Fatal(err)
		}
		s.Client = fake.Client()
		_, err = s.User("@me")
		var re *discordgo.RESTError
		if !errors.As(err, &re) || re.Response.StatusCode != 401 {
			t.Fatalf("%q: err %v, want 401", tok, err)
		}
	}
}

func TestRecordsJSONAndMultipart(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	bot := fake.NewBot("rest")
	s, err := discordgo.New("Bot " + bot.Token)
	if err != nil {
		t.Fatal(err)
	}
	s.Client = fake.Client()
	channel := fake.NewID()
	_, err = s.ChannelMessageSendComplex(channel, &discordgo.MessageSend{
		Content:         "one",
		AllowedMentions: &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.ChannelMessageSendComplex(channel, &discordgo.MessageSend{
		Content: "two",
		Files:   []*discordgo.File{{Name: "output.txt", ContentType: "text/plain", Reader: strings.NewReader("full")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := fake.WaitRequests(ctx, 2, fakediscord.Match("POST", "/channels/"+channel+"/messages"))
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].Content() != "one" || !rs[0].AllowedMentions().None() {
		t.Fatalf("first: %s", rs[0].JSON)
	}
	if rs[1].Content() != "two" || rs[1].AllowedMentions().Present {
		t.Fatalf("second: %s", rs[1].JSON)
	}
	if len(rs[1].Files) != 1 || rs[1].Files[0].Field != "files[0]" || string(rs[1].Files[0].Data) != "full" {
		t.Fatalf("files: %+v", rs[1].Files)
	}
	if len(m.Attachments) != 1 || m.Attachments[0].Filename != "output.txt" {
		t.Fatalf("attachments: %+v", m.Attachments)
	}
	// nil Parse is what discordgo sends for an empty MessageAllowedMentions: pings allowed.
	if _, err := s.ChannelMessageSendComplex(channel, &discordgo.MessageSend{Content: "three", AllowedMentions: &discordgo.MessageAllowedMentions{}}); err != nil {
		t.Fatal(err)
	}
	r, err := fake.WaitRequest(ctx, func(r fakediscord.Request) bool {
		return r.Path == "/channels/"+channel+"/messages" && r.Content() == "three"
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.AllowedMentions().None() {
		t.Fatalf("null parse counted as none: %s", r.JSON)
	}
}

func TestRateLimitIsRetried(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	bot := fake.NewBot("limited")
	s, err := discordgo.New("Bot " + bot.Token)
	if err != nil {
		t.Fatal(err)
	}
	s.Client = fake.Client()
	channel := fake.NewID()
	path := "/channels/" + channel + "/messages"
	fake.RateLimitNext(fakediscord.Match("POST", path), 50*time.Millisecond, false)
	if _, err := s.ChannelMessageSend(channel, "x"); err != nil {
		t.Fatal(err)
	}
	rs, err := fake.WaitRequests(ctx, 2, fakediscord.Match("POST", path))
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].Status != 429 || rs[1].Status != 200 {
		t.Fatalf("statuses %d, %d", rs[0].Status, rs[1].Status)
	}
}

func TestReconnectResumesAndReplays(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	bot := fake.NewBot("resume")
	ch := make(chan *discordgo.MessageCreate, 4)
	session(t, bot, ch)
	channel := fake.NewID()
	if err := bot.Reconnect(); err != nil {
		t.Fatal(err)
	}
	bot.MessageCreate(discordgo.Message{ChannelID: channel, Content: "after op 7", Author: &discordgo.User{ID: "1"}})
	select {
	case m := <-ch:
		if m.Content != "after op 7" {
			t.Fatalf("got %q", m.Content)
		}
	case <-ctx.Done():
		t.Fatal("no message after op 7")
	}
	if err := bot.WaitSessions(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if bot.Resumes() != 1 {
		t.Fatalf("resumes = %d", bot.Resumes())
	}
}

func TestInvalidSessionReidentifies(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	bot := fake.NewBot("op9")
	session(t, bot, nil)
	if err := bot.InvalidSession(); err != nil {
		t.Fatal(err)
	}
	if err := bot.WaitSessions(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if n := len(bot.Identifies()); n != 2 {
		t.Fatalf("identifies = %d", n)
	}
}

func TestChannelMessagesList(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	bot := fake.NewBot("history")
	s, err := discordgo.New("Bot " + bot.Token)
	if err != nil {
		t.Fatal(err)
	}
	s.Client = fake.Client()
	ch := fake.NewID()
	var ids []string
	for i := range 5 {
		m := fake.PutMessage(discordgo.Message{ChannelID: ch, Content: strings.Repeat("x", i+1), Author: &discordgo.User{ID: "1"}})
		ids = append(ids, m.ID)
	}
	fake.PutMessage(discordgo.Message{ChannelID: fake.NewID(), Content: "elsewhere"})
	reply, err := s.ChannelMessageSendReply(ch, "answer", &discordgo.MessageReference{MessageID: ids[1], ChannelID: ch}, discordgo.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	got := func(limit int, before, after, around string) []string {
		t.Helper()
		msgs, err := s.ChannelMessages(ch, limit, before, after, around, discordgo.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range msgs {
			out = append(out, m.ID)
		}
		return out
	}
	want := func(what string, got []string, want ...string) {
		t.Helper()
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	want("newest 3", got(3, "", "", ""), reply.ID, ids[4], ids[3])
	want("2 after the second", got(2, "", ids[1], ""), ids[3], ids[2])
	want("all after the fourth", got(100, "", ids[3], ""), reply.ID, ids[4])
	want("2 before the third", got(2, ids[2], "", ""), ids[1], ids[0])
	want("3 around the third", got(3, "", "", ids[2]), ids[3], ids[2], ids[1])

	msgs, err := s.ChannelMessages(ch, 10, "", ids[1], "", discordgo.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if r := msgs[0]; r.ID != reply.ID || r.Type != discordgo.MessageTypeReply || r.MessageReference == nil ||
		r.MessageReference.MessageID != ids[1] || r.Author == nil || r.Author.ID != bot.UserID {
		t.Fatalf("the reply as listed = %+v", r)
	}
	if _, err := s.ChannelMessages(ch, 101, "", "", "", discordgo.WithContext(ctx)); restStatus(err) != 400 {
		t.Fatalf("limit 101: %v, want 400", err)
	}
}

func restStatus(err error) int {
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Response != nil {
		return re.Response.StatusCode
	}
	return 0
}
