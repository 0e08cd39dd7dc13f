package slack

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/runblock/runblock/bots/internal/settings"
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

// Keys of /run settings.
const (
	keyChannels   = "channels"
	keyReaction   = "reaction"
	keyEditWindow = "edit_window"
	keySessions   = "sessions"
	keyUserRate   = "user_rate"
	maxReaction   = 64
)

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
	if len(st.Channels) > 0 && (len(channels) == 0 || settings.Subset(st.Channels, channels)) {
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
// bounded (settings.ReadTimeout), and skipped for a while after a failure.
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
		next, err := b.changeSettings(st, f[0], strings.Join(f[1:], " "))
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

// changeSettings sets key to v in st, within the operator's bounds.
func (b *Bot) changeSettings(st store.Settings, key, v string) (store.Settings, error) {
	reset := strings.EqualFold(v, settings.Default)
	if v == "" {
		return st, fmt.Errorf("no value given for %q. %s", key, settingsUsage)
	}
	switch strings.ToLower(key) {
	case keyChannels:
		if reset || strings.EqualFold(v, "all") {
			st.Channels = nil
			return st, nil
		}
		chans, err := settings.ParseChannels(v, channelRef, b.cfg.Channels, "SLACK_CHANNELS", "`all`")
		if err != nil {
			return st, err
		}
		st.Channels = chans
	case keyReaction:
		name := strings.Trim(v, ":")
		switch {
		case reset:
			st.RunReaction = ""
		case name == "" || len(name) > maxReaction || strings.ContainsAny(name, " :<>"):
			return st, errors.New("the reaction must be one emoji's name, such as `:arrow_forward:`")
		default:
			st.RunReaction = name
		}
	case keyEditWindow:
		if reset {
			st.EditWindow = nil
			return st, nil
		}
		d, err := settings.ParseWindow(v)
		switch {
		case err != nil:
			return st, errors.New("the edit window must be a duration such as 5m, or `off`")
		case d > 0 && b.cfg.EditWindow <= 0:
			return st, errors.New("edits do not re-run on this runblock (the operator's SLACK_EDIT_WINDOW)")
		case d > b.cfg.EditWindow:
			return st, fmt.Errorf("the edit window can be at most %s here (the operator's SLACK_EDIT_WINDOW)", settings.WindowText(b.cfg.EditWindow))
		}
		st.EditWindow = &d
	case keyUserRate:
		if reset {
			st.UserRate = 0
			return st, nil
		}
		r, err := settings.ParseRate(v)
		switch {
		case err != nil:
			return st, errors.New("the per-user rate must be runs per minute, second or hour, such as 3/min")
		case b.cfg.UserRate > 0 && r > b.cfg.UserRate*(1+1e-9):
			return st, fmt.Errorf("the per-user rate can be at most %s here (the operator's RUNBLOCK_USER_RATE)", settings.RateText(b.cfg.UserRate))
		}
		st.UserRate = r
	case keySessions:
		on := strings.EqualFold(v, "on")
		switch {
		case reset:
			st.Sessions = nil
		case !on && !strings.EqualFold(v, "off"):
			return st, errors.New("sessions must be `on` or `off`")
		case on && b.cfg.NoSessions:
			return st, errors.New("sessions are off on this runblock (the operator's RUNBLOCK_SESSIONS)")
		default:
			st.Sessions = &on
		}
	default:
		return st, fmt.Errorf("there is no setting %q. %s", key, settingsUsage)
	}
	return st, nil
}

// settingsText is the workspace's settings, for its admins: what applies
// and where it comes from, and how to change them.
func (b *Bot) settingsText(st store.Settings) string {
	wc := b.with(st)
	from := settings.Source
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
	fmt.Fprintf(&w, "• Edits re-run within: %s (%s; at most %s)\n", window, from(st.EditWindow != nil), settings.WindowText(b.cfg.EditWindow))
	fmt.Fprintf(&w, "• Sessions: %s (%s)\n", sessions, from(st.Sessions != nil))
	w.WriteString(settings.UserRateLine(st.UserRate, b.cfg.UserRate))
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
