package discord

import (
	"testing"
	"time"
)

func TestParseAndWriteRate(t *testing.T) {
	tests := []struct {
		in   string
		want string // rateText of the parse; "" for an error
	}{
		{"5/min", "5/min"},
		{"1/s", "60/min"},
		{"30/h", "30/h"},
		{"90 / hour", "1.5/min"},
		{"2.5/m", "2.5/min"},
		{"0/min", ""},
		{"-1/min", ""},
		{"5", ""},
		{"5/day", ""},
	}
	for _, tt := range tests {
		r, err := parseRate(tt.in)
		got := ""
		if err == nil {
			got = rateText(r)
		}
		if got != tt.want {
			t.Errorf("%q: %q (%v), want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestUserRatesDropFullLimiters(t *testing.T) {
	now := time.Unix(1000, 0)
	u := newUserRates(func() time.Time { return now })
	if err := u.take("a", 1, 1); err != nil {
		t.Fatal(err)
	}
	if err := u.take("a", 1, 1); err == nil {
		t.Fatal("a second run at once was allowed")
	}
	for i := 1; i < minSweep; i++ {
		if err := u.take(string(rune('a'+i)), 1, 1); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(time.Minute) // every limiter is full again
	if err := u.take("new", 1, 1); err != nil {
		t.Fatal(err)
	}
	if n := len(u.limiters); n != 1 {
		t.Fatalf("%d limiters kept, want 1", n)
	}
}

func TestGuildOfUser(t *testing.T) {
	for key, want := range map[string]string{"discord:123:456": "123", "discord:dm:456": "", "slack:T:U": "", "discord:123": ""} {
		if got := guildOfUser(key); got != want {
			t.Errorf("%q: %q, want %q", key, got, want)
		}
	}
}
