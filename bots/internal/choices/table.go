package choices

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/runblock/runblock/internal/store"
)

// Platforms of the table's rows.
const (
	Slack   = "slack"
	Discord = "discord"
)

// Bounds are what a platform's workspace choices stay within: the
// operator's settings, and the platform's words for them.
type Bounds struct {
	Platform string // Slack or Discord: the rows that apply
	// Vars prefixes the platform's variables: "SLACK_" names
	// SLACK_CHANNELS and SLACK_EDIT_WINDOW in the answers.
	Vars string
	// Channels is the operator's channel list, the widest a workspace may
	// choose; none: any channel.
	Channels []string
	// ChannelRef matches a channel mention or id; its two groups are a
	// mention's id and a bare id.
	ChannelRef *regexp.Regexp
	EditWindow time.Duration // the longest a workspace may choose; 0: edits do not re-run
	UserRate   float64       // the highest per-user rate, runs a second; 0: unlimited
	NoSessions bool          // RUNBLOCK_SESSIONS off: no workspace turns them on
	// Reset is how the answers write the value that sets the channels
	// back to the operator's ("`all`").
	Reset string
}

// Setting is a row of Table: a setting a workspace's admins change by its
// key. set applies a value typed for it to st within b, or says why it
// cannot; reset sets it back to the operator's.
type Setting struct {
	Key       string
	Platforms []string // the platforms that offer it; none: every one
	set       func(st *store.Settings, v string, b Bounds) error
	reset     func(st *store.Settings)
}

// Limits of the values admins type.
const (
	maxPrefix   = 16
	maxReaction = 64
)

// Table is every setting a workspace chooses: adding one is a row here
// (and its field in store.Settings, and its line in each platform's
// answer).
var Table = []Setting{
	{Key: "channels", set: setChannels, reset: func(st *store.Settings) { st.Channels = nil }},
	{Key: "prefix", Platforms: []string{Discord}, set: setPrefix, reset: func(st *store.Settings) { st.Prefix = "" }},
	{Key: "reaction", Platforms: []string{Slack}, set: setSlackReaction, reset: func(st *store.Settings) { st.RunReaction = "" }},
	{Key: "reaction", Platforms: []string{Discord}, set: setDiscordReaction, reset: func(st *store.Settings) { st.RunReaction = "" }},
	{Key: "edit_window", set: setEditWindow, reset: func(st *store.Settings) { st.EditWindow = nil }},
	{Key: "user_rate", set: setUserRate, reset: func(st *store.Settings) { st.UserRate = 0 }},
	{Key: "sessions", Platforms: []string{Slack}, set: setSessions, reset: func(st *store.Settings) { st.Sessions = nil }},
}

// Default is the value that sets a setting back to the operator's.
const Default = "default"

// ErrUsage marks the errors of Change whose answer should say how the
// command is used: no such setting, or no value.
var ErrUsage = errors.New("usage")

type usageError string

func (e usageError) Error() string        { return string(e) }
func (e usageError) Is(target error) bool { return target == ErrUsage }

// Change sets the setting key (of b's platform) to v in st, within b:
// Default sets it back to the operator's. On an error, which says what
// is wrong in a line for the admin, st comes back unchanged.
func Change(st store.Settings, key, v string, b Bounds) (store.Settings, error) {
	key, v = strings.ToLower(strings.TrimSpace(key)), strings.TrimSpace(v)
	i := slices.IndexFunc(Table, func(s Setting) bool {
		return s.Key == key && (len(s.Platforms) == 0 || slices.Contains(s.Platforms, b.Platform))
	})
	switch {
	case i < 0:
		return st, usageError(fmt.Sprintf("there is no setting %q", key))
	case v == "":
		return st, usageError(fmt.Sprintf("no value given for %q", key))
	case strings.EqualFold(v, Default):
		Table[i].reset(&st)
		return st, nil
	}
	next := st
	if err := Table[i].set(&next, v, b); err != nil {
		return st, err
	}
	return next, nil
}

func setChannels(st *store.Settings, v string, b Bounds) error {
	if strings.EqualFold(v, "all") {
		st.Channels = nil
		return nil
	}
	chans, err := ParseChannels(v, b.ChannelRef, b.Channels, b.Vars+"CHANNELS", b.Reset)
	if err != nil {
		return err
	}
	st.Channels = chans
	return nil
}

func setPrefix(st *store.Settings, v string, _ Bounds) error {
	if len(v) > maxPrefix || strings.ContainsFunc(v, unicode.IsSpace) || strings.HasPrefix(v, "<") || strings.HasPrefix(v, "/") {
		return fmt.Errorf("the prefix must be 1 to %d characters without spaces, not a mention or a slash command, such as `!run`", maxPrefix)
	}
	st.Prefix = v
	return nil
}

// setSlackReaction takes an emoji's name, colons optional.
func setSlackReaction(st *store.Settings, v string, _ Bounds) error {
	name := strings.Trim(v, ":")
	if name == "" || len(name) > maxReaction || strings.ContainsAny(name, " :<>") {
		return errors.New("the reaction must be one emoji's name, such as `:arrow_forward:`")
	}
	st.RunReaction = name
	return nil
}

// setDiscordReaction takes an emoji, or a custom emoji (<:name:id> or
// :name:), kept as the name a reaction event carries.
func setDiscordReaction(st *store.Settings, v string, _ Bounds) error {
	if len(v) > maxReaction || strings.ContainsFunc(v, unicode.IsSpace) {
		return errors.New("the reaction must be one emoji, such as ▶️, or a custom emoji's name")
	}
	st.RunReaction = strings.Trim(v, ":")
	if strings.HasPrefix(v, "<") && strings.HasSuffix(v, ">") {
		if parts := strings.Split(strings.Trim(v, "<>"), ":"); len(parts) == 3 {
			st.RunReaction = parts[1]
		}
	}
	return nil
}

func setEditWindow(st *store.Settings, v string, b Bounds) error {
	d, err := ParseWindow(v)
	switch {
	case err != nil:
		return errors.New("the edit window must be a duration such as 5m, or 0 or `off` for never")
	case d > 0 && b.EditWindow <= 0:
		return fmt.Errorf("edits do not re-run on this runblock (the operator's %sEDIT_WINDOW)", b.Vars)
	case d > b.EditWindow:
		return fmt.Errorf("the edit window can be at most %s here (the operator's %sEDIT_WINDOW)", WindowText(b.EditWindow), b.Vars)
	}
	st.EditWindow = &d
	return nil
}

func setUserRate(st *store.Settings, v string, b Bounds) error {
	r, err := ParseRate(v)
	switch {
	case err != nil:
		return errors.New("the per-user rate must be runs per minute, second or hour, such as 3/min")
	case b.UserRate > 0 && r > b.UserRate*(1+1e-9):
		return fmt.Errorf("the per-user rate can be at most %s here (the operator's RUNBLOCK_USER_RATE)", RateText(b.UserRate))
	}
	st.UserRate = r
	return nil
}

func setSessions(st *store.Settings, v string, b Bounds) error {
	on := strings.EqualFold(v, "on")
	switch {
	case !on && !strings.EqualFold(v, "off"):
		return errors.New("sessions must be `on` or `off`")
	case on && b.NoSessions:
		return errors.New("sessions are off on this runblock (the operator's RUNBLOCK_SESSIONS)")
	}
	st.Sessions = &on
	return nil
}
