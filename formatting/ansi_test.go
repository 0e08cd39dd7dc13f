package formatting

import (
	"strings"
	"testing"
)

// TestDiscordSGR: output's SGR state, as a terminal reads it, is written
// back per line with only the codes Discord renders, each line balanced.
func TestDiscordSGR(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"plain", "abc", "abc"},
		{"red", "\x1b[31mred\x1b[0m.", "\x1b[31mred\x1b[0m."},
		{"left open", "\x1b[31mred", "\x1b[31mred\x1b[0m"},
		{"state carries to the next line", "\x1b[32ma\nb\x1b[0m", "\x1b[32ma\x1b[0m\n\x1b[32mb\x1b[0m"},
		{"bold off is a reset and the rest again", "\x1b[1;34mx\x1b[22my", "\x1b[1;34mx\x1b[0;34my\x1b[0m"},
		{"default foreground keeps the background", "\x1b[31;42mx\x1b[39my\x1b[49mz", "\x1b[31;42mx\x1b[0;42my\x1b[0mz"},
		{"underline 4:0 is off", "\x1b[4mx\x1b[4:0my", "\x1b[4mx\x1b[0my"},
		{"bright to normal", "\x1b[92mx\x1b[101my\x1b[0m", "\x1b[32mx\x1b[41my\x1b[0m"},
		{"256 colours", "\x1b[38;5;1mx\x1b[38;5;12my\x1b[38;5;46mz\x1b[38;5;240mw\x1b[38;5;250mv\x1b[0m", "\x1b[31mx\x1b[34my\x1b[32mz\x1b[30mw\x1b[37mv\x1b[0m"},
		{"truecolour, both forms", "\x1b[48;2;255;0;255mx\x1b[48:2::0:255:255my\x1b[0m", "\x1b[45mx\x1b[46my\x1b[0m"},
		{"several codes in one sequence", "\x1b[0;1;4;33;40mx\x1b[0m", "\x1b[1;4;33;40mx\x1b[0m"},
		{"codes Discord lacks are dropped", "\x1b[3;7;9mx\x1b[0m", "x"},
		{"empty parameters reset", "\x1b[31mx\x1b[my", "\x1b[31mx\x1b[0my"},
		{"truncated extended colour", "\x1b[38;5mx", "x"},
		{"no visible change, no code", "\x1b[31m\x1b[0mx\x1b[32m", "x"},
		{"other CSI and OSC removed", "\x1b[2J\x1b[?25l\x1b]0;t\x07\x1b[31;1Hx", "x"},
		{"C1 CSI is not read as colour", "\u009b31mx", "x"},
		{"carriage return overwrites styles too", "\x1b[31mabc\r\x1b[0mX", "X\x1b[31mbc\x1b[0m"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			text, spans := cleanStyled(tt.in)
			lines := strings.Split(text, "\n")
			for i := range lines {
				if i < len(spans) {
					lines[i] = sgrLine(lines[i], spans[i])
				}
			}
			if got := strings.Join(lines, "\n"); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if text != cleanOutput(tt.in) {
				t.Errorf("plain text %q, cleanOutput %q", text, cleanOutput(tt.in))
			}
		})
	}
}

// TestDiscordSGRCut: a line cut anywhere keeps whole sequences and ends in
// the default style.
func TestDiscordSGRCut(t *testing.T) {
	text, spans := cleanStyled("a\x1b[1;31mbc\x1b[0;4mde\x1b[44mf\x1b[0mg")
	for n := 0; n <= len(text); n++ {
		got := "```ansi\n" + sgrLine(text[:n], spans[0]) + "\n```"
		for _, prob := range replyProblems(Discord, got) {
			t.Errorf("cut at %d: %s", n, prob)
		}
	}
}
