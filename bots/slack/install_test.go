package slack

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/runblock/runblock/internal/fakeslack"
	"github.com/runblock/runblock/internal/store/storetest"
)

// TestInstallStartStoresNothing: anonymous starts of an installation
// grow no table: 300 of them are answered while the replica's store is
// closed, each with its own state, and a state one replica issued is
// good on another (the replicas share only the client secret).
func TestInstallStartStoresNothing(t *testing.T) {
	t.Parallel()
	fake := fakeslack.New(fakeslack.Options{})
	t.Cleanup(fake.Close)
	a := distribute(t, fake, storetest.SQLite(t))
	b := distribute(t, fake, storetest.SQLite(t))
	if err := a.store.Close(); err != nil {
		t.Fatal(err)
	}
	states := map[string]bool{}
	var c *http.Client
	var state string
	for range 300 {
		c = browser(t)
		state = a.start(c)
		states[state] = true
	}
	if len(states) != 300 {
		t.Fatalf("%d distinct states of 300", len(states))
	}
	// The last browser finishes on the other replica (cookies are per
	// host, not port: the browser sends a's cookie to b).
	code := fake.Authorize(fakeslack.Install{TeamID: "T1", UserID: "U1"}, strings.Join(BotScopes, ","))
	if status, body := b.redirect(c, code, state); status != http.StatusOK || !strings.Contains(body, "runblock is installed") {
		t.Fatalf("a's state on b: %d %s", status, body)
	}
}

// buttonHref is the link of a page's button, resolved against the page's
// URL as a browser does.
func buttonHref(t *testing.T, pageURL, body string) string {
	t.Helper()
	m := regexp.MustCompile(`<a class="(?:add|button)" href="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no button on %s:\n%s", pageURL, body)
	}
	base, err := url.Parse(pageURL)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := url.Parse(html.UnescapeString(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	return base.ResolveReference(ref).String()
}

// TestInstallBehindAPathPrefix: behind a reverse proxy that strips
// /prefix, with SLACK_PUBLIC_URL saying so, a browser that follows the
// pages' own links (from /slack/install and /slack/install/) installs the
// app: the cookie's path is /prefix/slack/, and every link stays under
// the prefix.
func TestInstallBehindAPathPrefix(t *testing.T) {
	t.Parallel()
	fake := fakeslack.New(fakeslack.Options{})
	t.Cleanup(fake.Close)
	r := distributeWith(t, fake, storetest.SQLite(t), replicaOptions{runner: echo, publicURL: "https://example.com/prefix", prefix: "/prefix"})
	for i, page := range []string{"/slack/install", "/slack/install/"} {
		c := browser(t)
		status, _, body := get(t, c, r.url+page)
		if status != http.StatusOK {
			t.Fatalf("%s: %d", page, status)
		}
		start := buttonHref(t, r.url+page, body)
		if start != r.url+"/slack/install/start" {
			t.Fatalf("%s links to %s", page, start)
		}
		resp, err := c.Get(start)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		var path string
		for _, ck := range resp.Cookies() {
			if ck.Name == cookieName {
				path = ck.Path
			}
		}
		if path != "/prefix/slack/" {
			t.Fatalf("the install cookie's path is %q, want /prefix/slack/", path)
		}
		loc, err := url.Parse(resp.Header.Get("Location"))
		if resp.StatusCode != http.StatusFound || err != nil {
			t.Fatalf("start: %d %v", resp.StatusCode, err)
		}
		team := []string{"T1", "T2"}[i]
		code := fake.Authorize(fakeslack.Install{TeamID: team, UserID: "U1"}, strings.Join(BotScopes, ","))
		status, body = r.redirect(c, code, loc.Query().Get("state"))
		if status != http.StatusOK || !strings.Contains(body, "runblock is installed") {
			t.Fatalf("from %s: %d %s", page, status, body)
		}
	}
	// A refusal's "Start again" leads back under the prefix too.
	c := browser(t)
	status, body := r.redirect(c, "code", "")
	if again := buttonHref(t, r.url+"/slack/oauth_redirect", body); status != http.StatusBadRequest || again != r.url+"/slack/install" {
		t.Errorf("a refusal: %d, start again at %s", status, again)
	}
}

// TestInstallPagesSayWhatAndLeadOn: the install page says what each
// permission is for and draws Slack's own button from inline SVG (no
// asset from elsewhere); the installed page opens the workspace in Slack
// and says to invite the bot.
func TestInstallPagesSayWhatAndLeadOn(t *testing.T) {
	t.Parallel()
	fake := fakeslack.New(fakeslack.Options{})
	t.Cleanup(fake.Close)
	r := distribute(t, fake, storetest.SQLite(t))
	c := browser(t)
	status, _, body := get(t, c, r.url+"/slack/install")
	if status != http.StatusOK {
		t.Fatalf("%d", status)
	}
	for _, sc := range BotScopes {
		if scopeUses[sc] == "" {
			t.Errorf("the manifest's scope %s has no use on the install page", sc)
			continue
		}
		if !strings.Contains(body, "<dt>"+sc+"</dt><dd>"+html.EscapeString(scopeUses[sc])+"</dd>") {
			t.Errorf("the page does not say what %s is for", sc)
		}
	}
	for _, says := range []string{"replayed", "files in", "admin", `<a class="add" href="install/start"><svg`, "Add to Slack</a>"} {
		if !strings.Contains(body, says) {
			t.Errorf("the install page does not say %q:\n%s", says, body)
		}
	}
	if regexp.MustCompile(`(?i)src=|<link|url\(|@import`).MatchString(body) {
		t.Errorf("the install page loads something from elsewhere:\n%s", body)
	}
	state := r.start(c)
	code := fake.Authorize(fakeslack.Install{TeamID: "T1", UserID: "U1"}, strings.Join(BotScopes, ","))
	status, body = r.redirect(c, code, state)
	if status != http.StatusOK {
		t.Fatalf("redirect: %d %s", status, body)
	}
	for _, says := range []string{`href="slack://open?team=T1"`, `href="https://app.slack.com/client/T1"`, "/invite @runblock", "/run print"} {
		if !strings.Contains(body, says) {
			t.Errorf("the installed page does not say %q:\n%s", says, body)
		}
	}
}
