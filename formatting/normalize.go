package formatting

import (
	"strings"
)

// normalizeNewlines turns CRLF and lone CR into LF.
func normalizeNewlines(s string) string {
	if !strings.Contains(s, "\r") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

var slackUnescaper = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&")

// slackDecode turns Slack message text back into what the user typed: the
// control sequences <…> are unwrapped, then the entities &lt; &gt; &amp;
// are un-escaped (Slack escapes every literal <, > and & the user typed, so
// each literal < in the text opens a control sequence).
func slackDecode(s string) string {
	if !strings.ContainsAny(s, "<&") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '<')
		if i < 0 {
			b.WriteString(s)
			break
		}
		j := strings.IndexAny(s[i+1:], "<>\n")
		if j < 0 || s[i+1+j] != '>' {
			b.WriteString(s[:i+1])
			s = s[i+1:]
			continue
		}
		b.WriteString(s[:i])
		b.WriteString(slackControl(s[i+1 : i+1+j]))
		s = s[i+1+j+1:]
	}
	return slackUnescaper.Replace(b.String())
}

// slackControl renders one Slack control sequence (without its brackets) as
// the text the user typed.
func slackControl(seq string) string {
	target, label, hasLabel := strings.Cut(seq, "|")
	switch {
	case strings.HasPrefix(target, "@"):
		if hasLabel && label != "" {
			return "@" + strings.TrimPrefix(label, "@")
		}
		return target
	case strings.HasPrefix(target, "#"):
		if hasLabel && label != "" {
			return "#" + label
		}
		return target
	case strings.HasPrefix(target, "!"):
		name := target[1:]
		switch name {
		case "here", "channel", "everyone":
			return "@" + name
		}
		if hasLabel && label != "" {
			return label
		}
		if team, ok := strings.CutPrefix(name, "subteam^"); ok {
			return "@" + team
		}
		return "@" + name
	default:
		if hasLabel && label != "" {
			return label
		}
		return target
	}
}

// cleanCode normalises pasted characters, drops leading blank lines and
// trailing whitespace, and removes the common indentation.
func cleanCode(s string) string {
	const blank = " \t\f\v"
	s = normalizePasted(s)
	for {
		nl := strings.IndexByte(s, '\n')
		if nl < 0 || strings.TrimLeft(s[:nl], blank) != "" {
			break
		}
		s = s[nl+1:]
	}
	s = strings.TrimRight(s, blank+"\n")
	if strings.TrimSpace(s) == "" {
		return ""
	}
	return dedent(s)
}

// dedent removes the longest run of leading spaces and tabs common to all
// lines that are not blank. Blank lines lose the margin when they have it.
func dedent(s string) string {
	lines := strings.Split(s, "\n")
	margin, first := "", true
	for _, l := range lines {
		rest := strings.TrimLeft(l, " \t")
		if rest == "" {
			continue
		}
		indent := l[:len(l)-len(rest)]
		if first {
			margin, first = indent, false
			continue
		}
		n := 0
		for n < len(margin) && n < len(indent) && margin[n] == indent[n] {
			n++
		}
		margin = margin[:n]
	}
	if margin == "" {
		return s
	}
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, margin)
	}
	return strings.Join(lines, "\n")
}

// isPastedSpace reports the Unicode spaces that are not ASCII space.
func isPastedSpace(r rune) bool {
	switch {
	case r == '\u00a0', r == '\u1680', r >= '\u2000' && r <= '\u200a',
		r == '\u202f', r == '\u205f', r == '\u3000':
		return true
	}
	return false
}

// isPastedInvisible reports zero-width and direction characters.
func isPastedInvisible(r rune) bool {
	switch {
	case r == '\u00ad', r == '\u180e', r >= '\u200b' && r <= '\u200f',
		r >= '\u202a' && r <= '\u202e', r >= '\u2060' && r <= '\u2064',
		r >= '\u2066' && r <= '\u2069', r == '\ufeff':
		return true
	}
	return false
}

// straightQuote maps curly quotes to the straight quote they stand for, or 0.
func straightQuote(r rune) rune {
	switch r {
	case '\u201c', '\u201d', '\u201e', '\u201f':
		return '"'
	case '\u2018', '\u2019', '\u201a', '\u201b':
		return '\''
	}
	return 0
}

// normalizePasted replaces the characters that word processors, web pages,
// phone keyboards and chat apps put into code, outside string literals and
// comments only. A tiny tokenizer tracks strings ('…', "…", triple quoted,
// backslash escapes; prefixes need no care because they precede the quote)
// and comments (# to the end of the line).
func normalizePasted(s string) string {
	if isASCII(s) {
		return s
	}
	const (
		code = iota
		comment
		str
	)
	var (
		b      strings.Builder
		state  = code
		quote  rune // the straight quote that opened the string
		triple bool
		curly  bool // the string was opened by a curly quote
	)
	rs := []rune(s)
	b.Grow(len(s))
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch state {
		case comment:
			if r == '\n' {
				state = code
			}
			b.WriteRune(r)
		case str:
			switch {
			case r == '\\' && i+1 < len(rs):
				b.WriteRune(r)
				b.WriteRune(rs[i+1])
				i++
			case r == '\n' && !triple:
				state = code
				b.WriteRune(r)
			case triple && r == quote && i+2 < len(rs) && rs[i+1] == quote && rs[i+2] == quote:
				b.WriteString(strings.Repeat(string(quote), 3))
				i += 2
				state = code
			case !triple && (r == quote || curly && straightQuote(r) == quote):
				b.WriteRune(quote)
				state = code
			default:
				b.WriteRune(r)
			}
		default:
			switch {
			case r == '#':
				state = comment
				b.WriteRune(r)
			case r == '"' || r == '\'':
				state, quote, curly = str, r, false
				triple = i+2 < len(rs) && rs[i+1] == r && rs[i+2] == r
				if triple {
					b.WriteString(strings.Repeat(string(r), 3))
					i += 2
				} else {
					b.WriteRune(r)
				}
			case straightQuote(r) != 0:
				state, quote, curly, triple = str, straightQuote(r), true, false
				b.WriteRune(quote)
			case isPastedSpace(r):
				b.WriteByte(' ')
			case isPastedInvisible(r):
			default:
				b.WriteRune(r)
			}
		}
	}
	return b.String()
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
