package discord_test

import (
	"strings"
	"testing"
)

// TestE2ETranscriptCheck runs an LLM's claimed REPL session in the real
// sandbox: the reply shows what the statements print, without the runner's
// markers, and names the statement whose output differs.
func TestE2ETranscriptCheck(t *testing.T) {
	t.Parallel()
	e := start(t, realRunner(t), nil)
	m := e.say("!run\n```pycon\n>>> 0.1 + 0.2\n0.3\n>>> sorted({3, 1, 2})\n[1, 2, 3]\n>>> 1/0\nTraceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>\nZeroDivisionError: division by zero\n```")
	r := e.replyTo(e.channel, m.ID)
	got := r.Content()
	for _, want := range []string{
		"\n0.30000000000000004\n[1, 2, 3]\n```",
		"ZeroDivisionError: division by zero",
		"_transcript check: 1 of 3 statements printed something other than the transcript shows_",
		">>> 0.1 + 0.2\nexpected: 0.3\n     got: 0.30000000000000004\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("reply lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "runblock:") {
		t.Errorf("marker in the reply:\n%s", got)
	}
	assertNoMentions(t, r)
}
