package slack

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
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
//
// The state is signed, not stored (as Slack's Bolt does by default): it
// carries its expiry and two HMACs under a key derived from the client
// secret, one that proves this app issued it and one that binds it to the
// browser's cookie. An anonymous /slack/install/start thus writes nothing
// anywhere, and replicas check each other's states with no shared table.
// The cookie goes at the first use; Slack's code is single-use itself.

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

// State errors.
var (
	errStateUnknown = errors.New("state not issued here")
	errStateExpired = errors.New("state expired")
	errStateBrowser = errors.New("state of another browser, or used")
)

// state layout: expiry (Unix ms), nonce, then the issuer's and the
// browser's tags.
const (
	stateNonce = 16
	stateTag   = 16
	stateBytes = 8 + stateNonce + 2*stateTag
)

// stateKey is the HMAC key of install states, from the client secret.
func (b *Bot) stateKey() []byte {
	m := hmac.New(sha256.New, []byte(b.cfg.ClientSecret))
	m.Write([]byte("runblock install state v1"))
	return m.Sum(nil)
}

// stateTagOf is the HMAC of what, under the state key, cut to stateTag.
func (b *Bot) stateTagOf(what ...[]byte) []byte {
	m := hmac.New(sha256.New, b.stateKey())
	for _, w := range what {
		m.Write(w)
	}
	return m.Sum(nil)[:stateTag]
}

// newState is a state good until expires for the browser whose cookie
// has the key browser.
func (b *Bot) newState(browser string, expires time.Time) string {
	buf := make([]byte, 8+stateNonce, stateBytes)
	binary.BigEndian.PutUint64(buf, uint64(expires.UnixMilli()))
	_, _ = rand.Read(buf[8:]) // crypto/rand never fails on Linux
	body := buf[: 8+stateNonce : 8+stateNonce]
	buf = append(buf, b.stateTagOf([]byte("issued"), body)...)
	buf = append(buf, b.stateTagOf([]byte("browser"), body, []byte(browser))...)
	return base64.RawURLEncoding.EncodeToString(buf)
}

// checkState checks a state that came back with the browser of key
// browser.
func (b *Bot) checkState(state, browser string) error {
	buf, err := base64.RawURLEncoding.DecodeString(state)
	if err != nil || len(buf) != stateBytes {
		return errStateUnknown
	}
	body, issued, bound := buf[:8+stateNonce], buf[8+stateNonce:8+stateNonce+stateTag], buf[8+stateNonce+stateTag:]
	switch {
	case !hmac.Equal(issued, b.stateTagOf([]byte("issued"), body)):
		return errStateUnknown
	case b.now().UnixMilli() >= int64(binary.BigEndian.Uint64(body)):
		return errStateExpired
	case !hmac.Equal(bound, b.stateTagOf([]byte("browser"), body, []byte(browser))):
		return errStateBrowser
	}
	return nil
}

// secure reports whether r came over HTTPS (directly or through a proxy
// that says so), so that the cookie is Secure.
func secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// cookiePath is where the browser sends the install cookie back: /slack/
// under the public URL's path, which a reverse proxy strips before runblock
// sees it (so that r.URL.Path cannot tell). Every link of the flow is
// relative, and follows the prefix by itself.
func (b *Bot) cookiePath() string {
	prefix := ""
	if u, err := url.Parse(b.cfg.PublicURL); err == nil {
		prefix = strings.TrimSuffix(u.EscapedPath(), "/")
	}
	return prefix + "/slack/"
}

// scopeUses says what each bot scope is for, on the install page.
var scopeUses = map[string]string{
	"app_mentions:read": "see the messages that mention @runblock, which it runs",
	"channels:history":  "read the earlier messages of a thread in a public channel it is in: a thread is a notebook, and its earlier cells are replayed to rebuild its state; and the message a ▶️ reaction asks it to run",
	"groups:history":    "the same in the private channels it is invited to",
	"im:history":        "the same in direct messages with it",
	"chat:write":        "post its replies, and update or delete them when the code is edited or deleted",
	"commands":          "the /run command and the Run code shortcut",
	"files:read":        "read the files attached to a message it runs (files in), such as the CSV a snippet reads",
	"files:write":       "upload what a run makes: plots, the files it writes, the full output of a long run",
	"reactions:read":    "see the ▶️ reaction that runs a message",
	"reactions:write":   "mark a message ⏳ while it waits, ✅ or ❌ when it has run",
	"users:read":        "check that whoever clicks Delete on someone else's reply, or changes the workspace's settings, is a workspace admin",
}

// scopeUse is a scope and what it is for.
type scopeUse struct{ Scope, Use string }

func (b *Bot) serveInstall(w http.ResponseWriter, r *http.Request) {
	link := "install/start"
	if strings.HasSuffix(r.URL.Path, "/") {
		link = "start"
	}
	uses := make([]scopeUse, len(BotScopes))
	for i, sc := range BotScopes {
		uses[i] = scopeUse{sc, scopeUses[sc]}
	}
	page(w, http.StatusOK, pageData{
		Title:  "Add runblock to Slack",
		Text:   "runblock runs the Python code blocks of your messages in a sandbox and answers in the thread. It reads only the messages it is asked to run and the threads they are in. Adding it asks for these permissions:",
		Scopes: uses,
		Link:   template.URL(link), LinkText: "Add to Slack", AddToSlack: true,
	})
}

func (b *Bot) serveInstallStart(w http.ResponseWriter, r *http.Request) {
	cookie := randomToken()
	state := b.newState(browserKey(cookie), b.now().Add(stateTTL))
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: cookie, Path: b.cookiePath(), MaxAge: int(stateTTL / time.Second),
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
		fail(refusal{http.StatusForbidden, "slack: " + quoteLog(e), authorizeErrorText(e)})
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
		fail(refusal{http.StatusBadRequest, "no cookie", "Your browser did not send the cookie set when the installation started: it was started in another browser, or cookies are blocked for this site (or, behind a proxy that strips a path prefix, SLACK_PUBLIC_URL is not set to the public URL). Start again in this browser."})
		return
	}
	// Only now is the browser shown to be the one that started: the
	// cookie goes, and the state is used up whatever the answer.
	http.SetCookie(w, &http.Cookie{Name: cookieName, Path: b.cookiePath(), MaxAge: -1, HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteLaxMode})
	switch err := b.checkState(state, browserKey(cookie.Value)); {
	case errors.Is(err, errStateUnknown):
		fail(refusal{http.StatusBadRequest, "unknown state", "This installation link was not issued by this runblock."})
		return
	case errors.Is(err, errStateExpired):
		fail(refusal{http.StatusBadRequest, "expired state", "This installation link expired: it is good for 10 minutes."})
		return
	case errors.Is(err, errStateBrowser):
		fail(refusal{http.StatusBadRequest, "state of another browser, or used", "This installation was started in another browser, or its link was already used. Start again in this browser."})
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
	page(w, http.StatusOK, installedPage(inst))
}

// installedPage leads on from an installation: open Slack, invite the bot
// to a channel, run something.
func installedPage(inst store.Installation) pageData {
	team := inst.TeamID
	if team == "" {
		team = inst.EnterpriseID
	}
	return pageData{
		Title: "runblock is installed",
		Text:  "Next:",
		Steps: []string{
			"Open Slack (the button below opens this workspace).",
			"Invite runblock to a channel: type /invite @runblock in it. Direct messages with it need no invitation.",
			"Mention @runblock with a ```python code block, or type /run print('hello'). /run help says more.",
		},
		Link:     template.URL("slack://open?team=" + url.QueryEscape(team)),
		LinkText: "Open Slack",
		WebLink:  "https://app.slack.com/client/" + url.PathEscape(team),
	}
}

// authorizeErrorText is what the page says of an error Slack's authorize
// page sent back: a fixed text per known code, a generic one otherwise.
// The query's own text is never shown, so that a link cannot put words on
// this site.
func authorizeErrorText(code string) string {
	switch code {
	case "access_denied":
		return "The installation was cancelled on Slack's page, or your account may not install apps in this workspace (ask an admin). Nothing was installed."
	case "invalid_scope", "invalid_scopes":
		return "Slack refused the permissions runblock asks for: the app's settings at api.slack.com do not match its manifest. Ask the operator to update the app from `runblock manifest slack --url`. Nothing was installed."
	case "invalid_team_for_non_distributed_app":
		return "This app is not distributed: only its own workspace may install it. Ask the operator to turn on public distribution at api.slack.com. Nothing was installed."
	}
	return "Slack did not authorize the installation. Nothing was installed."
}

// quoteLog is a client's value for the log: quoted, cut short.
func quoteLog(s string) string {
	if len(s) > 64 {
		s = s[:64]
	}
	return strconv.Quote(s)
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
	Title, Text string
	Scopes      []scopeUse // what each permission is for
	Steps       []string   // what to do next
	// Link is a button ("" for none): AddToSlack draws it as Slack's own
	// "Add to Slack" button. WebLink is a second way to the same place.
	Link       template.URL
	LinkText   string
	AddToSlack bool
	WebLink    string
}

// slackLogo is Slack's mark, as Slack's own "Add to Slack" button draws it.
const slackLogo = `<svg xmlns="http://www.w3.org/2000/svg" style="height:20px;width:20px;margin-right:12px" viewBox="0 0 122.8 122.8" aria-hidden="true">` +
	`<path d="M25.8 77.6c0 7.1-5.8 12.9-12.9 12.9S0 84.7 0 77.6s5.8-12.9 12.9-12.9h12.9v12.9zm6.5 0c0-7.1 5.8-12.9 12.9-12.9s12.9 5.8 12.9 12.9v32.3c0 7.1-5.8 12.9-12.9 12.9s-12.9-5.8-12.9-12.9V77.6z" fill="#e01e5a"/>` +
	`<path d="M45.2 25.8c-7.1 0-12.9-5.8-12.9-12.9S38.1 0 45.2 0s12.9 5.8 12.9 12.9v12.9H45.2zm0 6.5c7.1 0 12.9 5.8 12.9 12.9s-5.8 12.9-12.9 12.9H12.9C5.8 58.1 0 52.3 0 45.2s5.8-12.9 12.9-12.9h32.3z" fill="#36c5f0"/>` +
	`<path d="M97 45.2c0-7.1 5.8-12.9 12.9-12.9s12.9 5.8 12.9 12.9-5.8 12.9-12.9 12.9H97V45.2zm-6.5 0c0 7.1-5.8 12.9-12.9 12.9s-12.9-5.8-12.9-12.9V12.9C64.7 5.8 70.5 0 77.6 0s12.9 5.8 12.9 12.9v32.3z" fill="#2eb67d"/>` +
	`<path d="M77.6 97c7.1 0 12.9 5.8 12.9 12.9s-5.8 12.9-12.9 12.9-12.9-5.8-12.9-12.9V97h12.9zm0-6.5c-7.1 0-12.9-5.8-12.9-12.9s5.8-12.9 12.9-12.9h32.3c7.1 0 12.9 5.8 12.9 12.9s-5.8 12.9-12.9 12.9H77.6z" fill="#ecb22e"/></svg>`

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{"logo": func() template.HTML { return slackLogo }}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><title>{{.Title}}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:36em;margin:4em auto;padding:0 1em;color:#1d1c1d}
a.button{display:inline-block;padding:.6em 1.2em;border-radius:6px;background:#4a154b;color:#fff;text-decoration:none;font-weight:600}
a.add{align-items:center;color:#000;background-color:#fff;border:1px solid #ddd;border-radius:4px;display:inline-flex;font-family:Lato,system-ui,sans-serif;font-size:16px;font-weight:600;height:48px;justify-content:center;text-decoration:none;width:236px}
dt{font-family:ui-monospace,monospace;font-size:.9em}dd{margin:0 0 .5em 1.5em}</style>
</head><body><h1>{{.Title}}</h1><p>{{.Text}}</p>
{{with .Scopes}}<dl>{{range .}}<dt>{{.Scope}}</dt><dd>{{.Use}}</dd>{{end}}</dl>{{end}}
{{with .Steps}}<ol>{{range .}}<li>{{.}}</li>{{end}}</ol>{{end}}
{{if .AddToSlack}}<p><a class="add" href="{{.Link}}">{{logo}}{{.LinkText}}</a></p>
{{else if .Link}}<p><a class="button" href="{{.Link}}">{{.LinkText}}</a>{{with .WebLink}} or <a href="{{.}}">open it in the browser</a>{{end}}</p>{{end}}
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
