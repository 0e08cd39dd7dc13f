package formatting

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Text from a snippet reaches a reply two ways: output, which cleanOutput
// makes plain (escape sequences and control characters removed, carriage
// returns applied), and names (file names, reasons), which are shown as
// written but with every character that could drive a terminal or forge a
// line escaped visibly. escapeControls and terminalSafe do the latter; the
// console's text passes terminalSafe as a whole, so no path of the renderer
// can hand ESC, CSI or another control to the terminal that prints it (the
// console adapter, runblock exec).

// escapeControls writes the characters of s that are not safe on one line of
// a terminal or a chat message as Go escapes (\n, \x1b, \u009b, \u202e,
// \xff for a byte that is not UTF-8): C0 and C1 controls and DEL, the
// bidirectional embeddings, overrides and isolates, and line and paragraph
// separators. Other text is itself.
func escapeControls(s string) string {
	return escapeRunes(s, unsafeRune)
}

// terminalSafe is escapeControls for a whole text of several lines: newline
// and tab are kept.
func terminalSafe(s string) string {
	return escapeRunes(s, func(r rune) bool { return r != '\n' && r != '\t' && unsafeRune(r) })
}

func unsafeRune(r rune) bool {
	return r < 0x20 || r >= 0x7f && r < 0xa0 ||
		r >= '\u202a' && r <= '\u202e' || r >= '\u2066' && r <= '\u2069' ||
		r == '\u2028' || r == '\u2029'
}

// escapeRunes writes the runes of s that escape reports, and the bytes
// that are not UTF-8, as Go escapes.
func escapeRunes(s string, escape func(rune) bool) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, escape) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case escape(r):
			if q := strconv.QuoteRune(r); q[1] == '\\' { // '\n', '\x1b', '\u202e'
				b.WriteString(q[1 : len(q)-1])
			} else { // a format character Go prints as itself
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
