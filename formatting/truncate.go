package formatting

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// view is the part of a stream shown inline.
type view struct {
	lines     []string // shown, the last one possibly cut
	total     int      // lines in the stream
	first     int      // index of the first shown line (tail view)
	moreLines int      // lines after the shown ones (head view)
	moreChars int      // characters cut off the end of the last shown line
}

func (v view) cut() bool { return v.first > 0 || v.moreLines > 0 || v.moreChars > 0 }

// splitLines splits s into lines; a final newline does not start a line.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// headView keeps the first lines of a stream within maxLines lines and
// maxChars characters (code points, line breaks not counted). A line that
// does not fit is cut at a grapheme boundary when part of it fits.
func headView(lines []string, maxLines, maxChars int) view {
	v := view{total: len(lines)}
	used := 0
	for i, l := range lines {
		if i >= maxLines {
			v.moreLines = len(lines) - i
			break
		}
		n := utf8.RuneCountInString(l)
		if used+n <= maxChars {
			v.lines = append(v.lines, l)
			used += n
			continue
		}
		if k := cutIndex(l, maxChars-used); k > 0 {
			v.lines = append(v.lines, l[:k])
			v.moreChars = n - utf8.RuneCountInString(l[:k])
			v.moreLines = len(lines) - i - 1
		} else {
			v.moreLines = len(lines) - i
		}
		break
	}
	return v
}

// tailView keeps the last lines of a stream within the limits. When even the
// last line does not fit, its head is shown, cut.
func tailView(lines []string, maxLines, maxChars int) view {
	v := view{total: len(lines), first: len(lines)}
	used := 0
	for i := len(lines) - 1; i >= 0 && len(lines)-i <= maxLines; i-- {
		n := utf8.RuneCountInString(lines[i])
		if used+n > maxChars {
			break
		}
		used += n
		v.first = i
	}
	if v.first == len(lines) && len(lines) > 0 && maxLines > 0 {
		l := lines[len(lines)-1]
		if k := cutIndex(l, maxChars); k > 0 {
			v.first = len(lines) - 1
			v.moreChars = utf8.RuneCountInString(l[k:])
			v.lines = []string{l[:k]}
			return v
		}
	}
	v.lines = lines[v.first:]
	return v
}

// cutIndex returns the byte offset at which to cut s so that at most n code
// points remain before it, moved back to a grapheme boundary when that is
// possible without emptying the cut.
func cutIndex(s string, n int) int {
	if n <= 0 {
		return 0
	}
	i, count := 0, 0
	for i < len(s) && count < n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		count++
	}
	if i >= len(s) {
		return len(s)
	}
	for j := i; j > 0; {
		if graphemeBoundary(s, j) {
			return j
		}
		_, size := utf8.DecodeLastRuneInString(s[:j])
		j -= size
	}
	return i
}

// graphemeBoundary approximates Unicode's extended grapheme cluster rules
// well enough for chat text: no break before a combining mark, variation
// selector, skin-tone modifier, tag character or ZWJ, none after a ZWJ, and
// none inside a pair of regional indicators (a flag).
func graphemeBoundary(s string, i int) bool {
	next, _ := utf8.DecodeRuneInString(s[i:])
	prev, _ := utf8.DecodeLastRuneInString(s[:i])
	if isExtend(next) || prev == '\u200d' {
		return false
	}
	if isRegional(prev) && isRegional(next) {
		n := 0
		for j := i; j > 0; {
			r, size := utf8.DecodeLastRuneInString(s[:j])
			if !isRegional(r) {
				break
			}
			n++
			j -= size
		}
		return n%2 == 0
	}
	return true
}

func isExtend(r rune) bool {
	switch {
	case r == '\u200c', r == '\u200d',
		r >= '\ufe00' && r <= '\ufe0f', r >= 0xe0100 && r <= 0xe01ef,
		r >= 0x1f3fb && r <= 0x1f3ff, r >= 0xe0020 && r <= 0xe007f:
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Mc)
}

func isRegional(r rune) bool { return r >= 0x1f1e6 && r <= 0x1f1ff }

// utf16Len counts s in UTF-16 code units, which is at least its count in
// code points: a text within a limit by this count is within it by either.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}
