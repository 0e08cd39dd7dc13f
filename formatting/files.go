package formatting

import (
	"strconv"
	"strings"
	"unicode"

	"github.com/runblock/runblock/executor"
)

// FileName is a file name (a path a snippet chose) as it may be shown in
// text, on a terminal or in a chat message: control characters (newline,
// carriage return, escape sequences, C1), format characters (right-to-left
// and other bidirectional overrides, zero-width characters), line and
// paragraph separators and bytes that are not UTF-8 are written as Go
// escapes (\n, \x1b, \u202e, \xff), so that a name can neither forge a
// line of a listing nor drive a terminal. Other names are themselves.
func FileName(name string) string { return escapeRunes(name, unsafeInName) }

// unsafeInName: the runes FileName escapes.
func unsafeInName(r rune) bool {
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)
}

// maxFilesNamed bounds the file names a files note spells out, and
// maxNameShown the characters of each (a snippet's path may be kilobytes
// long): the note, and so every reply, stays within the platform's limit.
const (
	maxFilesNamed = 5
	maxNameShown  = 100
)

// FilesNote is the line that names the files a run left out, one line per
// direction: "2 files not attached: `big.csv` (12 MiB, over the total size
// limit), …" for what the snippet wrote (res.FilesOmitted), "1 file not
// given to the snippet: …" for the attachments of the message that could not
// go in. It is "" when nothing was left out.
func FilesNote(p Platform, in, out []executor.OmittedFile) string {
	r := result{p: p}
	var lines []string
	if s := r.filesLine(in, "not given to the snippet"); s != "" {
		lines = append(lines, s)
	}
	if s := r.filesLine(out, "not attached"); s != "" {
		lines = append(lines, s)
	}
	return strings.Join(lines, "\n")
}

func (r result) filesLine(files []executor.OmittedFile, what string) string {
	if len(files) == 0 {
		return ""
	}
	total := 0
	for _, f := range files {
		total += f.Files()
	}
	var b strings.Builder
	b.WriteString(plural(total, "file"))
	b.WriteString(" " + what + ": ")
	named := 0
	for i, f := range files {
		if i == maxFilesNamed {
			b.WriteString(", and " + strconv.Itoa(total-named) + " more")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		named += f.Files()
		name := FileName(f.Path)
		if k := cutIndex(name, maxNameShown); k < len(name) {
			name = name[:k] + "…"
		}
		b.WriteString(r.code(name))
		var why []string
		if f.Size > 0 {
			why = append(why, SizeText(f.Size))
		}
		if f.Reason != "" {
			why = append(why, f.Reason)
		}
		if len(why) > 0 {
			b.WriteString(" (" + strings.Join(why, ", ") + ")")
		}
	}
	return r.note(b.String())
}
