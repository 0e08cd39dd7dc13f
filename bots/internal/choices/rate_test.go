package choices

import (
	"testing"
	"time"
)

func TestParseAndWriteRate(t *testing.T) {
	tests := []struct {
		in   string
		want string // RateText of the parse; "" for an error
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
		r, err := ParseRate(tt.in)
		got := ""
		if err == nil {
			got = RateText(r)
		}
		if got != tt.want {
			t.Errorf("%q: %q (%v), want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestUserRatesDropFullLimiters(t *testing.T) {
	now := time.Unix(1000, 0)
	u := NewUserRates(func() time.Time { return now }, "workspace")
	if err := u.Take("a", 1, 1); err != nil {
		t.Fatal(err)
	}
	if err := u.Take("a", 1, 1); err == nil {
		t.Fatal("a second run at once was allowed")
	}
	for i := 1; i < minSweep; i++ {
		if err := u.Take(string(rune('a'+i)), 1, 1); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(time.Minute) // every limiter is full again
	if err := u.Take("new", 1, 1); err != nil {
		t.Fatal(err)
	}
	if n := len(u.limiters); n != 1 {
		t.Fatalf("%d limiters kept, want 1", n)
	}
}
