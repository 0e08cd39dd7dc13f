package console_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/runblock/runblock/bots/console"
	"github.com/runblock/runblock/bots/internal/answer"
	"github.com/runblock/runblock/bots/internal/fakerunner"
)

// runSession pipes messages into a console on fakerunner's sessions and
// returns its replies, one per message.
func runSession(t *testing.T, noSessions bool, messages ...string) ([]string, fakerunner.SessionRunner) {
	t.Helper()
	runner := fakerunner.NewSessions()
	b, out := open(t, strings.NewReader(strings.Join(messages, "\n\n")+"\n"), runner, func(c *console.Config) { c.NoSessions = noSessions })
	waitDone(t, b)
	return strings.Split(strings.TrimSpace(out.String()), "\n\n"), runner
}

// TestConsoleIsOneSession: each message is the next cell of the console's
// session, its reply numbered; the word that resets a thread in chat, or
// %reset, starts it fresh and ends its live process.
func TestConsoleIsOneSession(t *testing.T) {
	cell := func(code string) string { return fence + "python\n" + code + "\n" + fence }
	for _, reset := range []string{"%reset", "reset", " reset "} {
		t.Run(reset, func(t *testing.T) {
			replies, runner := runSession(t, false, cell("a=1"), cell("raise"), cell("print(a)"), reset, cell("print(a)"))
			var firsts []string
			for _, r := range replies {
				first, _, _ := strings.Cut(r, "\n")
				firsts = append(firsts, first)
			}
			want := []string{"[1]", "[2]", "[3]", answer.ResetText, "[1]"}
			if !slices.Equal(firsts, want) {
				t.Fatalf("replies begin %q, want %q; output:\n%s", firsts, want, strings.Join(replies, "\n\n"))
			}
			wantStrings := []string{"a=1 <- []", "raise <- [a=1]", "print(a) <- [a=1]", "print(a) <- []"}
			if got := runner.Replays(); !slices.Equal(got, wantStrings) {
				t.Fatalf("jobs %q, want %q", got, wantStrings)
			}
			if ended := runner.Ended(); len(ended) != 1 || !strings.HasPrefix(ended[0], "console:") {
				t.Fatalf("ended %v, want the console's session", ended)
			}
		})
	}
}

// TestConsoleSessionsOff: every message alone, %reset is no command.
func TestConsoleSessionsOff(t *testing.T) {
	replies, runner := runSession(t, true, fence+"python\na=1\n"+fence, "%reset")
	if len(replies) != 2 || strings.HasPrefix(replies[0], "[") || replies[1] == answer.ResetText {
		t.Fatalf("replies %q", replies)
	}
	for _, j := range runner.Jobs() {
		if j.Request.Session != nil {
			t.Fatal("a job has a session")
		}
	}
}
