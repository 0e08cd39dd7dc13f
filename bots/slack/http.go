package slack

import (
	"bytes"
	"encoding/json"
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
// app's request URLs may all point at /slack/events.
func (b *Bot) Handler() http.Handler { return http.HandlerFunc(b.serveHTTP) }

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
		if closing || b.self.Load() == nil {
			http.Error(w, "not ready", http.StatusServiceUnavailable) // Slack retries later
			return
		}
		b.onEventsAPI(ev, r.Header.Get("X-Slack-Retry-Num") != "")
		w.WriteHeader(http.StatusOK)
		return
	}

	form, err := url.ParseQuery(string(body))
	if err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	if closing || b.self.Load() == nil {
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
		b.onInteraction(cb)
	case form.Get("command") != "":
		r.Body = io.NopCloser(bytes.NewReader(body))
		cmd, err := slack.SlashCommandParse(r)
		if err != nil {
			http.Error(w, "bad command", http.StatusBadRequest)
			return
		}
		b.onSlash(cmd)
	default:
		http.Error(w, "unknown request", http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusOK)
}
