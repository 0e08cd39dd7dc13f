package discord

import (
	"testing"
)

func TestGuildOfUser(t *testing.T) {
	for key, want := range map[string]string{"discord:123:456": "123", "discord:dm:456": "", "slack:T:U": "", "discord:123": ""} {
		if got := guildOfUser(key); got != want {
			t.Errorf("%q: %q, want %q", key, got, want)
		}
	}
}
