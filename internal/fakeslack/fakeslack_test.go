package fakeslack_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/runblock/runblock/internal/fakeslack"
)

func setup(t *testing.T, opts fakeslack.Options) (*fakeslack.Server, *slack.Client, context.Context) {
	t.Helper()
	s := fakeslack.New(opts)
	t.Cleanup(s.Close)
	api := slack.New(fakeslack.BotToken, slack.OptionAPIURL(s.APIURL()), slack.OptionAppLevelToken(fakeslack.AppToken))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return s, api, ctx
}

func TestWebAPI(t *testing.T) {
	s, api, ctx := setup(t, fakeslack.Options{})
	auth, err := api.AuthTestContext(ctx)
	if err != nil || auth.UserID != fakeslack.BotUserID || auth.BotID != fakeslack.BotID {
		t.Fatalf("auth.test = %+v, %v", auth, err)
	}
	bad := slack.New("xoxb-wrong", slack.OptionAPIURL(s.APIURL()))
	if _, err := bad.AuthTestContext(ctx); err == nil || err.Error() != "invalid_auth" {
		t.Fatalf("bad token: %v, want invalid_auth", err)
	}

	parent := s.PutMessage(fakeslack.Message{Channel: "C1", User: "U1", Text: "hi"})
	_, ts, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("reply", false), slack.MsgOptionTS(parent.TS))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText("edited", false)); err != nil {
		t.Fatal(err)
	}
	replies := s.BotReplies("C1", parent.TS)
	if len(replies) != 1 || replies[0].Text != "edited" || replies[0].Edits != 1 {
		t.Fatalf("replies = %+v", replies)
	}
	if err := api.AddReactionContext(ctx, "tada", slack.ItemRef{Channel: "C1", Timestamp: parent.TS}); err != nil {
		t.Fatal(err)
	}
	if err := api.AddReactionContext(ctx, "tada", slack.ItemRef{Channel: "C1", Timestamp: parent.TS}); err == nil || err.Error() != "already_reacted" {
		t.Fatalf("second reaction: %v", err)
	}
	if m, _ := s.Get("C1", parent.TS); len(m.Reactions) != 1 {
		t.Fatalf("reactions = %v", m.Reactions)
	}

	h, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C1", Latest: parent.TS, Oldest: parent.TS, Inclusive: true, Limit: 1})
	if err != nil || len(h.Messages) != 1 || h.Messages[0].Text != "hi" {
		t.Fatalf("history = %+v, %v", h, err)
	}
	msgs, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: ts})
	if err != nil || len(msgs) != 2 {
		t.Fatalf("replies = %+v, %v", msgs, err)
	}

	sum, err := api.UploadFileContext(ctx, slack.UploadFileParameters{Filename: "out.txt", Content: "full output", FileSize: 11, Channel: "C1", ThreadTimestamp: parent.TS})
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.WaitFile(ctx, "C1", parent.TS)
	if err != nil || f.ID != sum.ID || string(f.Content) != "full output" {
		t.Fatalf("file = %+v, %v", f, err)
	}

	if _, _, err := api.DeleteMessageContext(ctx, "C1", ts); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitGone(ctx, "C1", ts); err != nil {
		t.Fatal(err)
	}
	if _, err := api.OpenViewContext(ctx, "trigger", slack.ModalViewRequest{Type: slack.VTModal, Title: slack.NewTextBlockObject("plain_text", "x", false, false)}); err != nil {
		t.Fatal(err)
	}
	if c := s.Calls("views.open"); len(c) != 1 || c[0].JSON == nil || c[0].Token != fakeslack.BotToken || c[0].Get("trigger_id") != "trigger" {
		t.Fatalf("views.open calls = %+v", c)
	}
}

func TestScriptedResponses(t *testing.T) {
	s, _, ctx := setup(t, fakeslack.Options{})
	s.Script("chat.postMessage", fakeslack.Response{Status: http.StatusTooManyRequests, RetryAfter: 7}, fakeslack.Response{Error: "channel_not_found"})
	api := slack.New(fakeslack.BotToken, slack.OptionAPIURL(s.APIURL()))
	_, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("x", false))
	var rl *slack.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter != 7*time.Second {
		t.Fatalf("first post: %v, want RateLimitedError 7s", err)
	}
	if _, _, err = api.PostMessageContext(ctx, "C1", slack.MsgOptionText("x", false)); err == nil || err.Error() != "channel_not_found" {
		t.Fatalf("second post: %v", err)
	}
	if _, _, err = api.PostMessageContext(ctx, "C1", slack.MsgOptionText("x", false)); err != nil {
		t.Fatalf("third post: %v", err)
	}
	calls := s.Calls("chat.postMessage")
	if len(calls) != 3 || calls[0].Status != 429 || calls[1].Error != "channel_not_found" || calls[2].Get("text") != "x" {
		t.Fatalf("calls = %+v", calls)
	}
}

// runSocket runs a socketmode client against s until the test ends and
// returns its events.
func runSocket(t *testing.T, s *fakeslack.Server, api *slack.Client) *socketmode.Client {
	t.Helper()
	sm := socketmode.New(api, socketmode.OptionLog(log.New(io.Discard, "", 0)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sm.RunContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("RunContext: %v", err)
		}
	})
	return sm
}

func nextRequest(ctx context.Context, t *testing.T, sm *socketmode.Client, typ socketmode.EventType) socketmode.Event {
	t.Helper()
	for {
		select {
		case ev := <-sm.Events:
			if ev.Type == typ {
				return ev
			}
		case <-ctx.Done():
			t.Fatalf("no %s event: %v", typ, ctx.Err())
		}
	}
}

func TestSocketMode(t *testing.T) {
	s, api, ctx := setup(t, fakeslack.Options{PingInterval: 50 * time.Millisecond})
	env := s.SendEvent(map[string]any{"type": "app_mention", "user": "U1", "text": "<@U0BOT> hi", "ts": "1.1", "channel": "C1"})
	sm := runSocket(t, s, api)
	ev := nextRequest(ctx, t, sm, socketmode.EventTypeEventsAPI)
	e := ev.Data.(slackevents.EventsAPIEvent)
	if m, ok := e.InnerEvent.Data.(*slackevents.AppMentionEvent); !ok || m.Text != "<@U0BOT> hi" {
		t.Fatalf("inner event = %#v", e.InnerEvent.Data)
	}
	if cb := e.Data.(*slackevents.EventsAPICallbackEvent); cb.EventID != env.EventID {
		t.Fatalf("event id = %q, want %q", cb.EventID, env.EventID)
	}
	if err := s.Redeliver(env); err != nil {
		t.Fatal(err)
	}
	again := nextRequest(ctx, t, sm, socketmode.EventTypeEventsAPI)
	if again.Request.RetryAttempt != 1 || again.Request.EnvelopeID != env.ID {
		t.Fatalf("redelivery = %+v", again.Request)
	}
	_ = sm.Ack(*ev.Request)
	if _, err := s.WaitAck(ctx, env); err != nil {
		t.Fatal(err)
	}

	slash := s.SendSlashCommand(map[string]string{"command": "/run", "text": "print(1)", "user_id": "U1", "channel_id": "C1"})
	ev = nextRequest(ctx, t, sm, socketmode.EventTypeSlashCommand)
	if cmd := ev.Data.(slack.SlashCommand); cmd.Text != "print(1)" || ev.Request.EnvelopeID != slash.ID {
		t.Fatalf("slash command = %+v", cmd)
	}
	s.SendInteractive(map[string]any{"type": "message_action", "callback_id": "run_code", "message": map[string]any{"text": "x", "ts": "1.2"}})
	ev = nextRequest(ctx, t, sm, socketmode.EventTypeInteractive)
	if cb := ev.Data.(slack.InteractionCallback); cb.CallbackID != "run_code" || cb.Message.Timestamp != "1.2" {
		t.Fatalf("interaction = %+v", cb)
	}

	if err := s.Disconnect("refresh_requested"); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitConnections(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if err := s.Drop(); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitConnections(ctx, 3); err != nil {
		t.Fatal(err)
	}
	s.SendEvent(map[string]any{"type": "message", "user": "U1", "text": "after", "ts": "1.3", "channel": "C1"})
	ev = nextRequest(ctx, t, sm, socketmode.EventTypeEventsAPI)
	if m := ev.Data.(slackevents.EventsAPIEvent).InnerEvent.Data.(*slackevents.MessageEvent); !strings.Contains(m.Text, "after") {
		t.Fatalf("after reconnect: %+v", m)
	}
}

func TestAutoRedelivery(t *testing.T) {
	s, api, ctx := setup(t, fakeslack.Options{AckTimeout: time.Millisecond})
	// Sent before the client connects: the ack timeout runs from the
	// delivery, not while the envelope waits for a connection.
	env := s.SendEvent(map[string]any{"type": "message", "user": "U1", "text": "x", "ts": "1.1", "channel": "C1"})
	sm := runSocket(t, s, api)
	for {
		ev := nextRequest(ctx, t, sm, socketmode.EventTypeEventsAPI)
		if ev.Request.EnvelopeID == env.ID && ev.Request.RetryAttempt == 1 && ev.Request.RetryReason == "timeout" {
			_ = sm.Ack(*ev.Request)
			break
		}
	}
	if _, err := s.WaitAck(ctx, env); err != nil {
		t.Fatal(err)
	}
}

func TestMessageMetadata(t *testing.T) {
	s, api, ctx := setup(t, fakeslack.Options{})
	parent := s.PutMessage(fakeslack.Message{Channel: "C1", User: "U1", Text: "hi"})
	meta := slack.SlackMetadata{EventType: "runblock_reply", EventPayload: map[string]any{"source_ts": parent.TS}}
	_, ts, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("reply", false), slack.MsgOptionTS(parent.TS), slack.MsgOptionMetadata(meta))
	if err != nil {
		t.Fatal(err)
	}
	replies := func(all bool) slack.Message {
		t.Helper()
		msgs, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: parent.TS, IncludeAllMetadata: all})
		if err != nil || len(msgs) != 2 || msgs[1].Timestamp != ts {
			t.Fatalf("conversations.replies = %+v, %v", msgs, err)
		}
		return msgs[1]
	}
	if got := replies(true).Metadata; got.EventType != "runblock_reply" || got.EventPayload["source_ts"] != parent.TS {
		t.Fatalf("metadata with include_all_metadata = %+v", got)
	}
	if got := replies(false).Metadata; got.EventType != "" || got.EventPayload != nil {
		t.Fatalf("metadata without include_all_metadata = %+v, want none", got)
	}

	// chat.update without metadata keeps it; with new metadata replaces it.
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText("edited", false)); err != nil {
		t.Fatal(err)
	}
	if got := replies(true).Metadata; got.EventPayload["source_ts"] != parent.TS {
		t.Fatalf("metadata after an update without it = %+v", got)
	}
	meta.EventPayload["reaction"] = "x"
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText("again", false), slack.MsgOptionMetadata(meta)); err != nil {
		t.Fatal(err)
	}
	if got := replies(true).Metadata; got.EventPayload["reaction"] != "x" {
		t.Fatalf("metadata after an update with it = %+v", got)
	}

	_, _, err = api.PostMessageContext(ctx, "C1", slack.MsgOptionText("bad", false), slack.MsgOptionMetadata(slack.SlackMetadata{EventPayload: map[string]any{}}))
	if err == nil || err.Error() != "invalid_metadata_format" {
		t.Fatalf("metadata without event_type: %v, want invalid_metadata_format", err)
	}
}

// TestOAuth: codes from Authorize trade once for a token that auth.test
// answers for its own workspace; rotating tokens refresh; revoked and
// uninstalled tokens stop working.
func TestOAuth(t *testing.T) {
	s, _, ctx := setup(t, fakeslack.Options{})
	client := &http.Client{}
	opt := slack.OAuthOptionAPIURL(s.APIURL())
	code := s.Authorize(fakeslack.Install{TeamID: "T1", UserID: "U1", Rotate: true}, "chat:write,commands")
	if _, err := slack.GetOAuthV2ResponseContext(ctx, client, fakeslack.ClientID, "wrong", code, "", opt); err == nil || err.Error() != "invalid_client_id" {
		t.Fatalf("wrong secret: %v", err)
	}
	resp, err := slack.GetOAuthV2ResponseContext(ctx, client, fakeslack.ClientID, fakeslack.ClientSecret, code, "", opt)
	if err != nil || resp.Team.ID != "T1" || resp.AuthedUser.ID != "U1" || resp.RefreshToken == "" || resp.ExpiresIn != int(fakeslack.TokenLifetime/time.Second) || s.Token("T1") != resp.AccessToken {
		t.Fatalf("oauth.v2.access = %+v, %v", resp, err)
	}
	if _, err := slack.GetOAuthV2ResponseContext(ctx, client, fakeslack.ClientID, fakeslack.ClientSecret, code, "", opt); err == nil || err.Error() != "invalid_code" {
		t.Fatalf("a code used twice: %v", err)
	}
	api := slack.New(resp.AccessToken, slack.OptionAPIURL(s.APIURL()))
	if auth, err := api.AuthTestContext(ctx); err != nil || auth.TeamID != "T1" || auth.BotID != fakeslack.BotID {
		t.Fatalf("auth.test with the new token = %+v, %v", auth, err)
	}
	next, err := slack.RefreshOAuthV2TokenContext(ctx, client, fakeslack.ClientID, fakeslack.ClientSecret, resp.RefreshToken, opt)
	if err != nil || next.AccessToken == resp.AccessToken || s.Token("T1") != next.AccessToken {
		t.Fatalf("refresh = %+v, %v", next, err)
	}
	s.Revoke(next.AccessToken)
	if _, err := slack.New(next.AccessToken, slack.OptionAPIURL(s.APIURL())).AuthTestContext(ctx); err == nil || err.Error() != "token_revoked" {
		t.Fatalf("a revoked token: %v", err)
	}
	if ev := s.Uninstall("T1"); ev["type"] != "app_uninstalled" || s.Token("T1") != "" {
		t.Fatalf("uninstall: %v", ev)
	}
	if _, err := api.AuthTestContext(ctx); err == nil || err.Error() != "token_revoked" {
		t.Fatalf("a token of an uninstalled workspace: %v", err)
	}
}

// TestResponseURLs: an in_channel post to a slash command's response_url
// becomes a message of the app in its channel, with its attachments; a
// click's response_url deletes the message clicked on with
// delete_original; a plain response_url only records.
func TestResponseURLs(t *testing.T) {
	s, _, ctx := setup(t, fakeslack.Options{})
	btn := slack.NewButtonBlockElement("act", "v", slack.NewTextBlockObject(slack.PlainTextType, "Go", false, false))
	att := slack.Attachment{Blocks: slack.Blocks{BlockSet: []slack.Block{slack.NewActionBlock("blk", btn)}}}
	if err := slack.PostWebhookContext(ctx, s.ResponseURLIn("C1"), &slack.WebhookMessage{Text: "answer", ResponseType: slack.ResponseTypeInChannel, Attachments: []slack.Attachment{att}}); err != nil {
		t.Fatal(err)
	}
	m, err := s.WaitMessage(ctx, "C1", func(m fakeslack.Message) bool { return m.Text == "answer" })
	if err != nil || m.BotID != fakeslack.BotID || !strings.Contains(m.Attachments, `"action_id":"act"`) {
		t.Fatalf("message %+v, %v: want the app's, with its button", m, err)
	}
	click := s.BlockActions(m, "U1", "act", s.ClickURL(m))
	if a := click["actions"].([]any)[0].(map[string]any); a["block_id"] != "blk" {
		t.Fatalf("click %+v: want the button's block_id", a)
	}
	url := click["response_url"].(string)
	if err := slack.PostWebhookContext(ctx, url, &slack.WebhookMessage{Text: "only you", ResponseType: slack.ResponseTypeEphemeral}); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Get("C1", m.TS); !ok {
		t.Fatal("an ephemeral answer deleted the message")
	}
	if err := slack.PostWebhookContext(ctx, url, &slack.WebhookMessage{DeleteOriginal: true}); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Get("C1", m.TS); ok {
		t.Fatal("delete_original left the message")
	}
	if err := slack.PostWebhookContext(ctx, url, &slack.WebhookMessage{DeleteOriginal: true}); err == nil {
		t.Fatal("a message deleted twice")
	}
	plain := s.ResponseURL()
	if err := slack.PostWebhookContext(ctx, plain, &slack.WebhookMessage{Text: "nowhere", ResponseType: slack.ResponseTypeInChannel}); err != nil {
		t.Fatal(err)
	}
	p, err := s.WaitPosted(ctx, plain[strings.LastIndex(plain, "/")+1:])
	if err != nil || p.Body["text"] != "nowhere" || p.Attachments != "" {
		t.Fatalf("posted %+v, %v", p, err)
	}
}
