package choices

import (
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/runblock/runblock/internal/store"
)

// TestChange holds Table's rows to what each platform accepts: a value
// within the operator's bounds is stored, "default" sets it back, and a
// refusal says why in one line, leaving the settings as they were.
func TestChange(t *testing.T) {
	slack := Bounds{Platform: Slack, Vars: "SLACK_", Channels: []string{"C1", "C2"}, ChannelRef: regexp.MustCompile(`^(?:<#(C[0-9]+)(?:\|[^>]*)?>|(C[0-9]+))$`),
		EditWindow: 10 * time.Minute, UserRate: 5.0 / 60, Reset: "`all`"}
	discord := Bounds{Platform: Discord, Vars: "DISCORD_", ChannelRef: regexp.MustCompile(`^(?:<#(\d{15,22})>|(\d{15,22}))$`), Reset: `"default"`}
	noSessions := slack
	noSessions.NoSessions = true
	window, never, on := 5*time.Minute, time.Duration(0), true
	start := store.Settings{Prefix: "?py", RunReaction: "eyes", Channels: []string{"C1"}, EditWindow: &window, UserRate: 1.0 / 60, Sessions: &on}
	for _, tt := range []struct {
		name   string
		b      Bounds
		key, v string
		want   func(st *store.Settings)
		err    string
	}{
		{"slack channels", slack, "channels", "<#C2|general> C1", func(st *store.Settings) { st.Channels = []string{"C2", "C1"} }, ""},
		{"slack channels all", slack, "Channels", "all", func(st *store.Settings) { st.Channels = nil }, ""},
		{"slack channel not allowed", slack, "channels", "C3", nil, "<#C3> is not one of the channels this runblock's operator allows (SLACK_CHANNELS)"},
		{"slack word not a channel", slack, "channels", "#chat", nil, "\"#chat\" is not a channel: mention channels (#name) or give their ids, or `all`"},
		{"slack reaction", slack, "reaction", ":tada:", func(st *store.Settings) { st.RunReaction = "tada" }, ""},
		{"slack reaction of two", slack, "reaction", "a b", nil, "the reaction must be one emoji's name"},
		{"slack reaction default", slack, "reaction", "DEFAULT", func(st *store.Settings) { st.RunReaction = "" }, ""},
		{"slack edit window", slack, "edit_window", "off", func(st *store.Settings) { st.EditWindow = &never }, ""},
		{"slack edit window too long", slack, "edit_window", "1h", nil, "at most 10m here (the operator's SLACK_EDIT_WINDOW)"},
		{"slack edits off", Bounds{Platform: Slack, Vars: "SLACK_"}, "edit_window", "5m", nil, "edits do not re-run on this runblock (the operator's SLACK_EDIT_WINDOW)"},
		{"slack edit window not a duration", slack, "edit_window", "soon", nil, "must be a duration"},
		{"slack user rate", slack, "user_rate", "3/min", func(st *store.Settings) { st.UserRate = 3.0 / 60 }, ""},
		{"slack user rate too high", slack, "user_rate", "10/min", nil, "at most 5/min here (the operator's RUNBLOCK_USER_RATE)"},
		{"slack user rate default", slack, "user_rate", "default", func(st *store.Settings) { st.UserRate = 0 }, ""},
		{"slack sessions off", slack, "sessions", "off", func(st *store.Settings) { off := false; st.Sessions = &off }, ""},
		{"slack sessions maybe", slack, "sessions", "maybe", nil, "sessions must be `on` or `off`"},
		{"slack sessions on, operator's off", noSessions, "sessions", "on", nil, "sessions are off on this runblock (the operator's RUNBLOCK_SESSIONS)"},
		{"slack has no prefix", slack, "prefix", "!py", nil, `there is no setting "prefix"`},
		{"no value", slack, "reaction", " ", nil, `no value given for "reaction"`},
		{"discord prefix", discord, "prefix", "!py", func(st *store.Settings) { st.Prefix = "!py" }, ""},
		{"discord prefix a slash command", discord, "prefix", "/run", nil, "the prefix must be 1 to 16 characters"},
		{"discord prefix default", discord, "prefix", "default", func(st *store.Settings) { st.Prefix = "" }, ""},
		{"discord custom emoji", discord, "reaction", "<:snake:123456789012345678>", func(st *store.Settings) { st.RunReaction = "snake" }, ""},
		{"discord emoji", discord, "reaction", "▶️", func(st *store.Settings) { st.RunReaction = "▶️" }, ""},
		{"discord any channel", discord, "channels", "123456789012345678", func(st *store.Settings) { st.Channels = []string{"123456789012345678"} }, ""},
		{"discord word not a channel", discord, "channels", "general", nil, `"general" is not a channel: mention channels (#name) or give their ids, or "default"`},
		{"discord has no sessions", discord, "sessions", "off", nil, `there is no setting "sessions"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Change(cloneSettings(start), tt.key, tt.v, tt.b)
			want := cloneSettings(start)
			if tt.want != nil {
				tt.want(&want)
			}
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("Change(%s, %q) = %v", tt.key, tt.v, err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("Change(%s, %q) = %v, want an error saying %q", tt.key, tt.v, err, tt.err)
			case strings.Contains(tt.err, "no setting") || strings.Contains(tt.err, "no value"):
				if !errors.Is(err, ErrUsage) {
					t.Errorf("error %v is not ErrUsage: its answer would not say how to use the command", err)
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Change(%s, %q) = %+v, want %+v", tt.key, tt.v, got, want)
			}
		})
	}
}

// cloneSettings copies st and what its pointers point at, so that no case
// changes another's start.
func cloneSettings(st store.Settings) store.Settings {
	st.Channels = append([]string(nil), st.Channels...)
	if st.EditWindow != nil {
		w := *st.EditWindow
		st.EditWindow = &w
	}
	if st.Sessions != nil {
		s := *st.Sessions
		st.Sessions = &s
	}
	return st
}
