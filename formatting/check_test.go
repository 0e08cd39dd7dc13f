package formatting

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

var slackBareEntity = regexp.MustCompile(`&(amp|lt|gt);|&`)

// replyProblems lists the ways a rendered chat text breaks the renderer's
// promises: within the platform's limit, valid UTF-8, no Slack markup (a
// Slack mention needs a <…> sequence; Discord mentions are disabled by the
// adapters, see the bots' tests), and every piece of output inside its code
// block (no line of the text holds three adjacent backticks unless it is a
// fence line of our own, and fences pair up).
func replyProblems(p Platform, text string) []string {
	var probs []string
	if !utf8.ValidString(text) {
		probs = append(probs, "invalid UTF-8")
	}
	if limit := p.MaxText(); limit > 0 && utf16Len(text) > limit {
		probs = append(probs, fmt.Sprintf("%d UTF-16 units, over the limit of %d", utf16Len(text), limit))
	}
	for _, r := range text {
		if r == 0x1b && p == Discord {
			continue // checked below: only Discord's SGR codes, in an ansi block
		}
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r < 0xa0 ||
			r >= '\u202a' && r <= '\u202e' || r >= '\u2066' && r <= '\u2069' || r == '\u2028' || r == '\u2029' {
			probs = append(probs, fmt.Sprintf("control character %U", r))
		}
	}
	if p == Console {
		return probs
	}
	if p == Slack {
		if strings.ContainsAny(text, "<>") {
			probs = append(probs, "unescaped < or >")
		}
		for _, m := range slackBareEntity.FindAllString(text, -1) {
			if m == "&" {
				probs = append(probs, "unescaped &")
				break
			}
		}
	}
	inBlock, ansi := false, false
	for i, line := range strings.Split(text, "\n") {
		if line == "```" || !inBlock && p == Discord && line == "```ansi" {
			inBlock, ansi = !inBlock, line == "```ansi"
			continue
		}
		if strings.Contains(line, "\x1b") {
			probs = append(probs, sgrProblems(i+1, line, ansi)...)
		}
		if strings.Contains(line, "```") {
			probs = append(probs, fmt.Sprintf("line %d could close a code block: %q", i+1, line))
		}
		if !inBlock && strings.Count(line, "`")%2 != 0 {
			probs = append(probs, fmt.Sprintf("line %d has unbalanced inline code: %q", i+1, line))
		}
		if !inBlock && i > 0 && !(strings.HasPrefix(line, "_") && strings.HasSuffix(line, "_")) {
			probs = append(probs, fmt.Sprintf("line %d outside a code block is not a note: %q", i+1, line))
		}
		if i == 0 && strings.Count(line, "`") > 2 {
			probs = append(probs, "status line holds more than one inline code span")
		}
	}
	if inBlock {
		probs = append(probs, "code block left open")
	}
	return probs
}

// fullProblems checks Reply.Full: plain, valid text.
func fullProblems(full string) []string {
	var probs []string
	if !utf8.ValidString(full) {
		probs = append(probs, "full: invalid UTF-8")
	}
	for _, r := range full {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r < 0xa0 {
			probs = append(probs, fmt.Sprintf("full: control character %U", r))
			break
		}
	}
	return probs
}

// discordSGR matches the SGR sequences Discord renders: reset, bold,
// underline, foreground 30–37, background 40–47.
var discordSGR = regexp.MustCompile(`^\x1b\[(?:0|1|4|3[0-7]|4[0-7])(?:;(?:0|1|4|3[0-7]|4[0-7]))*m`)

// sgrProblems checks a line holding ESC: in an ansi block, every ESC starts
// a sequence Discord renders, and the last one is a reset, so the line
// ends in the default style.
func sgrProblems(n int, line string, ansi bool) []string {
	if !ansi {
		return []string{fmt.Sprintf("line %d has an escape outside an ansi block: %q", n, line)}
	}
	var probs []string
	last := ""
	for i := strings.IndexByte(line, 0x1b); i >= 0; {
		last = discordSGR.FindString(line[i:])
		if last == "" {
			probs = append(probs, fmt.Sprintf("line %d has an escape Discord does not render: %q", n, line[i:]))
			last = "\x1b"
		}
		k := strings.IndexByte(line[i+len(last):], 0x1b)
		if k < 0 {
			break
		}
		i += len(last) + k
	}
	if last != "\x1b[0m" {
		probs = append(probs, fmt.Sprintf("line %d does not end with a reset: %q", n, line))
	}
	return probs
}
