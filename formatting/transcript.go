package formatting

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Statement is one input of a Python REPL transcript (">>> " and "... "
// lines, prompts stripped) with the output the transcript shows under it.
type Statement struct {
	Source   string // the statement's lines, ending with a newline
	Expected string // the lines shown under it, "" when none
	// Check: the transcript shows outputs, so the statement's real output
	// is compared with Expected. A transcript without any output line
	// claims nothing and is only run.
	Check bool
}

// Transcript is the REPL part of a snippet: its statements, in order, and
// the marker the program writes around each statement's output. Render
// takes the markers out of the output and compares each statement's output
// with what the transcript showed.
type Transcript struct {
	Statements []Statement
	Marker     string
}

// isTranscript reports a block whose first non-blank line, after the
// interpreter's banner if it was pasted too, is a ">>>" prompt.
func isTranscript(body string) bool {
	for _, l := range strings.Split(body, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || bannerLine(l) {
			continue
		}
		return l == ">>>" || strings.HasPrefix(l, ">>> ")
	}
	return false
}

// bannerLine reports the lines the interpreter prints when it starts.
func bannerLine(l string) bool {
	for _, p := range []string{"Python 2", "Python 3", "[GCC ", "[Clang ", "[MSC ", `Type "help"`} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

// parseTranscript splits a REPL transcript into its statements. Lines before
// the first prompt (a banner) are dropped; "... " lines continue the open
// statement; other lines are its output.
func parseTranscript(body string) []Statement {
	var stmts []Statement
	var src, out []string
	open := false // the last line was a prompt: "... " continues it
	shows := false
	flush := func() {
		if len(src) > 0 && strings.TrimSpace(strings.Join(src, "\n")) != "" {
			stmts = append(stmts, Statement{Source: strings.Join(src, "\n") + "\n", Expected: strings.Join(out, "\n")})
		}
		src, out = nil, nil
	}
	for _, l := range strings.Split(dedent(body), "\n") {
		switch {
		case l == ">>>" || strings.HasPrefix(l, ">>> "):
			flush()
			src, open = []string{strings.TrimPrefix(strings.TrimPrefix(l, ">>>"), " ")}, true
		case open && (l == "..." || strings.HasPrefix(l, "... ")):
			src = append(src, strings.TrimPrefix(strings.TrimPrefix(l, "..."), " "))
		case len(src) > 0:
			open = false
			out = append(out, l)
			shows = shows || strings.TrimSpace(l) != ""
		}
	}
	flush()
	for i := range stmts {
		stmts[i].Expected = strings.TrimRight(stmts[i].Expected, " \t\n")
		stmts[i].Check = shows
	}
	return stmts
}

// replRunner runs statements as the interactive interpreter does: each one
// compiled in 'single' mode (an expression statement echoes its repr through
// sys.displayhook), in the program's globals, an exception printed as a
// traceback and the next statement run. Each statement's output is framed
// by marker lines on stdout; the end marker carries the exception line.
const replRunner = `def __runblock_repl(statements, marker):
    import sys, traceback
    out, ns = sys.stdout, globals()
    for i, source in statements:
        out.write("\n%s begin %d\n" % (marker, i))
        out.flush()
        error = ""
        try:
            exec(compile(source, "<stdin>", "single"), ns)
        except SystemExit:
            raise
        except BaseException as e:
            error = " ".join(traceback.format_exception_only(type(e), e)[-1].split())
            sys.stdout.flush()
            traceback.print_exception(type(e), e, e.__traceback__.tb_next)
            sys.stderr.flush()
        sys.stdout.flush()
        out.write("\n%s end %d %s\n" % (marker, i, error))
        out.flush()
`

// transcriptMarker is the marker for a snippet's statements: a control
// character (never shown: output is cleaned of them) and a hash of the
// statements, which a statement cannot print without computing it.
func transcriptMarker(stmts []Statement) string {
	h := sha256.New()
	for _, s := range stmts {
		h.Write([]byte(s.Source))
		h.Write([]byte{0})
	}
	return "\x1erunblock:" + hex.EncodeToString(h.Sum(nil)[:8])
}

// transcriptProgram is the Python code running stmts[from:from+n].
func transcriptProgram(stmts []Statement, from int, marker string) string {
	var b strings.Builder
	b.WriteString(replRunner)
	b.WriteString(`globals().pop("__runblock_repl")([`)
	for i, s := range stmts {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(" + strconv.Itoa(from+i) + ", " + strconv.Quote(s.Source) + ")")
	}
	b.WriteString("], " + strconv.Quote(marker) + ")")
	return b.String()
}

// statementRun is what one statement really did.
type statementRun struct {
	out   string
	err   string // the exception line, "" when none
	ended bool   // the end marker was seen
}

// splitTranscript takes the markers out of stdout and returns the output as
// the program wrote it, and each statement's run.
func splitTranscript(t *Transcript, stdout string) (string, []statementRun) {
	runs := make([]statementRun, len(t.Statements))
	var plain strings.Builder
	cur := -1
	sep := "\n" + t.Marker + " "
	for {
		i := strings.Index(stdout, sep)
		if i < 0 {
			if k := partialSuffix(stdout, sep); k >= 0 {
				stdout = stdout[:k] // a marker cut by the output limit
			}
			plain.WriteString(stdout)
			if cur >= 0 {
				runs[cur].out += stdout
			}
			break
		}
		plain.WriteString(stdout[:i])
		if cur >= 0 {
			runs[cur].out += stdout[:i]
		}
		rest := stdout[i+len(sep):]
		nl := strings.IndexByte(rest, '\n')
		if nl < 0 {
			break // the marker line was cut
		}
		kind, rest2, _ := strings.Cut(rest[:nl], " ")
		num, errLine, _ := strings.Cut(rest2, " ")
		n, err := strconv.Atoi(num)
		if err == nil && n >= 0 && n < len(runs) {
			switch kind {
			case "begin":
				cur = n
			case "end":
				runs[n].err, runs[n].ended = errLine, true
				cur = -1
			}
		}
		stdout = rest[nl+1:]
	}
	return plain.String(), runs
}

// partialSuffix returns where s ends with a proper prefix of sep, or -1.
func partialSuffix(s, sep string) int {
	for k := min(len(sep)-1, len(s)); k > 0; k-- {
		if strings.HasSuffix(s, sep[:k]) {
			return len(s) - k
		}
	}
	return -1
}

// Difference is a statement whose real output is not what the transcript
// showed.
type Difference struct {
	Statement int // index in Transcript.Statements
	Source    string
	Expected  []string
	Got       []string
}

// TranscriptCheck is the outcome of comparing a run with its transcript.
type TranscriptCheck struct {
	Checked     int // statements compared
	NotReached  int // statements to compare that did not finish
	Differences []Difference
}

var hexAddress = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b0x[0-9a-fA-F]{4,}\b`) })

// comparable is an output as compared: cleaned, trailing blanks and blank
// lines dropped, memory addresses (object at 0x7f…) made equal, and a
// traceback reduced to its last line, the exception, as tracebacks differ
// in file names and line numbers.
func comparable(out string) []string {
	lines := splitLines(cleanOutput(out))
	for i, l := range lines {
		lines[i] = hexAddress().ReplaceAllString(strings.TrimRight(l, " \t"), "0x…")
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		if strings.TrimSpace(l) == tracebackHeader || strings.HasPrefix(l, `  File "`) {
			return append(lines[:i:i], lines[len(lines)-1])
		}
	}
	return lines
}

// CheckTranscript compares each statement's real output (and exception)
// with the output its transcript shows. It returns stdout without the
// markers, as the statements wrote it.
func CheckTranscript(t *Transcript, stdout string) (string, TranscriptCheck) {
	plain, runs := splitTranscript(t, stdout)
	var c TranscriptCheck
	for i, s := range t.Statements {
		if !s.Check {
			continue
		}
		if !runs[i].ended {
			c.NotReached++
			continue
		}
		c.Checked++
		got := runs[i].out
		if runs[i].err != "" {
			if got = strings.TrimRight(got, "\n"); got != "" {
				got += "\n"
			}
			got += runs[i].err
		}
		want, have := comparable(s.Expected), comparable(got)
		if strings.Join(want, "\n") != strings.Join(have, "\n") {
			c.Differences = append(c.Differences, Difference{Statement: i, Source: s.Source, Expected: want, Got: have})
		}
	}
	return plain, c
}

// Bounds of the transcript check note.
const (
	checkLines     = 2   // lines of expected and of real output per statement
	checkLineChars = 50  // code points per line
	checkUnits     = 700 // UTF-16 units; the note stops adding statements past it
)

// transcriptNote renders the check as notes and a code block of the
// differing statements: ">>> source", "expected: …", "     got: …".
func (r result) transcriptNote(c TranscriptCheck) string {
	if c.Checked == 0 && c.NotReached == 0 {
		return ""
	}
	var b strings.Builder
	var head string
	switch {
	case len(c.Differences) == 0 && c.Checked > 0:
		head = "transcript check: the output of " + plural(c.Checked, "statement") + " matches the transcript"
	case len(c.Differences) > 0:
		head = "transcript check: " + strconv.Itoa(len(c.Differences)) + " of " + plural(c.Checked, "statement") + " printed something other than the transcript shows"
	default:
		head = "transcript check: nothing checked"
	}
	if c.NotReached > 0 {
		head += " (" + strconv.Itoa(c.NotReached) + " not reached)"
	}
	if r.p == Console {
		head = "--- " + head + " ---"
	}
	r.line(&b, r.note(head))
	var lines []string
	shown := 0
	for _, d := range c.Differences {
		block := []string{">>> " + clip(firstLine(d.Source))}
		block = append(block, sideLines("expected: ", d.Expected)...)
		block = append(block, sideLines("     got: ", d.Got)...)
		if shown > 0 && utf16Len(r.blockText(append(lines, block...))) > checkUnits {
			break
		}
		lines = append(lines, block...)
		shown++
	}
	if len(lines) > 0 {
		r.block(&b, lines, nil)
	}
	if n := len(c.Differences) - shown; n > 0 {
		r.line(&b, r.note("… "+more(n, "difference")))
	}
	return b.String()
}

func (r result) blockText(lines []string) string {
	var b strings.Builder
	r.block(&b, lines, nil)
	return b.String()
}

func sideLines(label string, lines []string) []string {
	if len(lines) == 0 {
		return []string{label + "(nothing)"}
	}
	var out []string
	for i, l := range lines {
		if i == checkLines {
			out = append(out, strings.Repeat(" ", len(label))+"… "+more(len(lines)-i, "line"))
			break
		}
		if i > 0 {
			label = strings.Repeat(" ", len(label))
		}
		out = append(out, label+clip(l))
	}
	return out
}

func firstLine(s string) string {
	l, rest, _ := strings.Cut(strings.TrimRight(s, "\n"), "\n")
	if rest != "" {
		l += " …"
	}
	return l
}

func clip(s string) string {
	s = cleanOutput(s)
	if k := cutIndex(s, checkLineChars); k < len(s) {
		return s[:k] + "…"
	}
	return s
}
