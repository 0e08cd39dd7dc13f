package formatting

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/runblock/runblock/executor"
)

// Platform limits on a reply's text, in UTF-16 code units.
const (
	DiscordMaxText = 2000 // a Discord message's content
	SlackMaxText   = 3000 // a Slack section block (a message allows 40,000)
)

// MaxText returns the longest reply text p accepts, 0 for no limit.
func (p Platform) MaxText() int {
	switch p {
	case Discord:
		return DiscordMaxText
	case Slack:
		return SlackMaxText
	default:
		return 0
	}
}

// Default inline view limits.
const (
	DefaultMaxLines = 15
	DefaultMaxChars = 1500
)

// maxErrorLine bounds the error line shown in the status line.
const maxErrorLine = 300

// RenderOptions bounds the inline view.
type RenderOptions struct {
	MaxLines int // default 15
	MaxChars int // default 1500
	// Skipped are the attachments of the message that did not go into the
	// run, named in the reply with the files the run left out.
	Skipped []executor.OmittedFile
	// Header, when set, is a line of ours put before the status line (a
	// session's cell number), within the platform's limit.
	Header string
	// Running renders the output so far of a run still going (live
	// output): "Running · 3 s", its Result.Duration so far, in place of a
	// result's status line.
	Running bool
	// NoStatus leaves the status line out: the output alone, under Header
	// (a run's whole output sent apart from its reply, which has one).
	NoStatus bool
	// Cell is the number of a session's cell, which its value's label
	// names ("Out[3]:"); 0 for a run alone ("Out:").
	Cell int
}

func (o RenderOptions) withDefaults() RenderOptions {
	if o.MaxLines <= 0 {
		o.MaxLines = DefaultMaxLines
	}
	if o.MaxChars <= 0 {
		o.MaxChars = DefaultMaxChars
	}
	return o
}

// Reply is a rendered answer.
type Reply struct {
	Text string // what to post, within the platform's limits
	// Full is the whole output as plain text when Text had to be cut, else "".
	Full string
	OK   bool // success: ✅, else ❌
	// Tables are shown as the platform's own tables, below Text (Slack's
	// table block: one a message); on other platforms they are text.
	Tables []Table
}

// Reaction returns the reaction for the finished run on p: the emoji name
// on Slack ("white_check_mark", "x"), the emoji itself elsewhere.
func (r Reply) Reaction(p Platform) string {
	switch {
	case p == Slack && r.OK:
		return "white_check_mark"
	case p == Slack:
		return "x"
	case r.OK:
		return "✅"
	default:
		return "❌"
	}
}

// RunningReaction returns the reaction shown while a run is queued or
// running: "hourglass_flowing_sand" on Slack, ⏳ elsewhere.
func RunningReaction(p Platform) string {
	if p == Slack {
		return "hourglass_flowing_sand"
	}
	return "⏳"
}

// Render renders a finished run.
func Render(p Platform, res executor.Result, opts RenderOptions) Reply {
	return RenderRun(p, Extraction{}, res, opts)
}

// RenderRun renders the finished run of ext's code. When the code runs a
// REPL transcript, the markers are taken out of the output and the reply
// says which statements printed something other than the transcript shows.
func RenderRun(p Platform, ext Extraction, res executor.Result, opts RenderOptions) Reply {
	opts = opts.withDefaults()
	r := result{p: p, res: res, header: opts.Header, running: opts.Running, noStatus: opts.NoStatus, files: FilesNote(p, opts.Skipped, res.FilesOmitted)}
	if ext.Transcript != nil {
		var c TranscriptCheck
		res.Stdout, c = CheckTranscript(ext.Transcript, res.Stdout)
		r.check = r.transcriptNote(c)
	}
	displays := res.Results
	if ext.Transcript != nil { // the offsets were into the output before the check
		displays = atEnd(displays, len(res.Stdout))
	}
	r.outputLines(res.Stdout, displays, opts.Cell)
	r.stderr, r.errSpans = styledLines(p, res.Stderr)
	r.outChars, r.errChars = chars(r.stdout), chars(r.stderr)
	text, cut := r.render(opts.MaxLines, opts.MaxChars)
	if limit := p.MaxText(); limit > 0 && utf16Len(text) > limit {
		// Shrink the view until the text fits; the text grows with the
		// budget, so bisect for the largest budget that fits. Each line and
		// character shown takes at least one unit, so a budget over the
		// limit never fits where the limit itself does not.
		lo, hi := 0, min(max(opts.MaxLines, opts.MaxChars), limit)
		for lo < hi {
			mid := lo + (hi-lo+1)/2
			if t, _ := r.render(min(opts.MaxLines, mid), min(opts.MaxChars, mid)); utf16Len(t) <= limit {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		text, cut = r.render(min(opts.MaxLines, lo), min(opts.MaxChars, lo))
	}
	if p == Console {
		text = terminalSafe(text)
	}
	reply := Reply{Text: text, OK: res.Outcome() == "ok", Tables: r.tables}
	if cut {
		reply.Full = r.full()
	}
	return reply
}

type result struct {
	p      Platform
	res    executor.Result
	stdout []string
	// outKinds tell how each line of stdout is shown (results.go).
	outKinds []lineKind
	tables   []Table // shown apart from the text (Reply.Tables)
	stderr   []string
	// outSpans and errSpans style the lines of stdout and stderr on
	// Discord, which renders colour; nil elsewhere or when no line is
	// styled.
	outSpans, errSpans [][]styleSpan
	// outChars and errChars count the code points of stdout and stderr.
	outChars, errChars int
	check              string // the transcript check note, or ""
	files              string // the FilesNote, or ""
	header             string // RenderOptions.Header
	running            bool   // RenderOptions.Running
	noStatus           bool   // RenderOptions.NoStatus
}

// render renders the reply with the given budget for the output shown, and
// reports whether any output was left out.
func (r result) render(maxLines, maxChars int) (string, bool) {
	var b strings.Builder
	b.WriteString(escapeControls(r.header))
	if !r.noStatus {
		if r.header != "" {
			b.WriteByte('\n')
		}
		b.WriteString(r.status())
	}

	failed := r.res.Outcome() != "ok"
	outLines, errLines := share(maxLines, len(r.stdout), len(r.stderr), failed)
	outChars, errChars := share(maxChars, r.outChars, r.errChars, failed)
	out := headView(r.stdout, outLines, outChars)
	errs := tailView(r.stderr, errLines, errChars)

	switch {
	case len(r.stdout) == 0 && len(r.stderr) == 0:
		r.line(&b, r.note("(no output)"))
	default:
		if len(r.stdout) > 0 {
			r.blocks(&b, out.lines, r.outKinds, r.outSpans)
			if n := out.moreNote(); n != "" {
				r.line(&b, r.note(n))
			}
		}
		if len(r.stderr) > 0 {
			label := "stderr"
			switch {
			case len(errs.lines) == 0:
				label = "stderr, " + plural(errs.total, "line") + " not shown"
			case errs.first > 0:
				label = fmt.Sprintf("stderr, last %s of %d", plural(errs.total-errs.first, "line"), errs.total)
			}
			if r.p == Console {
				label = "--- " + label + " ---"
			}
			r.line(&b, r.note(label))
			r.block(&b, errs.lines, tail(r.errSpans, errs.first))
			if errs.moreChars > 0 {
				r.line(&b, r.note("… "+more(errs.moreChars, "character")))
			}
		}
	}
	b.WriteString(r.check)
	if r.res.OutputTruncated && !r.res.OutputLimit {
		kept := int64(len(r.res.Stdout) + len(r.res.Stderr))
		r.line(&b, r.note(fmt.Sprintf("the runner kept only %s of the %s written", SizeText(kept), SizeText(r.res.StdoutBytes+r.res.StderrBytes))))
	}
	if r.files != "" {
		r.line(&b, r.files)
	}
	return strings.TrimPrefix(b.String(), "\n"), out.cut() || errs.cut()
}

// share splits a budget between stdout and stderr: half each, the failing
// stream (stderr of a failed run, else stdout) getting the odd one, and the
// part one stream does not need going to the other.
func share(total, needOut, needErr int, failed bool) (int, int) {
	switch {
	case needErr == 0:
		return total, 0
	case needOut == 0:
		return 0, total
	}
	small := total / 2
	out, errs := small, total-small
	if !failed {
		out, errs = errs, out
	}
	if needOut < out {
		errs += out - needOut
		out = needOut
	} else if needErr < errs {
		out += errs - needErr
		errs = needErr
	}
	return out, errs
}

func chars(lines []string) int {
	n := 0
	for _, l := range lines {
		n += utf8.RuneCountInString(l)
	}
	return n
}

func (v view) moreNote() string {
	switch {
	case v.moreChars > 0 && v.moreLines > 0:
		return "… " + more(v.moreChars, "character") + " and " + more(v.moreLines, "line")
	case v.moreChars > 0:
		return "… " + more(v.moreChars, "character")
	case v.moreLines > 0:
		return "… " + more(v.moreLines, "line")
	}
	return ""
}

// Status renders the first line of a run's reply on p: "OK · 7 ms",
// "Timed out after 5 s", "Error · NameError: name 'x' is not defined".
func Status(p Platform, res executor.Result) string { return result{p: p, res: res}.status() }

// status returns the first line of the reply.
func (r result) status() string {
	res := r.res
	switch {
	case r.running:
		return r.bold("Running") + " · " + DurationText(r.duration().Truncate(time.Second))
	case res.Timeout:
		if res.TimeoutLimit > 0 {
			return r.bold("Timed out") + " after " + DurationText(res.TimeoutLimit)
		}
		return r.bold("Timed out")
	case res.MemoryExceeded:
		if res.MemoryLimit > 0 {
			return r.bold("Memory limit") + " of " + SizeText(res.MemoryLimit) + " exceeded"
		}
		return r.bold("Memory limit exceeded")
	case res.OutputLimit:
		return r.bold("Output limit reached") + " · the run was stopped after writing " + SizeText(res.StdoutBytes+res.StderrBytes)
	case res.Success:
		return r.bold("OK") + " · " + r.text(DurationText(r.duration()))
	}
	if msg := errorLine(res); msg != "" {
		return r.bold("Error") + " · " + r.code(msg)
	}
	return r.bold("Error")
}

func (r result) duration() time.Duration {
	if r.res.Duration > 0 {
		return r.res.Duration
	}
	return time.Duration(r.res.DurationMS) * time.Millisecond
}

// errorLine is the error of a failed run in one line of bounded length.
func errorLine(res executor.Result) string {
	msg := strings.Join(strings.Fields(cleanOutput(res.Error)), " ")
	if msg == "" || msg == "Execution failed" {
		switch {
		case res.Signal != "":
			return "killed by " + res.Signal
		case res.ExitCode != 0:
			return "exit code " + strconv.Itoa(res.ExitCode)
		}
		return msg
	}
	if k := cutIndex(msg, maxErrorLine); k < len(msg) {
		msg = msg[:k] + "…"
	}
	return msg
}

func (r result) bold(s string) string {
	switch r.p {
	case Discord:
		return "**" + s + "**"
	case Slack:
		return "*" + s + "*"
	}
	return s
}

// text is words of ours on p: on Slack, its < > & escaped ("<1 ms").
func (r result) text(s string) string {
	if r.p == Slack {
		return slackEscaper.Replace(s)
	}
	return s
}

// code shows one line of output or a name as inline code; it holds no
// backtick and no control character (escapeControls).
func (r result) code(s string) string {
	s = escapeControls(s)
	if r.p == Console {
		return s
	}
	return "`" + neutralize(r.p, strings.ReplaceAll(s, "`", "ˋ")) + "`"
}

// note is a remark of ours (not output) on one line; a name or reason in
// it cannot break the line or hold a control character (escapeControls).
func (r result) note(s string) string {
	s = escapeControls(s)
	if r.p == Console {
		return s
	}
	return "_" + s + "_"
}

func (r result) line(b *strings.Builder, s string) {
	b.WriteByte('\n')
	b.WriteString(s)
}

// block writes lines of output as a code block. On the console the lines
// are written as they are. spans, when not nil, style the lines (spans[i]
// line i): when a line shown has a styled character, the block is tagged
// ansi and the lines carry the SGR codes Discord renders.
func (r result) block(b *strings.Builder, lines []string, spans [][]styleSpan) {
	if len(lines) == 0 {
		return
	}
	if r.p == Console {
		for _, l := range lines {
			r.line(b, l)
		}
		return
	}
	ansi := false
	for i, l := range lines {
		ansi = ansi || i < len(spans) && coloured(spans[i], len(l))
	}
	if ansi {
		b.WriteString("\n```ansi\n")
	} else {
		b.WriteString("\n```\n")
	}
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		if ansi && i < len(spans) {
			l = sgrLine(l, spans[i])
		}
		b.WriteString(neutralize(r.p, l))
	}
	b.WriteString("\n```")
}

// styledLines cleans a stream of output into lines (stderr: without the
// runner's traceback frames) and, on Discord, the styles of the lines.
func styledLines(p Platform, out string) ([]string, [][]styleSpan) {
	if p != Discord {
		return splitLines(trimGuardFrames(cleanOutput(out))), nil
	}
	text, spans := cleanStyled(out)
	if !strings.Contains(text, tracebackHeader) {
		lines := splitLines(text)
		if spans != nil {
			spans = spans[:len(lines)]
		}
		return lines, spans
	}
	all := strings.Split(text, "\n")
	kept := keptLines(all)
	lines := make([]string, 0, len(kept))
	var styles [][]styleSpan
	for _, i := range kept {
		lines = append(lines, all[i])
		if spans != nil {
			styles = append(styles, spans[i])
		}
	}
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	if styles != nil {
		styles = styles[:len(lines)]
	}
	return lines, styles
}

// tail returns spans from line first on, nil when there are none.
func tail(spans [][]styleSpan, first int) [][]styleSpan {
	if first >= len(spans) {
		return nil
	}
	return spans[first:]
}

// full is the whole output as plain text.
func (r result) full() string {
	var b strings.Builder
	for _, l := range r.stdout {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if len(r.stderr) > 0 {
		if len(r.stdout) > 0 {
			b.WriteString("\n--- stderr ---\n")
		}
		for _, l := range r.stderr {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// more counts what was left out: "1 more line", "3 more lines".
func more(n int, unit string) string {
	if n != 1 {
		unit += "s"
	}
	return strconv.Itoa(n) + " more " + unit
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}

// DurationText writes a duration as replies do: "<1 ms", "500 ms", "5 s",
// "1.5 s". Every platform's reply writes its run's duration with it.
func DurationText(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return "<1 ms"
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	}
	s := strconv.FormatFloat(d.Seconds(), 'f', 1, 64)
	return strings.TrimSuffix(s, ".0") + " s"
}

// SizeText writes a size as replies do: "512 B", "64 KiB", "1.5 MiB".
func SizeText(n int64) string {
	const k = 1024
	switch {
	case n < k:
		return strconv.FormatInt(n, 10) + " B"
	case n < k*k:
		return unitText(float64(n)/k) + " KiB"
	case n < k*k*k:
		return unitText(float64(n)/(k*k)) + " MiB"
	}
	return unitText(float64(n)/(k*k*k)) + " GiB"
}

func unitText(f float64) string {
	return strings.TrimSuffix(strconv.FormatFloat(f, 'f', 1, 64), ".0")
}

// SettingDuration writes d as settings are written and typed: 10m, 1h30m,
// not 10m0s.
func SettingDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
