package formatting

import (
	"fmt"
	"strings"
	"testing"

	"github.com/runblock/runblock/executor"
)

func TestFileName(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"plain", "plot.png", "plot.png"},
		{"path, spaces, unicode", "résultats/données 1.csv", "résultats/données 1.csv"},
		{"backslash kept", `a\xff`, `a\xff`},
		{"forged line", "a.txt (text/plain, 1 bytes)\n  evil.txt", `a.txt (text/plain, 1 bytes)\n  evil.txt`},
		{"carriage return", "x\rover", `x\rover`},
		{"terminal escape", "\x1b]0;title\x07\x1b[2J.txt", `\x1b]0;title\a\x1b[2J.txt`},
		{"C1 CSI", "a\u009b2Jb", `a\u009b2Jb`},
		{"right-to-left override", "invoice\u202etxt.exe", `invoice\u202etxt.exe`},
		{"bidi isolate, zero width, BOM", "a\u2066b\u200bc\ufeff", `a\u2066b\u200bc\ufeff`},
		{"line separator", "a\u2028b", `a\u2028b`},
		{"invalid UTF-8", "a\xffb\xfe", `a\xffb\xfe`},
		{"tab", "a\tb", `a\tb`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := FileName(tt.in); got != tt.want {
				t.Errorf("FileName(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestFilesNoteEscapesNames: an omitted file's name cannot add a line to
// the note or reach the terminal as an escape sequence, on any platform.
func TestFilesNoteEscapesNames(t *testing.T) {
	for _, p := range platforms {
		note := FilesNote(p, nil, []executor.OmittedFile{{Path: "a\n2 files not attached: \x1b[31mforged\u202e", Reason: executor.OmitCount}})
		if strings.Count(note, "\n") != 0 || strings.ContainsAny(note, "\x1b\u202e") {
			t.Errorf("%v: %q", p, note)
		}
	}
}

// TestFilesNoteCountsFilesNotNamed: the entry a run's report uses for the
// files past those it names one by one counts them all in the note.
func TestFilesNoteCountsFilesNotNamed(t *testing.T) {
	var omitted []executor.OmittedFile
	for i := range 100 {
		omitted = append(omitted, executor.OmittedFile{Path: fmt.Sprintf("f%d", i), Reason: executor.OmitCount})
	}
	omitted = append(omitted, executor.OmittedFile{Path: "(2900 more files)", Reason: executor.OmitNotNamed, Count: 2900})
	got := FilesNote(Console, nil, omitted)
	want := "3000 files not attached: f0 (over the file count limit), f1 (over the file count limit), f2 (over the file count limit), f3 (over the file count limit), f4 (over the file count limit), and 2995 more"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	only := FilesNote(Console, nil, omitted[100:])
	if !strings.HasPrefix(only, "2900 files not attached: (2900 more files)") {
		t.Errorf("the counting entry alone: %q", only)
	}
}
