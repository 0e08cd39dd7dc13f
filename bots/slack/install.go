package slack

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/runblock/runblock/internal/store"
)

// The install flow of a distributed app (OAuth v2): GET /slack/install
// shows an "Add to Slack" page whose button is GET /slack/install/start
// (the app's direct install URL), which binds a fresh single-use state to
// the browser with a cookie and redirects to Slack's authorize page; Slack
// sends the browser back to /slack/oauth_redirect with a code and the
// state, the code is exchanged with oauth.v2.access and the installation
// stored. Every refusal is a 4xx page saying what to do.

// Bounds of the install flow.
const (
	stateTTL   = 10 * time.Minute
	cookieName = "runblock_install"
)

// BotScopes are the bot scopes of the distributed app's manifest
// (oauth_config.scopes.bot), which the install flow asks for.
var BotScopes = distributionScopes()

// botScopes reads the list under oauth_config: scopes: bot: of a manifest.
func botScopes(manifest []byte) []string {
	var scopes []string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(manifest))
	for sc.Scan() {
		line := sc.Text()
		t := strings.TrimSpace(line)
		switch {
		case t == "bot:" && strings.HasPrefix(line, "    bot:"):
			in = true
		case !in || t == "" || strings.HasPrefix(t, "#"):
		case strings.HasPrefix(t, "- "):
			scopes = append(scopes, strings.TrimPrefix(t, "- "))
		default:
			in = false
		}
	}
	return scopes
}

// authorizeURL is Slack's authorize page for the app, on the host of the
// Web API (slack.com, or GovSlack's).
func (b *Bot) authorizeURL(state string) string {
	base := strings.TrimSuffix(b.apiURL(), "api/")
	q := url.Values{"client_id": {b.cfg.ClientID}, "scope": {strings.Join(BotScopes, ",")}, "state": {state}}
	return base + "oauth/v2/authorize?" + q.Encode()
}

// randomToken is 32 random bytes, URL-safe.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand never fails on Linux
	return base64.RawURLEncoding.EncodeToString(b)
}

// browserKey is what the store keeps of a browser's cookie: its hash, so
// that the store's content does not make the cookie.
func browserKey(cookie string) string {
	sum := sha256.Sum256([]byte(cookie))
	return hex.EncodeToString(sum[:])
}

// secure reports whether r came over HTTPS (directly or through a proxy
// that says so), so that the cookie is Secure.
func secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

func (b *Bot) serveInstall(w http.ResponseWriter, r *http.Request) {
	page(w, http.StatusOK, pageData{
		Title: "Add runblock to Slack",
		Text:  "runblock runs the Python code blocks of your messages in a sandbox and answers in the thread. Adding it asks for the permissions to read the messages that mention it, to reply, to react and to share the files a run makes.",
		Link:  "install/start", LinkText: "Add to Slack",
	})
}

func (b *Bot) serveInstallStart(w http.ResponseWriter, r *http.Request) {
	state, cookie := randomToken(), randomToken()
	if err := b.cfg.Store.PutState(r.Context(), state, browserKey(cookie), b.now().Add(stateTTL)); err != nil {
		b.log.Error("install: storing a state", "err", err)
		page(w, http.StatusServiceUnavailable, pageData{Title: "Try again", Text: "runblock cannot reach its store just now, so it cannot start an installation. Try again in a minute.", Link: "../install", LinkText: "Start again"})
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: cookie, Path: "/slack/", MaxAge: int(stateTTL / time.Second),
		HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteLaxMode, // Lax: sent on Slack's redirect back
	})
	http.Redirect(w, r, b.authorizeURL(state), http.StatusFound)
}

// refusal is a 4xx answer of the redirect, for the log and the page.
type refusal struct {
	status int
	reason string // for the log
	text   string // for the person
}

func (b *Bot) serveOAuthRedirect(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	startAgain := pageData{Link: "install", LinkText: "Start again"}
	fail := func(f refusal) {
		b.log.Info("install refused", "reason", f.reason, "remote", r.RemoteAddr)
		d := startAgain
		d.Title, d.Text = "runblock was not installed", f.text
		page(w, f.status, d)
	}
	cookie, _ := r.Cookie(cookieName)
	if e := q.Get("error"); e != "" {
		if s := q.Get("state"); s != "" && cookie != nil {
			_ = b.cfg.Store.TakeState(r.Context(), s, browserKey(cookie.Value)) // used up
		}
		fail(refusal{http.StatusForbidden, "slack: " + e, "Slack did not authorize the installation (" + e + "): it was cancelled, or your account may not install apps in this workspace (ask an admin). Nothing was installed."})
		return
	}
	state, code := q.Get("state"), q.Get("code")
	switch {
	case state == "":
		fail(refusal{http.StatusBadRequest, "no state", "This link has no state, so it did not come from an installation started here."})
		return
	case code == "":
		fail(refusal{http.StatusBadRequest, "no code", "Slack sent no authorization code."})
		return
	case cookie == nil:
		fail(refusal{http.StatusBadRequest, "no cookie", "Your browser did not send the cookie set when the installation started: it was started in another browser, or cookies are blocked for this site. Start again in this browser."})
		return
	}
	// Only now is the browser shown to be the one that started: the
	// cookie goes, and the state is used up whatever the answer.
	http.SetCookie(w, &http.Cookie{Name: cookieName, Path: "/slack/", MaxAge: -1, HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteLaxMode})
	switch err := b.cfg.Store.TakeState(r.Context(), state, browserKey(cookie.Value)); {
	case errors.Is(err, store.ErrStateUnknown):
		fail(refusal{http.StatusBadRequest, "unknown state", "This installation link was already used, or was not issued by this runblock."})
		return
	case errors.Is(err, store.ErrStateExpired):
		fail(refusal{http.StatusBadRequest, "expired state", "This installation link expired: it is good for 10 minutes."})
		return
	case errors.Is(err, store.ErrStateBrowser):
		fail(refusal{http.StatusBadRequest, "state of another browser", "This installation was started in another browser. Start again in this one."})
		return
	case err != nil:
		b.log.Error("install: taking a state", "err", err)
		page(w, http.StatusServiceUnavailable, pageData{Title: "Try again", Text: "runblock cannot reach its store just now. Start the installation again in a minute.", Link: "install", LinkText: "Start again"})
		return
	}
	inst, err := b.exchange(r.Context(), code)
	var se slack.SlackErrorResponse
	switch {
	case errors.As(err, &se):
		fail(refusal{http.StatusBadRequest, "oauth.v2.access: " + se.Err, "Slack did not accept the authorization (" + se.Err + "): it may have been used already or have expired."})
		return
	case err != nil:
		b.log.Error("install: exchanging the code", "err", err)
		page(w, http.StatusBadGateway, pageData{Title: "Try again", Text: "runblock could not reach Slack to finish the installation. Start again in a minute.", Link: "install", LinkText: "Start again"})
		return
	}
	if err := b.cfg.Store.SaveInstallation(r.Context(), inst); err != nil {
		b.log.Error("install: storing the installation", "installation", inst.Key(), "err", err)
		page(w, http.StatusServiceUnavailable, pageData{Title: "Try again", Text: "runblock cannot reach its store just now, so the installation was not kept. Start again in a minute.", Link: "install", LinkText: "Start again"})
		return
	}
	b.log.Info("installed", "installation", inst.Key(), "installer", inst.InstallerUserID, "rotating", inst.RefreshToken != "")
	page(w, http.StatusOK, pageData{
		Title: "runblock is installed",
		Text:  "Mention @runblock with a ```python code block, send it one in a direct message, or type /run print('hello'). /run help says more.",
	})
}

// exchange trades an authorization code for the installation
// (oauth.v2.access), and learns the bot's own id with the new token
// (auth.test), which oauth.v2.access does not say.
func (b *Bot) exchange(ctx context.Context, code string) (store.Installation, error) {
	resp, err := slack.GetOAuthV2ResponseContext(ctx, b.oauth, b.cfg.ClientID, b.cfg.ClientSecret, code, "", slack.OAuthOptionAPIURL(b.apiURL()))
	if err != nil {
		return store.Installation{}, err
	}
	if resp.TokenType != "bot" || resp.AccessToken == "" {
		return store.Installation{}, slack.SlackErrorResponse{Err: "no_bot_token"}
	}
	inst := store.Installation{
		EnterpriseID: resp.Enterprise.ID, TeamID: resp.Team.ID, IsEnterpriseInstall: resp.IsEnterpriseInstall,
		BotToken: resp.AccessToken, BotUserID: resp.BotUserID, RefreshToken: resp.RefreshToken,
		InstallerUserID: resp.AuthedUser.ID, InstalledAt: b.now(),
	}
	if resp.Scope != "" {
		inst.Scopes = strings.Split(resp.Scope, ",")
	}
	if resp.ExpiresIn > 0 {
		inst.ExpiresAt = b.now().Add(time.Duration(resp.ExpiresIn) * time.Second)
	}
	auth, err := slack.New(inst.BotToken, b.opts...).AuthTestContext(ctx)
	if err != nil {
		return store.Installation{}, err
	}
	inst.BotID = auth.BotID
	if inst.BotUserID == "" {
		inst.BotUserID = auth.UserID
	}
	return inst, nil
}

// pageData is what a page of the install flow says.
type pageData struct {
	Title, Text    string
	Link, LinkText string // a button; "" for none
}

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><title>{{.Title}}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:36em;margin:4em auto;padding:0 1em;color:#1d1c1d}
a.button{display:inline-block;padding:.6em 1.2em;border-radius:6px;background:#4a154b;color:#fff;text-decoration:none;font-weight:600}</style>
</head><body><h1>{{.Title}}</h1><p>{{.Text}}</p>
{{if .Link}}<p><a class="button" href="{{.Link}}">{{.LinkText}}</a></p>{{end}}
</body></html>
`))

// page writes an install flow page with status.
func page(w http.ResponseWriter, status int, d pageData) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Frame-Options", "DENY")
	w.WriteHeader(status)
	_ = pageTemplate.Execute(w, d)
}
