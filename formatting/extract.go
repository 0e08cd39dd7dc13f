package formatting

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Platform selects the markup dialect.
type Platform int

// Platforms.
const (
	Console Platform = iota
	Slack
	Discord
)

func (p Platform) String() string {
	switch p {
	case Slack:
		return "slack"
	case Discord:
		return "discord"
	default:
		return "console"
	}
}

// ExtractOptions says how a message may yield code.
type ExtractOptions struct {
	Platform Platform
	// Triggered: the message carried an explicit trigger (/run, !run, a bot
	// mention; the adapter strips the trigger itself), so inline `code` counts.
	Triggered bool
	// Raw: the text is code itself when it holds no fence (slash command
	// text, a modal's code field).
	Raw bool
}

// Extraction is what a message yielded.
type Extraction struct {
	Found bool
	Code  string
	Stdin string
	// OtherLanguages lists the tags of fenced blocks in other languages,
	// used for the "only Python is supported" hint when nothing was found.
	OtherLanguages []string
	// Blocks counts the pieces of code joined into Code.
	Blocks int
	// Transcript holds the statements of the REPL transcripts (">>> "
	// lines) in Code, nil when there are none. Code runs them as the
	// interactive interpreter does and frames each one's output with
	// markers: pass the extraction to RenderRun, which takes them out and
	// checks the outputs the transcript shows.
	Transcript *Transcript
}

// Notice returns the notice to send when nothing was found:
// NoticeNotPython when the message had blocks in other languages, else
// NoticeNoCode. It is meaningful only when Found is false.
func (e Extraction) Notice() Notice {
	if len(e.OtherLanguages) > 0 {
		return NoticeNotPython
	}
	return NoticeNoCode
}

type blockKind int

const (
	kindUntagged blockKind = iota
	kindPython
	kindStdin
	kindOther
)

// pythonTags are the names of Python, and of Python REPL transcripts.
var pythonTags = map[string]bool{"python": true, "py": true, "python3": true, "py3": true, "ipython": true, "pycon": true, "python-repl": true, "pyrepl": true}

var stdinTags = map[string]bool{"stdin": true, "input": true}

// otherTags are language names commonly put on code blocks (highlight.js
// names and aliases, plus the usual tags for plain output).
var otherTags = func() map[string]bool {
	m := map[string]bool{}
	for _, t := range strings.Fields(`
		text txt plain plaintext output out console terminal log logs shell sh bash zsh fish
		ps ps1 powershell pwsh bat cmd batch javascript js jsx mjs cjs typescript ts tsx
		json jsonc json5 yaml yml toml ini cfg conf env properties xml html xhtml svg css
		scss sass less markdown md rst tex latex sql mysql pgsql postgres postgresql plsql
		sqlite graphql gql go golang rust rs c h cpp c++ cc cxx hpp objc objectivec
		objective-c csharp cs c# fsharp fs f# java kotlin kt scala groovy gradle swift
		dart ruby rb php perl pl lua r julia jl matlab octave haskell hs ocaml ml elixir ex
		exs erlang erl clojure clj lisp scheme racket elm nim zig d vb vbnet vba
		pascal delphi fortran cobol ada asm nasm x86asm wasm wat solidity sol vue svelte
		dockerfile docker makefile make cmake nginx apache diff patch csv tsv http
		proto protobuf terraform hcl tf nix pytb cython jinja django handlebars
		twig regex awk sed vim coffeescript coffee crystal cr haxe prolog smalltalk tcl
		verilog vhdl glsl hlsl mermaid plantuml dot graphviz`) {
		m[t] = true
	}
	return m
}()

func classify(tag string) blockKind {
	switch {
	case tag == "":
		return kindUntagged
	case pythonish(tag):
		return kindPython
	case stdinTags[tag]:
		return kindStdin
	default:
		return kindOther
	}
}

func knownTag(tag string) bool {
	return pythonTags[tag] || stdinTags[tag] || otherTags[tag]
}

type fenced struct {
	tag    string // lower case, "" when untagged
	body   string
	output bool // the line before the block labels it as output ("Output:")
}

// scan splits text into fenced blocks and the text outside them.
func scan(text string, p Platform) (blocks []fenced, outside []string) {
	pos := 0
	o := openers{text: text}
	for pos < len(text) {
		start, n, tilde := o.next(pos)
		if start < 0 {
			outside = append(outside, text[pos:])
			break
		}
		outside = append(outside, text[pos:start])
		from := start + n
		var content string
		if tilde {
			// The tag line ends at the first newline; the closer is a line
			// of its own starting with at least n tildes.
			end, next := tildeCloser(text, from, n)
			content, pos = text[from:end], next
		} else {
			end, next := backtickCloser(text, from, n)
			content, pos = text[from:end], next
		}
		if marker, ok := quoteMarker(text, start); ok {
			content = unquote(content, marker)
		}
		b := parseBlock(content, p == Discord && !tilde)
		b.output = labelsOutput(outside[len(outside)-1])
		blocks = append(blocks, b)
	}
	return blocks, outside
}

// openers finds fences in order: a run of three or more backticks
// anywhere outside inline code spans, or of tildes at the start of a line
// (after up to three spaces). It remembers the next fence of each kind and
// the next run of one and two backticks, so a scan stays linear in the
// length of the text; the positions asked for only grow.
type openers struct {
	text     string
	backtick search
	tilde    search
	exact    [3]search // the next run of exactly 1 or 2 backticks
	breaks   search    // the next paragraph break: a blank line or a fence line
}

// search is the remembered result of looking for a fence.
type search struct {
	at    int  // where the fence starts, -1: none
	known bool // at holds a result
}

func (o *openers) next(pos int) (start, n int, tilde bool) {
	bt := o.backtick.find(pos, o.backtickFence)
	td := o.tilde.find(pos, func(from int) int {
		for i := from; i < len(o.text); {
			j := strings.Index(o.text[i:], "~~~")
			if j < 0 {
				break
			}
			if k := i + j; lineIndent(o.text, k) >= 0 {
				return k
			}
			i += j + 1
		}
		return -1
	})
	switch {
	case bt < 0 && td < 0:
		return -1, 0, false
	case td < 0 || (bt >= 0 && bt < td):
		return bt, runLen(o.text, bt, '`'), false
	default:
		return td, runLen(o.text, td, '~'), true
	}
}

// backtickFence finds the first run of three or more backticks at or after
// from that is not inside an inline code span. As in CommonMark, a run of
// one or two backticks opens a span closed by the next run of the same
// length; a span does not cross a paragraph break (a blank line, or a line
// starting with a fence, which opens a block first).
func (o *openers) backtickFence(from int) int {
	for i := from; ; {
		j := strings.IndexByte(o.text[i:], '`')
		if j < 0 {
			return -1
		}
		i += j
		n := runLen(o.text, i, '`')
		if n >= 3 {
			return i
		}
		i += n
		end := o.exact[n].find(i, func(from int) int { return exactRun(o.text, from, n) })
		if end >= 0 && end < o.breaks.find(i, func(from int) int { return paragraphBreak(o.text, from) }) {
			i = end + n
		}
	}
}

// exactRun returns the start of the first run of exactly n backticks at or
// after from (a run boundary), or -1.
func exactRun(text string, from, n int) int {
	for i := from; ; {
		j := strings.IndexByte(text[i:], '`')
		if j < 0 {
			return -1
		}
		i += j
		m := runLen(text, i, '`')
		if m == n {
			return i
		}
		i += m
	}
}

// paragraphBreak returns where the first blank line or line starting (after
// up to three spaces) with a fence after from begins, or len(text).
func paragraphBreak(text string, from int) int {
	for i := from; ; {
		j := strings.IndexByte(text[i:], '\n')
		if j < 0 {
			return len(text)
		}
		i += j + 1
		rest := strings.TrimLeft(text[i:], " \t")
		if rest == "" || rest[0] == '\n' {
			return i - 1
		}
		if k := i + len(text[i:]) - len(rest); lineIndent(text, k) >= 0 && (strings.HasPrefix(rest, "```") || strings.HasPrefix(rest, "~~~")) {
			return i - 1
		}
	}
}

// lineIndent returns the number of spaces before i on its line when only up
// to three spaces precede it there, else -1.
func lineIndent(text string, i int) int {
	n := 0
	for k := i - 1; k >= 0 && text[k] != '\n'; k-- {
		if text[k] != ' ' || n == 3 {
			return -1
		}
		n++
	}
	return n
}

// find returns the first fence at or after pos, looking again only when
// the remembered one lies before pos.
func (s *search) find(pos int, look func(from int) int) int {
	if !s.known || s.at >= 0 && s.at < pos {
		s.at, s.known = look(pos), true
	}
	return s.at
}

func runLen(text string, i int, c byte) int {
	n := 0
	for i+n < len(text) && text[i+n] == c {
		n++
	}
	return n
}

// backtickCloser finds the run of backticks closing a block opened by n
// backticks: the next run of at least three (at least n for a longer
// opener). It returns where the content ends and where the text after the
// closer starts; an unclosed block takes the rest of the text.
func backtickCloser(text string, from, n int) (end, next int) {
	need := max(n, 3)
	for i := from; i < len(text); {
		if text[i] != '`' {
			i++
			continue
		}
		m := runLen(text, i, '`')
		if m >= need {
			return i, i + m
		}
		i += m
	}
	return len(text), len(text)
}

func tildeCloser(text string, from, n int) (end, next int) {
	nl := strings.IndexByte(text[from:], '\n')
	if nl < 0 {
		return len(text), len(text)
	}
	for i := from + nl + 1; i < len(text); {
		lineEnd := len(text)
		if k := strings.IndexByte(text[i:], '\n'); k >= 0 {
			lineEnd = i + k
		}
		line := strings.TrimLeft(text[i:lineEnd], " ")
		if m := runLen(line, 0, '~'); m >= n && len(text[i:lineEnd])-len(line) <= 3 && strings.TrimSpace(line[m:]) == "" {
			return i - 1, lineEnd
		}
		i = lineEnd + 1
	}
	return len(text), len(text)
}

// quoteMarker reports whether the fence at start opens inside a block quote
// ("> ```py" on Discord and the console, "&gt; ```py" in Slack's text) and
// returns the quote marker. It looks back only over the marker and blanks.
func quoteMarker(text string, start int) (string, bool) {
	before := strings.TrimRight(text[:start], " \t")
	for _, marker := range []string{">", "&gt;"} {
		if rest, ok := strings.CutSuffix(before, marker); ok {
			rest = strings.TrimRight(rest, " \t")
			if rest == "" || strings.HasSuffix(rest, "\n") {
				return marker, true
			}
		}
	}
	return "", false
}

// unquote removes the quote marker (and one space after it) from the lines
// of a quoted block after the first, which follows the fence.
func unquote(content, marker string) string {
	lines := strings.Split(content, "\n")
	for i := 1; i < len(lines); i++ {
		if rest, ok := strings.CutPrefix(strings.TrimLeft(lines[i], " "), marker); ok {
			lines[i] = strings.TrimPrefix(rest, " ")
		}
	}
	return strings.Join(lines, "\n")
}

// parseBlock splits a block's content into its tag and body. The first
// line is the info string when it is a language name, an info string with
// attributes (see infoTag) or, with discord set, any word Discord takes as
// the language and hides (```pass, ```python3.12). On Discord a language
// is only ever a word followed by a line break, so with discord set a
// block on one line (```py print(1)```, ```js```) has no tag, and a
// first line of a word and code (```py print(1)) is code: its content is
// the code, as Discord shows it.
func parseBlock(content string, discord bool) fenced {
	if discord && !strings.ContainsRune(content, '\n') {
		return fenced{body: content}
	}
	if nl := strings.IndexByte(content, '\n'); nl >= 0 {
		first := strings.TrimSpace(content[:nl])
		switch tag := strings.ToLower(first); {
		case first == "":
			return fenced{body: content[nl+1:]}
		case !strings.ContainsFunc(first, unicode.IsSpace) && isTag(tag):
			return fenced{tag: tag, body: content[nl+1:]}
		case discord && hiddenLanguage(content[:nl]):
			return fenced{tag: tag, body: content[nl+1:]}
		}
		if tag, code, ok := infoTag(first); ok {
			if code != "" && discord {
				return fenced{body: content}
			}
			if code != "" {
				return fenced{tag: tag, body: code + "\n" + content[nl+1:]}
			}
			return fenced{tag: tag, body: content[nl+1:]}
		}
		return fenced{body: content}
	}
	line := strings.TrimSpace(content)
	if tag := strings.ToLower(line); isTag(tag) {
		return fenced{tag: tag}
	}
	word, rest, ok := strings.Cut(line, " ")
	if !ok {
		word, rest, ok = strings.Cut(line, "\t")
	}
	rest = strings.TrimSpace(rest)
	if tag := strings.ToLower(word); ok && isTag(tag) && rest != "" && !startsWithOperator(rest) {
		return fenced{tag: tag, body: rest}
	}
	return fenced{body: content}
}

func startsWithOperator(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return strings.ContainsRune("=+-*/%<>!&|^~.,:;)]}@", r)
}

// piece is a piece of code to run: text, or the statements of a REPL
// transcript.
type piece struct {
	text       string
	transcript bool
	stmts      []Statement
}

// Extract finds the Python snippet (and stdin block) in a message.
func Extract(text string, opts ExtractOptions) Extraction {
	text = normalizeNewlines(text)
	blocks, outside := scan(text, opts.Platform)

	var ext Extraction
	var tagged, untagged []piece
	var stdin []string
	add := func(tag, body string) {
		body = decode(body, opts.Platform)
		kind := classify(tag)
		switch {
		case (kind == kindPython || kind == kindUntagged) && isTranscript(body):
			tagged = append(tagged, piece{transcript: true, stmts: parseTranscript(body)})
		case kind == kindPython:
			tagged = append(tagged, piece{text: body})
		case kind == kindUntagged:
			untagged = append(untagged, piece{text: body})
		case kind == kindStdin:
			stdin = append(stdin, body)
		default:
			if !contains(ext.OtherLanguages, tag) {
				ext.OtherLanguages = append(ext.OtherLanguages, tag)
			}
		}
	}
	prefix := ""
	if len(blocks) > 0 && !glued(outside[0]) {
		prefix = prefixTag(decode(outside[0], opts.Platform))
	}
	for _, b := range blocks {
		switch {
		case b.tag == "" && b.output:
		case b.tag == "":
			add(prefix, b.body)
		default:
			add(b.tag, b.body)
		}
	}
	if len(tagged) == 0 && len(untagged) == 0 && len(ext.OtherLanguages) == 0 {
		switch {
		case opts.Raw:
			raw := strings.Join(outside, "")
			if spans := inlineSpans(raw); len(spans) == 1 && spans[0].whole {
				add(spanTag(spans[0].code))
			} else {
				add("", raw)
			}
		case opts.Triggered && len(blocks) == 0:
			for _, s := range inlineSpans(text) {
				add(spanTag(s.code))
			}
		}
	}
	pieces := tagged
	if len(pieces) == 0 {
		pieces = untagged
	}
	ext.Code, ext.Blocks, ext.Transcript = assemble(pieces)
	ext.Found = ext.Code != ""
	if ext.Found && len(stdin) > 0 {
		var b strings.Builder
		for _, s := range stdin {
			b.WriteString(strings.TrimSuffix(s, "\n"))
			b.WriteByte('\n')
		}
		ext.Stdin = b.String()
	}
	return ext
}

// glued reports whether the text before a fence runs into it with no
// space ("text```print(1)```"): such a word is part of the sentence, not
// the language of the block, as python-discord's bot reads it.
func glued(before string) bool {
	r, _ := utf8.DecodeLastRuneInString(before)
	return before != "" && !unicode.IsSpace(r)
}

// spanTag splits an inline span whose first line is a lone language name
// (`py\nx = 4`) into tag and code.
func spanTag(code string) (string, string) {
	first, rest, ok := strings.Cut(code, "\n")
	if tag := strings.ToLower(strings.TrimSpace(first)); ok && isTag(tag) && strings.TrimSpace(rest) != "" {
		return tag, rest
	}
	return "", code
}

// assemble cleans the pieces and joins them into one program; a transcript
// becomes the code running its statements as the REPL does.
func assemble(pieces []piece) (code string, blocks int, t *Transcript) {
	var all []Statement
	for i, pc := range pieces {
		if !pc.transcript {
			continue
		}
		kept := pc.stmts[:0:0]
		for _, s := range pc.stmts {
			if src := cleanCode(s.Source); src != "" {
				s.Source = src + "\n"
				kept = append(kept, s)
			}
		}
		pieces[i].stmts = kept
		all = append(all, kept...)
	}
	if len(all) > 0 {
		t = &Transcript{Statements: all, Marker: transcriptMarker(all)}
	}
	var parts []string
	from := 0
	for _, pc := range pieces {
		c := cleanCode(pc.text)
		if pc.transcript && len(pc.stmts) > 0 {
			c = transcriptProgram(pc.stmts, from, t.Marker)
			from += len(pc.stmts)
		}
		if c != "" {
			parts = append(parts, c)
		}
	}
	return strings.Join(parts, "\n"), len(parts), t
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func decode(s string, p Platform) string {
	if p == Slack {
		return slackDecode(s)
	}
	return s
}

type span struct {
	code  string
	whole bool // the span is the whole (trimmed) text
}

// inlineSpans finds inline code spans: a run of one or two backticks closed
// by a run of the same length.
func inlineSpans(text string) []span {
	var spans []span
	trimmed := strings.TrimSpace(text)
	for i := 0; i < len(text); {
		if text[i] != '`' {
			i++
			continue
		}
		n := runLen(text, i, '`')
		if n > 2 {
			i += n
			continue
		}
		from := i + n
		closed := false
		for j := from; j < len(text); {
			if text[j] != '`' {
				j++
				continue
			}
			m := runLen(text, j, '`')
			if m == n {
				body := text[from:j]
				if len(body) >= 2 && body[0] == ' ' && body[len(body)-1] == ' ' && strings.TrimSpace(body) != "" {
					body = body[1 : len(body)-1]
				}
				if strings.TrimSpace(body) != "" {
					spans = append(spans, span{code: body, whole: text[i:j+m] == trimmed})
				}
				i, closed = j+m, true
				break
			}
			j += m
		}
		if !closed {
			i = from
		}
	}
	return spans
}
