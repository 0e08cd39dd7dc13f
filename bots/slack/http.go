package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
)

// maxRequestBytes bounds an Events API or interactivity request body.
const maxRequestBytes = 1 << 20

// Handler serves the Events API, interactivity and slash command requests
// (main mounts it under /slack/ when SigningSecret is set). Every request's
// signature is checked with the signing secret; bad or stale ones get 401.
// One URL takes all three kinds: they are told apart by their body, so the
// app's request URLs may all point at /slack/events. A distributed app
// also serves the install flow: GET /slack/install (or /slack/install/),
// /slack/install/start and /slack/oauth_redirect (install.go).
func (b *Bot) Handler() http.Handler {
	mux := http.NewServeMux()
	if b.distributed() {
		mux.HandleFunc("GET /slack/install", b.serveInstall)
		mux.HandleFunc("GET /slack/install/{$}", b.serveInstall)
		mux.HandleFunc("GET /slack/install/start", b.serveInstallStart)
		mux.HandleFunc("GET /slack/oauth_redirect", b.serveOAuthRedirect)
	}
	mux.HandleFunc("/slack/", b.serveHTTP)
	return mux
}

// serving reports whether requests can be answered: the workspace of
// SLACK_BOT_TOKEN is known (Open), or the distributed app is open.
func (b *Bot) serving() bool {
	if b.distributed() {
		return b.ready.Load()
	}
	return b.single.Load() != nil
}

// slashReply is the answer to a slash command request itself, which Slack
// shows to the user who typed it.
func slashReply(w http.ResponseWriter, text string) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"response_type": "ephemeral", "text": text})
}

// Texts of a distributed app's answers to a workspace it cannot serve.
const (
	notInstalledText = "runblock is not installed in this workspace any more: ask an admin to add it again."
	storeDownText    = "runblock cannot reach its store just now: try again in a minute."
)

// requestWorkspace is the workspace a request is answered in: the one of
// SLACK_BOT_TOKEN, or the installation of the team (or org) it came from.
// A nil workspace with a nil error: the team has no installation.
func (b *Bot) requestWorkspace(ctx context.Context, enterpriseID, teamID string) (*workspace, error) {
	if !b.distributed() {
		return b.single.Load(), nil
	}
	ws, err := b.installed(ctx, enterpriseID, teamID)
	if errors.Is(err, errNotInstalled) {
		b.log.Info("a request from a workspace without an installation", "enterprise", enterpriseID, "team", teamID, "err", err)
		return nil, nil
	}
	return ws, err
}

func (b *Bot) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if b.cfg.SigningSecret == "" {
		http.Error(w, "the Events API is not configured", http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
	if err != nil {
		http.Error(w, "request too large", http.StatusRequestEntityTooLarge)
		return
	}
	sv, err := slack.NewSecretsVerifier(r.Header, b.cfg.SigningSecret)
	if err == nil {
		_, _ = sv.Write(body)
		err = sv.Ensure()
	}
	if err != nil {
		b.log.Warn("rejected a request with a bad signature", "remote", r.RemoteAddr, "err", err)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	b.mu.Lock()
	closing := b.closing
	b.mu.Unlock()

	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		ev, err := slackevents.ParseEvent(body, slackevents.OptionNoVerifyToken())
		if ev.Type == slackevents.URLVerification {
			if v, ok := ev.Data.(*slackevents.EventsAPIURLVerificationEvent); ok {
				w.Header().Set("Content-Type", "text/plain")
				_, _ = io.WriteString(w, v.Challenge)
				return
			}
		}
		if err != nil {
			// An event type this adapter does not subscribe to: accept it,
			// so that Slack does not retry it.
			b.log.Debug("ignoring an event", "type", ev.Type, "err", err)
			w.WriteHeader(http.StatusOK)
			return
		}
		if closing || !b.serving() {
			http.Error(w, "not ready", http.StatusServiceUnavailable) // Slack retries later
			return
		}
		if b.distributed() {
			b.serveInstalledEvent(w, r, ev)
			return
		}
		b.onEventsAPI(b.single.Load(), ev, r.Header.Get("X-Slack-Retry-Num") != "")
		w.WriteHeader(http.StatusOK)
		return
	}

	form, err := url.ParseQuery(string(body))
	if err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	if closing || !b.serving() {
		http.Error(w, "not ready", http.StatusServiceUnavailable)
		return
	}
	switch {
	case form.Get("payload") != "":
		var cb slack.InteractionCallback
		if err := json.Unmarshal([]byte(form.Get("payload")), &cb); err != nil {
			http.Error(w, "bad payload", http.StatusBadRequest)
			return
		}
		ws, err := b.requestWorkspace(r.Context(), cb.Enterprise.ID, cb.Team.ID)
		switch {
		case err != nil:
			b.log.Error("finding the installation of an interaction", "team", cb.Team.ID, "err", err)
			http.Error(w, "the store is unavailable", http.StatusServiceUnavailable)
			return
		case ws == nil:
			w.WriteHeader(http.StatusOK)
			return
		}
		b.onInteraction(ws, cb)
	case form.Get("command") != "":
		r.Body = io.NopCloser(bytes.NewReader(body))
		cmd, err := slack.SlashCommandParse(r)
		if err != nil {
			http.Error(w, "bad command", http.StatusBadRequest)
			return
		}
		ws, err := b.requestWorkspace(r.Context(), cmd.EnterpriseID, cmd.TeamID)
		switch {
		case err != nil:
			b.log.Error("finding the installation of a command", "team", cmd.TeamID, "err", err)
			slashReply(w, storeDownText)
			return
		case ws == nil:
			slashReply(w, notInstalledText)
			return
		}
		b.onSlash(ws, cmd)
	default:
		http.Error(w, "unknown request", http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// serveInstalledEvent answers an event_callback of a distributed app in
// the workspace it came from, once across the replicas that share the
// store: an event whose installation or first sighting cannot be read
// gets 503, for Slack to deliver it again.
func (b *Bot) serveInstalledEvent(w http.ResponseWriter, r *http.Request, ev slackevents.EventsAPIEvent) {
	ctx := r.Context()
	cb, ok := ev.Data.(*slackevents.EventsAPICallbackEvent)
	if !ok {
		w.WriteHeader(http.StatusOK)
		return
	}
	switch ev.InnerEvent.Type {
	case string(slackevents.AppUninstalled), string(slackevents.TokensRevoked):
		if ie, ok := ev.InnerEvent.Data.(*slackevents.TokensRevokedEvent); ok && len(ie.Tokens.Bot) == 0 {
			break // user tokens only: runblock has none
		}
		if err := b.uninstalled(ctx, ev.EnterpriseID, ev.TeamID, ev.InnerEvent.Type); err != nil {
			b.log.Error("deleting an installation", "team", ev.TeamID, "err", err)
			http.Error(w, "the store is unavailable", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
		return
	}
	ws, err := b.requestWorkspace(ctx, ev.EnterpriseID, ev.TeamID)
	switch {
	case err != nil:
		b.log.Error("finding the installation of an event", "team", ev.TeamID, "err", err)
		http.Error(w, "the store is unavailable", http.StatusServiceUnavailable)
		return
	case ws == nil:
		w.WriteHeader(http.StatusOK)
		return
	}
	if cb.EventID != "" {
		first, err := b.cfg.Store.FirstSeen(ctx, cb.EventID, b.now().Add(seenTTL))
		switch {
		case err != nil:
			b.log.Error("recording an event", "event_id", cb.EventID, "err", err)
			http.Error(w, "the store is unavailable", http.StatusServiceUnavailable)
			return
		case !first:
			b.log.Debug("event answered by another replica or earlier", "event_id", cb.EventID)
			w.WriteHeader(http.StatusOK)
			return
		}
	}
	b.onEventsAPI(ws, ev, r.Header.Get("X-Slack-Retry-Num") != "")
	w.WriteHeader(http.StatusOK)
}
