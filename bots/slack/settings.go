package slack

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/runblock/runblock/bots/internal/choices"
	"github.com/runblock/runblock/formatting"
	"github.com/runblock/runblock/internal/store"
)

// A workspace's admins and owners choose some of runblock's settings for
// their workspace with /run settings: the channels it answers in, the run
// reaction, the edit window and sessions on or off, within the operator's
// bounds (SLACK_CHANNELS, when set, is the widest channel list;
// SLACK_EDIT_WINDOW the longest window; RUNBLOCK_SESSIONS off keeps them
// off). They are kept in the Store (in memory without one) and cached,
// so that an event does not wait on the database.

// wsConfig is what applies in one workspace: the operator's settings, with
// the workspace's choices.
type wsConfig struct {
	channels   map[string]bool // where any code block runs, and the allow-list; empty: everywhere by mention
	reaction   string
	editWindow time.Duration
	sessions   bool
}

// allowed reports whether explicit triggers work in channel.
func (wc wsConfig) allowed(channel string) bool {
	return len(wc.channels) == 0 || wc.channels[channel] || isDM(channel)
}

// with applies a workspace's settings, within the operator's bounds
// (checked again here: a store may hold what an older version allowed).
func (b *Bot) with(st store.Settings) wsConfig {
	wc := wsConfig{reaction: b.cfg.RunReaction, editWindow: b.cfg.EditWindow, sessions: !b.cfg.NoSessions}
	channels := b.cfg.Channels
	if len(st.Channels) > 0 && (len(channels) == 0 || choices.Subset(st.Channels, channels)) {
		channels = st.Channels
	}
	wc.channels = make(map[string]bool, len(channels))
	for _, c := range channels {
		wc.channels[c] = true
	}
	if st.RunReaction != "" {
		wc.reaction = st.RunReaction
	}
	if st.EditWindow != nil {
		wc.editWindow = max(0, min(*st.EditWindow, wc.editWindow))
	}
	if st.Sessions != nil {
		wc.sessions = *st.Sessions && !b.cfg.NoSessions
	}
	return wc
}

// config returns the configuration of team; the read of its settings is
// bounded (choices.ReadTimeout), and skipped for a while after a failure.
func (b *Bot) config(team string) wsConfig {
	if team == "" {
		return b.with(store.Settings{})
	}
	return b.with(b.settings.Get(context.Background(), team))
}

// session is src's session, "" when its workspace runs every message alone.
func (b *Bot) session(src source) string {
	if src.session() == "" || !b.config(src.team).sessions {
		return ""
	}
	return src.session()
}

// isSettings reports whether /run's text is the settings command.
func isSettings(text string) bool {
	f := strings.Fields(text)
	return len(f) > 0 && strings.EqualFold(f[0], "settings")
}

// Answers of /run settings.
const (
	settingsNotAdmin    = "Only the workspace's admins and owners can see or change runblock's settings."
	settingsStoreFailed = "The settings could not be read or saved just now; nothing changed. Try again in a moment."
	settingsUsage       = "Change one with `/run settings KEY VALUE`: `channels #a #b` (or `all`), `reaction :emoji:`, `edit_window 5m` (or `off`), `sessions on|off`, `user_rate 3/min`; `default` goes back to the operator's."
)

// settingsCommand answers /run settings [key value], to the user alone:
// the workspace's settings, after the change given.
func (b *Bot) settingsCommand(ctx context.Context, src source) {
	answer := func(text string) {
		if err := b.notify(ctx, src, text); err != nil {
			b.log.Warn("answering /run settings", "err", err)
		}
	}
	info, err := src.ws.api.GetUserInfoContext(ctx, src.user)
	switch {
	case err != nil:
		b.log.Warn("/run settings: users.info", "user", src.user, "err", b.gone(src.ws, err))
		answer("Your role in the workspace could not be checked just now; nothing changed. Try again in a moment.")
		return
	case !info.IsAdmin && !info.IsOwner:
		answer(settingsNotAdmin)
		return
	}
	st, err := b.settings.Fresh(ctx, src.team)
	if err != nil {
		b.log.Error("reading a workspace's settings", "workspace", src.team, "err", err)
		answer(settingsStoreFailed)
		return
	}
	if f := strings.Fields(src.text)[1:]; len(f) > 0 {
		next, err := choices.Change(st, f[0], strings.Join(f[1:], " "), b.bounds())
		if errors.Is(err, choices.ErrUsage) {
			err = fmt.Errorf("%w. %s", err, settingsUsage)
		}
		if err != nil {
			answer("Nothing changed: " + err.Error())
			return
		}
		if err := b.settings.Save(ctx, src.team, next); err != nil {
			b.log.Error("saving a workspace's settings", "workspace", src.team, "err", err)
			answer(settingsStoreFailed)
			return
		}
		b.log.Info("workspace settings changed", "workspace", src.team, "by", src.user, "key", f[0])
		st = next
	}
	answer(b.settingsText(st))
}

// channelRef matches a channel mention (<#C123|name>) or a bare id.
var channelRef = regexp.MustCompile(`^(?:<#([CG][A-Z0-9]+)(?:\|[^>]*)?>|([CG][A-Z0-9]+))$`)

// bounds are the operator's settings that a workspace's choices stay
// within.
func (b *Bot) bounds() choices.Bounds {
	return choices.Bounds{Platform: choices.Slack, Vars: "SLACK_", Channels: b.cfg.Channels, ChannelRef: channelRef,
		EditWindow: b.cfg.EditWindow, UserRate: b.cfg.UserRate, NoSessions: b.cfg.NoSessions, Reset: "`all`"}
}

// settingsText is the workspace's settings, for its admins: what applies
// and where it comes from, and how to change them.
func (b *Bot) settingsText(st store.Settings) string {
	wc := b.with(st)
	from := choices.Source
	channels := "every channel it is mentioned in, and direct messages"
	if len(wc.channels) > 0 {
		ids := make([]string, 0, len(wc.channels))
		for c := range wc.channels {
			ids = append(ids, "<#"+c+">")
		}
		slices.Sort(ids)
		channels = strings.Join(ids, ", ") + " (any code block runs there), and direct messages"
	}
	window := "off"
	if wc.editWindow > 0 {
		window = formatting.DurationText(wc.editWindow)
	}
	sessions := "on (each thread keeps its state between runs)"
	if !wc.sessions {
		sessions = "off (every message runs alone)"
	}
	var w strings.Builder
	w.WriteString("*Settings of this workspace* (you see them as an admin)\n")
	fmt.Fprintf(&w, "• Answers in: %s (%s)\n", channels, from(len(st.Channels) > 0))
	fmt.Fprintf(&w, "• Run reaction: :%s: (%s)\n", wc.reaction, from(st.RunReaction != ""))
	fmt.Fprintf(&w, "• Edits re-run within: %s (%s; at most %s)\n", window, from(st.EditWindow != nil), choices.WindowText(b.cfg.EditWindow))
	fmt.Fprintf(&w, "• Sessions: %s (%s)\n", sessions, from(st.Sessions != nil))
	w.WriteString(choices.UserRateLine(st.UserRate, b.cfg.UserRate))
	w.WriteString(settingsUsage + "\n")
	if b.settings.InMemory() {
		w.WriteString("_This runblock has no store (RUNBLOCK_STORE): settings last until it restarts._\n")
	}
	return w.String()
}

// teamOfUser is the team of a user key (source.userKey), "" when none.
func teamOfUser(key string) string {
	parts := strings.Split(key, ":")
	if len(parts) != 3 || parts[0] != Platform {
		return ""
	}
	return parts[1]
}
