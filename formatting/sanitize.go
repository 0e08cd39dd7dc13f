package formatting

import (
	"strings"
	"unicode/utf8"
)

const zwsp = "\u200b"

// cleanOutput makes program output safe to show as text: valid UTF-8,
// no escape sequences or control characters but newline and tab, carriage
// returns and backspaces applied as a terminal would, no bidirectional
// overrides, Unicode line separators as newlines.
func cleanOutput(s string) string {
	text, _ := clean(s, false)
	return text
}

// cleanStyled is cleanOutput that also keeps the colours and styles the
// output's SGR sequences gave its characters, as far as Discord renders
// them: spans[i] styles line i of the text (split at "\n"). spans is nil
// when no visible character is styled.
func cleanStyled(s string) (text string, spans [][]styleSpan) {
	return clean(s, true)
}

func clean(s string, styled bool) (string, [][]styleSpan) {
	s = strings.ToValidUTF8(s, "\ufffd")
	if isPlain(s) {
		return s, nil
	}
	var out strings.Builder
	out.Grow(len(s))
	var line []rune    // the current line, rewritten by CR and BS
	var styles []style // the style of each rune of line
	var spans [][]styleSpan
	col := 0
	cur, coloured := style{}, false
	put := func(r rune) {
		if col < len(line) {
			line[col], styles[col] = r, cur
		} else {
			line, styles = append(line, r), append(styles, cur)
		}
		col++
		coloured = coloured || cur != (style{})
	}
	flush := func() {
		var sp []styleSpan
		at := 0
		for k, r := range line {
			if styled && (k == 0 && styles[k] != (style{}) || k > 0 && styles[k] != styles[k-1]) {
				sp = append(sp, styleSpan{at: at, st: styles[k]})
			}
			out.WriteRune(r)
			at += utf8.RuneLen(r)
		}
		if styled {
			spans = append(spans, sp)
		}
		line, styles, col = line[:0], styles[:0], 0
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\n', r == '\u2028', r == '\u2029', r == '\u0085':
			flush()
			out.WriteByte('\n')
		case r == '\r':
			if i+1 < len(s) && s[i+1] == '\n' {
				break
			}
			col = 0
		case r == '\b':
			col = max(col-1, 0)
		case r == '\t':
			put(r)
		case r == 0x1b:
			n := escapeLen(s[i:])
			if styled && n >= 3 && s[i+1] == '[' {
				cur = cur.apply(s[i+2 : i+n])
			}
			i += n
			continue
		case r == 0x9b: // C1 CSI
			i += size + csiLen(s[i+size:])
			continue
		case r == 0x9d, r == 0x90, r == 0x98, r == 0x9e, r == 0x9f: // C1 OSC, DCS, SOS, PM, APC
			i += size + stringLen(s[i+size:])
			continue
		case r < 0x20, r >= 0x7f && r < 0xa0:
		case r >= '\u202a' && r <= '\u202e', r >= '\u2066' && r <= '\u2069':
		default:
			put(r)
		}
		i += size
	}
	flush()
	if !coloured {
		spans = nil
	}
	return out.String(), spans
}

// isPlain reports text that cleanOutput would leave as it is.
func isPlain(s string) bool {
	for _, r := range s {
		switch {
		case r == '\n', r == '\t':
		case r < 0x20, r >= 0x7f && r < 0xa0, r == '\u2028', r == '\u2029',
			r >= '\u202a' && r <= '\u202e', r >= '\u2066' && r <= '\u2069':
			return false
		}
	}
	return true
}

// escapeLen returns the length of the escape sequence at the start of s,
// which starts with ESC.
func escapeLen(s string) int {
	if len(s) < 2 {
		return len(s)
	}
	switch c := s[1]; {
	case c == '[':
		return 2 + csiLen(s[2:])
	case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_':
		return 2 + stringLen(s[2:])
	case c >= 0x20 && c <= 0x2f: // intermediates, then a final byte
		n := 1
		for n < len(s) && s[n] >= 0x20 && s[n] <= 0x2f {
			n++
		}
		if n < len(s) && s[n] >= 0x30 && s[n] <= 0x7e {
			n++
		}
		return n
	case c >= 0x30 && c <= 0x7e:
		return 2
	default:
		return 1
	}
}

// csiLen returns the length of a control sequence's parameters,
// intermediates and final byte.
func csiLen(s string) int {
	n := 0
	for n < len(s) && s[n] >= 0x30 && s[n] <= 0x3f {
		n++
	}
	for n < len(s) && s[n] >= 0x20 && s[n] <= 0x2f {
		n++
	}
	if n < len(s) && s[n] >= 0x40 && s[n] <= 0x7e {
		n++
	}
	return n
}

// stringLen returns the length of a control string (OSC, DCS, ...) through
// its terminator, BEL or ST. An unterminated string ends at the line end,
// so it cannot swallow the rest of the output.
func stringLen(s string) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case 0x07:
			return i + 1
		case '\n':
			return i
		case 0x1b:
			if i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
		}
		if strings.HasPrefix(s[i:], "\u009c") {
			return i + len("\u009c")
		}
	}
	return len(s)
}

// breakBackticks breaks every run of three or more backticks with a
// zero-width space after each second backtick ("“\u200b`"), so output
// cannot close the code block it is shown in; shorter runs cannot and are
// kept as they are.
func breakBackticks(s string) string {
	if !strings.Contains(s, "```") {
		return s
	}
	var b strings.Builder
	run := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '`' {
			run = 0
			b.WriteByte(s[i])
			continue
		}
		if run == 2 {
			b.WriteString(zwsp)
			run = 0
		}
		b.WriteByte('`')
		run++
	}
	return b.String()
}

var slackEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// neutralize makes cleaned text safe inside a code block on p: it cannot
// close the block and, on Slack, holds no markup (& < > escaped, so
// <!channel> and <@U1> stay text). Mentions are not altered: the adapters
// send every message with mentions disabled (Discord: allowed_mentions
// "parse": []; Slack: parse=none, link_names=false), so "@everyone" is
// shown, and copied, exactly as the program printed it.
func neutralize(p Platform, s string) string {
	switch p {
	case Discord:
	case Slack:
		s = slackEscaper.Replace(s)
	default:
		return s
	}
	return breakBackticks(s)
}
