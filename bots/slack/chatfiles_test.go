package slack

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/internal/fakeslack"
)

// TestConnectStubIsCompletedWithFilesInfo: a file shared from another
// organisation (Slack Connect) comes as a stub without a name or URL;
// files.info has the rest, and the file goes into the run.
func TestConnectStubIsCompletedWithFilesInfo(t *testing.T) {
	t.Parallel()
	r := &fakerunner.Runner{}
	h := start(t, Config{}, r, true)
	data := h.fake.AddUserFile(fakeslack.UserFile{Name: "data.csv", Mimetype: "text/csv", Content: []byte("a\n1\n"), Size: -1})
	m := h.mentionWithFiles(h.channel(), h.user(), "```python\nprint(open('data.csv').read())\n```", fakeslack.ConnectStub(data))
	h.reply(m, "ran")
	h.settle()
	if files := r.Jobs()[0].Request.Files; len(files) != 1 || files[0].Path != "data.csv" || string(files[0].Content) != "a\n1\n" {
		t.Errorf("request files: %+v", files)
	}
	if calls := h.fake.Calls("files.info"); len(calls) != 1 || calls[0].Get("file") != data["id"] {
		t.Errorf("files.info calls: %+v", calls)
	}
}

// TestShortcutTakesTheMessagesFiles: the "Run code" message shortcut runs
// the message with its files, as the ▶️ reaction and edits do.
func TestShortcutTakesTheMessagesFiles(t *testing.T) {
	t.Parallel()
	r := &fakerunner.Runner{}
	h := start(t, Config{}, r, true)
	ch, u := h.channel(), h.user()
	data := h.fake.AddUserFile(fakeslack.UserFile{Name: "data.csv", Mimetype: "text/csv", Content: []byte("x\n"), Size: -1})
	m := h.fake.PutMessage(fakeslack.Message{Channel: ch, User: "U0AUTHOR", Text: "```python\nprint(open('data.csv').read())\n```", SubType: "file_share", Files: []map[string]any{data}})
	h.fake.SendInteractive(map[string]any{"type": "message_action", "callback_id": ShortcutCallbackID, "trigger_id": "t",
		"response_url": h.fake.ResponseURL(), "user": map[string]any{"id": u}, "channel": map[string]any{"id": ch},
		"message": map[string]any{"type": "message", "subtype": "file_share", "user": "U0AUTHOR", "text": m.Text, "ts": m.TS, "files": []any{data}}})
	h.reply(m, "ran")
	h.settle()
	if files := r.Jobs()[0].Request.Files; len(files) != 1 || files[0].Path != "data.csv" || string(files[0].Content) != "x\n" {
		t.Errorf("request files: %+v", files)
	}
}

// toFake takes requests for Slack's file host to the fake, as DNS and an
// egress route would take them to Slack.
type toFake struct{ fake *url.URL }

func (tf toFake) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host != "files.slack.com" {
		return nil, &url.Error{Op: req.Method, URL: req.URL.String(), Err: http.ErrNotSupported}
	}
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host = tf.fake.Scheme, tf.fake.Host
	return http.DefaultTransport.RoundTrip(req)
}

// TestProxiedAPIFetchesFilesFromSlacksFileHost: with SLACK_API_URL on an
// egress proxy (here the fake, on loopback), the files of a message are
// still on files.slack.com, and are fetched from there with the token.
func TestProxiedAPIFetchesFilesFromSlacksFileHost(t *testing.T) {
	t.Parallel()
	r := &fakerunner.Runner{}
	h := startWith(t, fakeslack.Options{FileHost: "https://files.slack.com"}, Config{}, r, true, func(b *Bot) {
		u, err := url.Parse(b.cfg.APIURL)
		if err != nil {
			t.Fatal(err)
		}
		b.files.Transport = toFake{u}
	})
	data := h.fake.AddUserFile(fakeslack.UserFile{Name: "data.csv", Mimetype: "text/csv", Content: []byte("a,b\n"), Size: -1})
	if !strings.HasPrefix(data["url_private_download"].(string), "https://files.slack.com/") {
		t.Fatalf("file URL %v", data["url_private_download"])
	}
	m := h.mentionWithFiles(h.channel(), h.user(), "```python\nprint(1)\n```", data)
	reply := h.reply(m, "ran")
	h.settle()
	if files := r.Jobs()[0].Request.Files; len(files) != 1 || string(files[0].Content) != "a,b\n" {
		t.Errorf("request files: %+v; reply %q", files, reply.Text)
	}
}

// TestFileHostsGetTheTokenOnly: the token goes to the API's host (and
// beneath it) and to Slack's own file hosts over https, nowhere else.
func TestFileHostsGetTheTokenOnly(t *testing.T) {
	for _, tc := range []struct {
		api, file string
		want      bool
	}{
		{"", "https://files.slack.com/files-pri/T1-F1/x.csv", true},
		{"", "https://slack.com/x", true},
		{"", "http://files.slack.com/x", false},
		{"", "https://evil.example/x", false},
		{"https://slack-gov.com/api/", "https://files.slack-gov.com/x", true},
		{"http://egress.internal:8080/slack/api/", "https://files.slack.com/files-pri/T1-F1/x.csv", true},
		{"http://egress.internal:8080/slack/api/", "https://FILES.SLACK.COM/x", true},
		{"http://egress.internal:8080/slack/api/", "http://egress.internal:8080/x", true},
		{"http://egress.internal:8080/slack/api/", "http://files.slack.com/x", false},
		{"http://egress.internal:8080/slack/api/", "https://files.slack.com:8443/x", false},
		{"http://egress.internal:8080/slack/api/", "https://files.slack.com.evil.example/x", false},
		{"http://egress.internal:8080/slack/api/", "https://evilfiles.slack.com.example/x", false},
		{"http://egress.internal:8080/slack/api/", "https://example.com/x", false},
	} {
		b := &Bot{cfg: Config{APIURL: tc.api}}
		u, err := url.Parse(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		if got := b.slackHost(u); got != tc.want {
			t.Errorf("API %q, file %s: trusted %v, want %v", tc.api, tc.file, got, tc.want)
		}
	}
}

// TestMentionSharingFilesIsAnsweredOnce: a mention that shares a file comes
// as app_mention and a file_share message, or as either alone; it is
// answered exactly once whichever come, in either order.
func TestMentionSharingFilesIsAnsweredOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		events []string
	}{
		{"app_mention then file_share", []string{"app_mention", "file_share"}},
		{"file_share then app_mention", []string{"file_share", "app_mention"}},
		{"file_share alone", []string{"file_share"}},
		{"app_mention alone", []string{"app_mention"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := &fakerunner.Runner{}
			h := start(t, Config{}, r, true)
			ch, u := h.channel(), h.user()
			data := h.fake.AddUserFile(fakeslack.UserFile{Name: "data.csv", Mimetype: "text/csv", Content: []byte("a\n"), Size: -1})
			files := []map[string]any{data}
			m := h.fake.PutMessage(fakeslack.Message{Channel: ch, User: u, Text: "<@" + fakeslack.BotUserID + "> ```python\nprint(1)\n```", SubType: "file_share", Files: files})
			for _, e := range tc.events {
				switch e {
				case "app_mention":
					h.fake.SendEvent(map[string]any{"type": "app_mention", "channel": ch, "user": u, "text": m.Text, "ts": m.TS, "event_ts": m.TS, "files": files})
				case "file_share":
					ev := messageEvent(m, "channel")
					ev["subtype"], ev["files"] = "file_share", files
					h.fake.SendEvent(ev)
				}
			}
			h.reply(m, "ran")
			h.reaction(m, "white_check_mark")
			// Events are dispatched in order: once the next one is
			// answered, every handler of m's was started.
			next := h.mention(ch, u, "```python\nprint(2)\n```")
			h.reply(next, "ran")
			h.settle()
			if n := len(r.Jobs()); n != 2 {
				t.Errorf("%d runs, want 2 (m's and the next)", n)
			}
			if got := h.fake.BotReplies(ch, m.TS); len(got) != 1 {
				t.Errorf("%d replies, want 1: %+v", len(got), got)
			}
			if files := r.Jobs()[0].Request.Files; len(files) != 1 || files[0].Path != "data.csv" {
				t.Errorf("request files: %+v", files)
			}
		})
	}
}

// TestDeletingTheBotsOwnMessagesLooksNothingUp: the bot's own replies
// answer no message, so their deletion (message_deleted, or a tombstone
// when they have a thread) costs no history lookup, which Slack rate-limits
// hard for distributed apps.
func TestDeletingTheBotsOwnMessagesLooksNothingUp(t *testing.T) {
	t.Parallel()
	h := start(t, Config{}, echo, true)
	m := h.mention(h.channel(), h.user(), "```python\nprint(1)\n```")
	r := h.reply(m, "ran")
	h.reaction(m, "white_check_mark")
	h.remove(r)
	h.bury(r)
	// Events are dispatched in order: once the next one is answered, the
	// deletions' handlers were started, and settle waits for them.
	next := h.mention(m.Channel, h.user(), "```python\nprint(2)\n```")
	h.reply(next, "ran")
	h.settle()
	for _, method := range []string{"conversations.replies", "conversations.history"} {
		if calls := h.fake.Calls(method); len(calls) != 0 {
			t.Errorf("%d calls of %s: %+v", len(calls), method, calls)
		}
	}
	if _, ok := h.fake.Get(m.Channel, m.TS); !ok {
		t.Errorf("the message was deleted")
	}
}

// TestPythonPlotAltTextNamesTitleAndAxes: a plot's alt text names the
// title and axis labels matplotlib knows (the sandbox writes them into the
// PNG); a plot without them gets the plain sentence.
func TestPythonPlotAltTextNamesTitleAndAxes(t *testing.T) {
	t.Parallel()
	h := start(t, Config{}, sciPython(t, "matplotlib"), true)
	m := h.mention(h.channel(), h.user(), "```python\nimport matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.title('Sales')\nplt.xlabel('month')\nplt.ylabel('€ (k)')\nplt.show()\nplt.plot([1])\nplt.show()\n```")
	h.reply(m, "OK")
	files := waitFiles(t, h, m.Channel, m.TS, "figure-1.png", "figure-2.png")
	for i, want := range []string{"Plot figure-1.png: Sales, x axis: month, y axis: € (k)", "Image figure-2.png made by the snippet"} {
		if files[i].AltText != want {
			t.Errorf("%s: alt text %q, want %q", files[i].Filename, files[i].AltText, want)
		}
	}
}
