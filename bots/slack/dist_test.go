package slack

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/internal/fakeslack"
	"github.com/runblock/runblock/internal/store"
	"github.com/runblock/runblock/internal/store/storetest"
	"github.com/runblock/runblock/internal/syncbuf"
)

const storeKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

// replica is a distributed app (no bot token) on a store, its Handler on a
// test server: one replica of runblock.
type replica struct {
	t     testing.TB
	ctx   context.Context
	fake  *fakeslack.Server
	store store.Store
	bot   *Bot
	url   string // the server's base URL
	logs  *syncbuf.Buffer
	clock *clock
	srv   *httptest.Server
}

// openStore opens the store at loc with the test key, closed with t.
func openStore(t testing.TB, loc string) store.Store {
	t.Helper()
	l, err := store.ParseLocation(loc)
	if err != nil {
		t.Fatal(err)
	}
	key, err := store.ParseKey(storeKey)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	s, err := store.Open(ctx, l, store.Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// distribute starts a replica on the fake and the store at loc, running
// snippets with runner (echo when none).
func distribute(t testing.TB, fake *fakeslack.Server, loc string, runner ...executor.Submitter) *replica {
	t.Helper()
	run := executor.Submitter(echo)
	if len(runner) > 0 {
		run = runner[0]
	}
	return distributeWith(t, fake, loc, replicaOptions{runner: run})
}

// replicaOptions vary a replica.
type replicaOptions struct {
	runner    executor.Submitter
	publicURL string // Config.PublicURL
	// prefix is the path a reverse proxy in front strips: the replica's
	// url ends with it.
	prefix string
}

// distributeWith starts a replica as distribute does, with o.
func distributeWith(t testing.TB, fake *fakeslack.Server, loc string, o replicaOptions) *replica {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	r := &replica{t: t, ctx: ctx, fake: fake, store: openStore(t, loc), logs: &syncbuf.Buffer{}, clock: &clock{}}
	cfg := Config{
		ClientID: fakeslack.ClientID, ClientSecret: fakeslack.ClientSecret, SigningSecret: secret,
		APIURL: fake.APIURL(), Store: r.store, Limits: Limits{Timeout: 5 * time.Second, MemoryBytes: 256 << 20},
		PublicURL: o.publicURL,
	}
	r.bot = New(cfg, o.runner, slog.New(slog.NewTextHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	r.bot.now = r.clock.now
	if err := r.bot.Open(ctx); err != nil {
		t.Fatalf("Open: %v", err)
	}
	var h http.Handler = r.bot.Handler()
	if o.prefix != "" {
		mux := http.NewServeMux()
		mux.Handle(o.prefix+"/", http.StripPrefix(o.prefix, h))
		h = mux
	}
	r.srv = httptest.NewServer(h)
	r.url = r.srv.URL + o.prefix
	t.Cleanup(func() {
		r.srv.Close()
		r.close()
		if t.Failed() {
			t.Logf("replica log:\n%s", r.logs.String())
		}
	})
	return r
}

// close closes the bot, so that every handler has finished.
func (r *replica) close() {
	cctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := r.bot.Close(cctx); err != nil {
		r.t.Errorf("Close: %v", err)
	}
}

// browser is a person's browser: it keeps cookies and does not follow
// redirects, so that the test sees where they go.
func browser(t testing.TB) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// get fetches u with c and returns the status, the Location and the body.
func get(t testing.TB, c *http.Client, u string) (int, string, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(b)
}

// start starts an installation in c: the state Slack's authorize page got.
func (r *replica) start(c *http.Client) string {
	r.t.Helper()
	status, _, body := get(r.t, c, r.url+"/slack/install")
	if status != http.StatusOK || !strings.Contains(body, `href="install/start"`) || !strings.Contains(body, "Add to Slack") {
		r.t.Fatalf("/slack/install: %d %s", status, body)
	}
	status, loc, _ := get(r.t, c, r.url+"/slack/install/start")
	u, err := url.Parse(loc)
	if status != http.StatusFound || err != nil || u.Path != "/oauth/v2/authorize" || !strings.HasPrefix(loc, r.fake.URL()) {
		r.t.Fatalf("/slack/install/start: %d to %q", status, loc)
	}
	q := u.Query()
	if q.Get("client_id") != fakeslack.ClientID || q.Get("scope") != strings.Join(BotScopes, ",") || q.Get("state") == "" {
		r.t.Fatalf("authorize URL %s", loc)
	}
	return q.Get("state")
}

// redirect is Slack sending c back with code and state.
func (r *replica) redirect(c *http.Client, code, state string) (int, string) {
	r.t.Helper()
	q := url.Values{"code": {code}, "state": {state}}
	status, _, body := get(r.t, c, r.url+"/slack/oauth_redirect?"+q.Encode())
	return status, body
}

// install installs the app for in through the whole flow, as a person in
// a browser, and returns the identity of its new token.
func (r *replica) install(in fakeslack.Install) fakeslack.Identity {
	r.t.Helper()
	c := browser(r.t)
	state := r.start(c)
	code := r.fake.Authorize(in, strings.Join(BotScopes, ","))
	if status, body := r.redirect(c, code, state); status != http.StatusOK || !strings.Contains(body, "runblock is installed") {
		r.t.Fatalf("redirect: %d %s", status, body)
	}
	return fakeslack.Identity{TeamID: in.TeamID, EnterpriseID: in.EnterpriseID, IsEnterpriseInstall: in.IsEnterpriseInstall, BotUserID: fakeslack.BotUserID, BotID: fakeslack.BotID}
}

// event posts an event_callback of id's installation, signed, and returns
// the status.
func (r *replica) event(payload map[string]any, header ...string) int {
	r.t.Helper()
	status, body := send(r.t, r.url+"/slack/events", "application/json", mustJSON(r.t, payload), secret, time.Now(), header...)
	if status != http.StatusOK {
		r.t.Logf("event answered %d %s", status, body)
	}
	return status
}

// mention puts a mention with code into a fresh channel of id's workspace
// and sends its app_mention event; it returns the message.
func (r *replica) mention(id fakeslack.Identity, code string) (fakeslack.Message, map[string]any) {
	r.t.Helper()
	m := r.fake.PutMessage(fakeslack.Message{Channel: r.fake.NewID("C"), User: r.fake.NewID("U"), Text: "<@" + fakeslack.BotUserID + "> ```" + code + "```"})
	p, _ := r.fake.EventCallbackIn(id, map[string]any{"type": "app_mention", "channel": m.Channel, "user": m.User, "text": m.Text, "ts": m.TS, "event_ts": m.TS})
	return m, p
}

// replyIn waits for the bot's reply in m's thread and returns the token it
// was posted with.
func (r *replica) replyIn(m fakeslack.Message, want string) string {
	r.t.Helper()
	if _, err := r.fake.WaitMessage(r.ctx, m.Channel, func(x fakeslack.Message) bool {
		return x.BotID == fakeslack.BotID && x.ThreadTS == m.TS && strings.Contains(x.Text, want)
	}); err != nil {
		r.t.Fatalf("no reply %q to %s: %v", want, m.TS, err)
	}
	calls := r.fake.Calls("chat.postMessage")
	for _, c := range calls {
		if c.Get("channel") == m.Channel && c.Error == "" {
			return c.Token
		}
	}
	r.t.Fatalf("no chat.postMessage in %s", m.Channel)
	return ""
}

func TestDistributedWorkspacesEachAnsweredWithTheirOwnToken(t *testing.T) {
	t.Parallel()
	fake := fakeslack.New(fakeslack.Options{})
	t.Cleanup(fake.Close)
	r := distribute(t, fake, storetest.SQLite(t))
	one := r.install(fakeslack.Install{TeamID: "T1ONE", TeamName: "One", UserID: "UADMIN1"})
	two := r.install(fakeslack.Install{TeamID: "T2TWO", TeamName: "Two", UserID: "UADMIN2"})
	org := r.install(fakeslack.Install{EnterpriseID: "E1GRID", IsEnterpriseInstall: true, UserID: "UORGADMIN"})
	org.TeamID = "T3INORG" // a workspace of the org, answered with the org's token

	for _, id := range []fakeslack.Identity{one, two, org} {
		owner := id.TeamID
		if id.IsEnterpriseInstall {
			owner = id.EnterpriseID
		}
		want := fake.Token(owner)
		if want == "" || want == fakeslack.BotToken {
			t.Fatalf("%s has token %q", owner, want)
		}
		m, ev := r.mention(id, "print(1)")
		if status := r.event(ev); status != http.StatusOK {
			t.Fatalf("event of %s: %d", owner, status)
		}
		if got := r.replyIn(m, "ran print(1)"); got != want {
			t.Errorf("the reply in %s went with another token than its installation's", owner)
		}
	}
	// auth.test learnt each bot id with the workspace's own token.
	if n := len(fake.Calls("auth.test")); n != 3 {
		t.Errorf("%d auth.test calls, want one per installation", n)
	}
	inst, err := r.store.Installation(r.ctx, "", "T1ONE")
	if err != nil || inst.BotID != fakeslack.BotID || inst.InstallerUserID != "UADMIN1" || len(inst.Scopes) != len(BotScopes) {
		t.Errorf("stored installation %+v %v", inst, err)
	}
}

func TestInstallRefusals(t *testing.T) {
	t.Parallel()
	fake := fakeslack.New(fakeslack.Options{})
	t.Cleanup(fake.Close)
	r := distribute(t, fake, storetest.SQLite(t))
	in := fakeslack.Install{TeamID: "T1", UserID: "U1"}
	tests := []struct {
		name   string
		try    func(t *testing.T) (int, string)
		status int
		says   string
	}{
		{"forged state", func(t *testing.T) (int, string) {
			c := browser(t)
			r.start(c)
			return r.redirect(c, fake.Authorize(in, ""), "forged-state")
		}, http.StatusBadRequest, "was not issued by this runblock"},
		{"reused state", func(t *testing.T) (int, string) {
			c := browser(t)
			state := r.start(c)
			if status, _ := r.redirect(c, fake.Authorize(in, ""), state); status != http.StatusOK {
				t.Fatalf("first use: %d", status)
			}
			r.start(c) // a fresh cookie: the state is the replayed part
			return r.redirect(c, fake.Authorize(in, ""), state)
		}, http.StatusBadRequest, "already used"},
		{"no state", func(t *testing.T) (int, string) {
			c := browser(t)
			r.start(c)
			return r.redirect(c, fake.Authorize(in, ""), "")
		}, http.StatusBadRequest, "has no state"},
		{"no cookie: another browser", func(t *testing.T) (int, string) {
			state := r.start(browser(t))
			return r.redirect(browser(t), fake.Authorize(in, ""), state)
		}, http.StatusBadRequest, "Start again in this browser"},
		{"the cookie of another installation", func(t *testing.T) (int, string) {
			state := r.start(browser(t))
			c := browser(t)
			r.start(c)
			return r.redirect(c, fake.Authorize(in, ""), state)
		}, http.StatusBadRequest, "started in another browser"},
		{"expired state", func(t *testing.T) (int, string) {
			c := browser(t)
			r.clock.set(-stateTTL - time.Minute)
			state := r.start(c)
			r.clock.set(0)
			return r.redirect(c, fake.Authorize(in, ""), state)
		}, http.StatusBadRequest, "expired"},
		{"a code Slack does not know", func(t *testing.T) (int, string) {
			c := browser(t)
			return r.redirect(c, "made-up-code", r.start(c))
		}, http.StatusBadRequest, "invalid_code"},
		{"the installer cancelled", func(t *testing.T) (int, string) {
			c := browser(t)
			state := r.start(c)
			status, _, body := get(t, c, r.url+"/slack/oauth_redirect?error=access_denied&state="+url.QueryEscape(state))
			return status, body
		}, http.StatusForbidden, "was cancelled"},
		{"an error of the link's own words", func(t *testing.T) (int, string) {
			c := browser(t)
			state := r.start(c)
			status, _, body := get(t, c, r.url+"/slack/oauth_redirect?error="+url.QueryEscape("your_account_is_locked call 555-0100")+"&state="+url.QueryEscape(state))
			if strings.Contains(body, "555-0100") || strings.Contains(body, "locked") {
				t.Errorf("the page repeats the query's words: %s", body)
			}
			return status, body
		}, http.StatusForbidden, "Slack did not authorize the installation."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := tt.try(t)
			if status != tt.status || !strings.Contains(body, tt.says) || !strings.Contains(body, `href="install"`) {
				t.Errorf("got %d %q, want %d saying %q with a link to start again", status, body, tt.status, tt.says)
			}
		})
	}
	if inst, err := r.store.Installation(r.ctx, "", "T1"); err != nil || inst.BotToken != fake.Token("T1") {
		t.Errorf("the one accepted install (reused state's first use): %+v %v", inst, err)
	}
	if strings.Contains(r.logs.String(), "level=ERROR") {
		t.Errorf("a client's mistake was logged as an error:\n%s", r.logs.String())
	}
}

func TestInstallationsSurviveARestart(t *testing.T) {
	t.Parallel()
	fake := fakeslack.New(fakeslack.Options{})
	t.Cleanup(fake.Close)
	loc := storetest.SQLite(t)
	first := distribute(t, fake, loc)
	id := first.install(fakeslack.Install{TeamID: "T1", UserID: "U1"})
	first.srv.Close()
	first.close()
	if err := first.store.Close(); err != nil {
		t.Fatal(err)
	}

	second := distribute(t, fake, loc)
	m, ev := second.mention(id, "print(2)")
	if status := second.event(ev); status != http.StatusOK {
		t.Fatalf("event: %d", status)
	}
	if got := second.replyIn(m, "ran print(2)"); got != fake.Token("T1") {
		t.Error("after the restart the reply went with another token")
	}
}

func TestReplicasOnOnePostgresAnswerARedeliveredEventOnce(t *testing.T) {
	t.Parallel()
	fake := fakeslack.New(fakeslack.Options{})
	t.Cleanup(fake.Close)
	db := storetest.Postgres(t).NewDB(t)
	a, b := distribute(t, fake, db), distribute(t, fake, db)
	id := a.install(fakeslack.Install{TeamID: "T1", UserID: "U1"})
	const events = 5
	var msgs []fakeslack.Message
	for range events {
		m, ev := a.mention(id, "print(3)")
		msgs = append(msgs, m)
		var wg sync.WaitGroup
		for i, r := range []*replica{a, b} {
			wg.Go(func() {
				var retry []string
				if i == 1 {
					retry = []string{"X-Slack-Retry-Num", "1", "X-Slack-Retry-Reason", "http_timeout"}
				}
				if status := r.event(ev, retry...); status != http.StatusOK {
					t.Errorf("replica %d answered %d", i, status)
				}
			})
		}
		wg.Wait()
	}
	for _, m := range msgs {
		a.replyIn(m, "ran print(3)")
	}
	a.close()
	b.close()
	for _, m := range msgs {
		if n := len(fake.BotReplies(m.Channel, m.TS)); n != 1 {
			t.Errorf("%d replies to %s, want 1", n, m.TS)
		}
	}
}

func TestUninstallDeletesTheInstallation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		event func(fake *fakeslack.Server, owner string) map[string]any
	}{
		{"app_uninstalled", func(fake *fakeslack.Server, owner string) map[string]any { return fake.Uninstall(owner) }},
		{"tokens_revoked", func(*fakeslack.Server, string) map[string]any { return fakeslack.TokensRevoked(fakeslack.BotUserID) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := fakeslack.New(fakeslack.Options{})
			t.Cleanup(fake.Close)
			r := distribute(t, fake, storetest.SQLite(t))
			id := r.install(fakeslack.Install{TeamID: "T1", UserID: "U1"})
			keep := r.install(fakeslack.Install{TeamID: "T2", UserID: "U2"})
			p, _ := fake.EventCallbackIn(id, tc.event(fake, "T1"))
			if status := r.event(p); status != http.StatusOK {
				t.Fatalf("%s: %d", tc.name, status)
			}
			if _, err := r.store.Installation(r.ctx, "", "T1"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("after %s: %v", tc.name, err)
			}
			if _, err := r.store.Installation(r.ctx, "", keep.TeamID); err != nil {
				t.Fatalf("another workspace's installation went too: %v", err)
			}
			m, ev := r.mention(id, "print(4)")
			if status := r.event(ev); status != http.StatusOK {
				t.Fatalf("event after %s: %d", tc.name, status)
			}
			r.close()
			if n := len(fake.BotReplies(m.Channel, m.TS)); n != 0 {
				t.Errorf("answered a workspace that uninstalled: %d replies", n)
			}
		})
	}
}

func TestTokenRevokedMidRunDropsTheReply(t *testing.T) {
	t.Parallel()
	fake := fakeslack.New(fakeslack.Options{})
	t.Cleanup(fake.Close)
	gated, started, release := fakerunner.Gated() // the run waits until the token is revoked
	r := distribute(t, fake, storetest.SQLite(t), gated)
	id := r.install(fakeslack.Install{TeamID: "T1", UserID: "U1"})
	m, ev := r.mention(id, "print(5)")
	if status := r.event(ev); status != http.StatusOK {
		t.Fatalf("event: %d", status)
	}
	select {
	case <-started:
	case <-r.ctx.Done():
		t.Fatal("the run did not start")
	}
	fake.Revoke(fake.Token("T1"))
	close(release)
	r.close()
	if n := len(fake.BotReplies(m.Channel, m.TS)); n != 0 {
		t.Fatalf("%d replies with a revoked token", n)
	}
	logs := r.logs.String()
	if n := strings.Count(logs, "reply dropped"); n != 1 || strings.Contains(logs, "level=ERROR") || strings.Contains(logs, "level=WARN msg=react") {
		t.Errorf("want one line for the dropped reply and no error, got:\n%s", logs)
	}
	inst, err := r.store.Installation(r.ctx, "", "T1")
	if err != nil || inst.Problem != "token_revoked" {
		t.Errorf("the installation is not marked: %+v %v", inst, err)
	}
}

func TestRotatingTokenIsRefreshed(t *testing.T) {
	t.Parallel()
	fake := fakeslack.New(fakeslack.Options{})
	t.Cleanup(fake.Close)
	r := distribute(t, fake, storetest.SQLite(t))
	id := r.install(fakeslack.Install{TeamID: "T1", UserID: "U1", Rotate: true})
	old := fake.Token("T1")
	if !strings.HasPrefix(old, "xoxe.xoxb-") {
		t.Fatalf("not a rotating token: %q", old)
	}
	r.clock.advance(fakeslack.TokenLifetime - refreshMargin/2)
	m, ev := r.mention(id, "print(6)")
	if status := r.event(ev); status != http.StatusOK {
		t.Fatalf("event: %d", status)
	}
	got := r.replyIn(m, "ran print(6)")
	if got == old || got != fake.Token("T1") {
		t.Error("the reply went with the expiring token, not a refreshed one")
	}
	if _, err := fake.WaitCall(r.ctx, "oauth.v2.access", fakeslack.Param("grant_type", "refresh_token")); err != nil {
		t.Fatal(err)
	}
	inst, _ := r.store.Installation(r.ctx, "", "T1")
	if inst.BotToken != got || !inst.ExpiresAt.After(r.clock.now().Add(time.Hour)) {
		t.Errorf("the refreshed token was not stored: expires %v", inst.ExpiresAt)
	}
}

func TestAppHomeAndRunHelp(t *testing.T) {
	t.Parallel()
	fake := fakeslack.New(fakeslack.Options{})
	t.Cleanup(fake.Close)
	r := distribute(t, fake, storetest.SQLite(t))
	id := r.install(fakeslack.Install{TeamID: "T1", UserID: "UADMIN"})
	fake.SetAdmin("UADMIN")
	for _, user := range []string{"UADMIN", "UMEMBER"} {
		p, _ := fake.EventCallbackIn(id, map[string]any{"type": "app_home_opened", "user": user, "channel": "D1", "tab": "home", "event_ts": "1700000000.000100"})
		if status := r.event(p); status != http.StatusOK {
			t.Fatalf("app_home_opened: %d", status)
		}
	}
	for user, admin := range map[string]bool{"UADMIN": true, "UMEMBER": false} {
		c, err := fake.WaitCall(r.ctx, "views.publish", fakeslack.Param("user_id", user))
		if err != nil {
			t.Fatal(err)
		}
		view := c.Get("view")
		if c.Token != fake.Token("T1") || !strings.Contains(view, `"type":"home"`) || !strings.Contains(view, "5 s per run") || !strings.Contains(view, "256 MiB of memory") {
			t.Errorf("%s's App Home: %s", user, view)
		}
		if got := strings.Contains(view, "Settings of this workspace"); got != admin {
			t.Errorf("%s (admin %v) sees the settings: %v", user, admin, got)
		}
	}

	respURL := fake.ResponseURL()
	form := url.Values{"command": {"/run"}, "text": {" help "}, "team_id": {"T1"}, "user_id": {"UMEMBER"}, "channel_id": {"C1"},
		"response_url": {respURL}, "trigger_id": {"trig"}}
	if status, body := send(t, r.url+"/slack/events", "application/x-www-form-urlencoded", []byte(form.Encode()), secret, time.Now()); status != http.StatusOK {
		t.Fatalf("/run help: %d %s", status, body)
	}
	posted, err := fake.WaitPosted(r.ctx, respURL[strings.LastIndexByte(respURL, '/')+1:])
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := posted.Body["text"].(string); !strings.Contains(text, "/run print('hello')") || !strings.Contains(text, "5 s per run") || posted.Body["response_type"] != "ephemeral" {
		t.Errorf("/run help answered %v", posted.Body)
	}

	// A workspace without an installation is told so, not left in silence.
	form.Set("team_id", "T9NOTHERE")
	form.Set("text", "print(1)")
	if status, body := send(t, r.url+"/slack/events", "application/x-www-form-urlencoded", []byte(form.Encode()), secret, time.Now()); status != http.StatusOK || !strings.Contains(body, "not installed") {
		t.Errorf("/run from a workspace without an installation: %d %s", status, body)
	}
}

func TestStoreDownMidFlight(t *testing.T) {
	t.Parallel()
	fake := fakeslack.New(fakeslack.Options{})
	t.Cleanup(fake.Close)
	gated, started, release := fakerunner.Gated()
	r := distribute(t, fake, storetest.SQLite(t), gated)
	id := r.install(fakeslack.Install{TeamID: "T1", UserID: "U1"})
	m, ev := r.mention(id, "print(7)")
	if status := r.event(ev); status != http.StatusOK {
		t.Fatalf("event: %d", status)
	}
	select {
	case <-started:
	case <-r.ctx.Done():
		t.Fatal("the run did not start")
	}
	if err := r.store.Close(); err != nil { // the store goes away with a run in flight
		t.Fatal(err)
	}
	_, next := r.mention(id, "print(8)")
	if status := r.event(next); status != http.StatusServiceUnavailable {
		t.Errorf("a new event with the store down: %d, want 503 for Slack to deliver it again", status)
	}
	// An install starts without the store (its state is signed, not
	// stored), and says to try again when it cannot be kept.
	c := browser(t)
	state := r.start(c)
	if status, body := r.redirect(c, fake.Authorize(fakeslack.Install{TeamID: "T2", UserID: "U2"}, ""), state); status != http.StatusServiceUnavailable || !strings.Contains(body, "Start again in a minute") {
		t.Errorf("a new install with the store down: %d %s", status, body)
	}
	close(release)
	r.replyIn(m, "ran: print(7)")
}
