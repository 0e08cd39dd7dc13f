package slack

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runblock/runblock/internal/fakeslack"
)

const secret = "8f742231b10e8888abcd99yyyzzz85a5"

// eventsAPI runs a Bot without Socket Mode, its Handler on a test server.
func eventsAPI(t *testing.T, cfg Config) (*harness, string) {
	t.Helper()
	cfg.SigningSecret = secret
	h := start(t, cfg, echo, false)
	if !h.bot.Ready() {
		t.Fatal("not Ready after Open without Socket Mode")
	}
	srv := httptest.NewServer(h.bot.Handler())
	t.Cleanup(srv.Close)
	return h, srv.URL + "/slack/events"
}

// send posts body to the handler, signed at ts with key, and returns the
// status and body of the answer.
func send(t testing.TB, u, contentType string, body []byte, key string, ts time.Time, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	if key != "" {
		req.Header.Set("X-Slack-Request-Timestamp", strconv.FormatInt(ts.Unix(), 10))
		req.Header.Set("X-Slack-Signature", fakeslack.Sign(key, ts, body))
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEventsAPISignatures(t *testing.T) {
	t.Parallel()
	h, u := eventsAPI(t, Config{})
	challenge := mustJSON(t, map[string]any{"token": "x", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", "type": "url_verification"})
	for _, tc := range []struct {
		name   string
		key    string
		at     time.Time
		status int
	}{
		{"unsigned", "", time.Now(), http.StatusUnauthorized},
		{"wrong secret", "not-the-secret", time.Now(), http.StatusUnauthorized},
		{"stale", secret, time.Now().Add(-6 * time.Minute), http.StatusUnauthorized},
		{"good", secret, time.Now(), http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := send(t, u, "application/json", challenge, tc.key, tc.at)
			if status != tc.status {
				t.Fatalf("status %d, want %d (%s)", status, tc.status, body)
			}
			if status == http.StatusOK && body != "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" {
				t.Fatalf("url_verification answered %q", body)
			}
		})
	}
	h.settle()
	if n := len(h.fake.Calls("chat.postMessage")); n != 0 {
		t.Fatalf("%d posts", n)
	}
}

func TestEventsAPIMentionAndRetries(t *testing.T) {
	t.Parallel()
	h, u := eventsAPI(t, Config{})
	ch := h.channel()
	m := h.message(ch, h.user(), "<@U0BOT> ```print(1)```")
	payload, _ := h.fake.EventCallback(map[string]any{"type": "app_mention", "channel": ch, "user": m.User, "text": m.Text, "ts": m.TS})
	body := mustJSON(t, payload)
	if status, b := send(t, u, "application/json", body, secret, time.Now()); status != http.StatusOK {
		t.Fatalf("status %d: %s", status, b)
	}
	// Slack retries what it thinks was lost; the retry is accepted, not re-run.
	if status, b := send(t, u, "application/json", body, secret, time.Now(), "X-Slack-Retry-Num", "1", "X-Slack-Retry-Reason", "http_timeout"); status != http.StatusOK {
		t.Fatalf("retry status %d: %s", status, b)
	}
	h.reply(m, "ran print(1)")
	h.reaction(m, "white_check_mark")
	h.settle()
	if n := len(h.fake.BotReplies(ch, m.TS)); n != 1 {
		t.Fatalf("%d replies, want 1", n)
	}
	// Closed: events are refused, so Slack retries them elsewhere or later.
	late, _ := h.fake.EventCallback(map[string]any{"type": "app_mention", "channel": ch, "user": m.User, "text": m.Text, "ts": m.TS})
	if status, _ := send(t, u, "application/json", mustJSON(t, late), secret, time.Now()); status != http.StatusServiceUnavailable {
		t.Fatalf("event after Close: status %d, want 503", status)
	}
}

func TestEventsAPISlashAndShortcut(t *testing.T) {
	t.Parallel()
	h, u := eventsAPI(t, Config{})
	ch, user := h.channel(), h.user()
	form := url.Values{"command": {"/run"}, "text": {"print(4)"}, "user_id": {user}, "channel_id": {ch}, "team_id": {fakeslack.TeamID}, "response_url": {h.fake.ResponseURL()}}
	if status, b := send(t, u, "application/x-www-form-urlencoded", []byte(form.Encode()), secret, time.Now()); status != http.StatusOK || b != "" {
		t.Fatalf("slash command: %d %q", status, b)
	}
	if _, err := h.fake.WaitMessage(h.ctx, ch, func(m fakeslack.Message) bool {
		return m.BotID == fakeslack.BotID && strings.Contains(m.Text, "ran print(4)")
	}); err != nil {
		t.Fatal(err)
	}

	m := h.message(ch, "U0OTHER", "```print(5)```")
	payload := mustJSON(t, map[string]any{"type": "message_action", "callback_id": ShortcutCallbackID, "trigger_id": "t",
		"user": map[string]any{"id": user}, "channel": map[string]any{"id": ch}, "team": map[string]any{"id": fakeslack.TeamID},
		"message": map[string]any{"type": "message", "user": "U0OTHER", "text": m.Text, "ts": m.TS}})
	if status, b := send(t, u, "application/x-www-form-urlencoded", []byte(url.Values{"payload": {string(payload)}}.Encode()), secret, time.Now()); status != http.StatusOK {
		t.Fatalf("shortcut: %d %q", status, b)
	}
	h.reply(m, "ran print(5)")

	// A forged shortcut is refused before it is read.
	if status, _ := send(t, u, "application/x-www-form-urlencoded", []byte(url.Values{"payload": {string(payload)}}.Encode()), "forged", time.Now()); status != http.StatusUnauthorized {
		t.Fatalf("forged shortcut: status %d", status)
	}
}

// TestManifestMatchesAdapter keeps manifest.yaml and the adapter's
// identifiers in step.
func TestManifestMatchesAdapter(t *testing.T) {
	t.Parallel()
	m := string(Manifest)
	for _, want := range []string{
		"command: " + SlashCommand, "callback_id: " + ShortcutCallbackID, "socket_mode_enabled: true",
		"- app_mention\n", "- message.channels\n", "- message.im\n", "- reaction_added\n",
		"- chat:write\n", "- reactions:write\n", "- reactions:read\n", "- files:write\n", "- files:read\n", "- commands\n",
		// Reading the reply metadata back (recall.go) in every kind of
		// conversation the bot answers in.
		"- channels:history\n", "- groups:history\n", "- im:history\n", metadataType,
		// The replies' buttons: block_actions, and admins from users.info.
		"interactivity:\n    is_enabled: true\n", "- users:read\n",
	} {
		if !strings.Contains(m, want) {
			t.Errorf("manifest lacks %q", want)
		}
	}
}
