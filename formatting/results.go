package formatting

import (
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/runblock/runblock/executor"
)

// Rich output (executor.Result.Results), as a notebook shows it: each
// display among the printed output at its offset, in the form the
// platform shows best (a table as aligned text, markdown as the
// platform's, an image as an attached file, else the plain form; HTML is
// never sent), and the last expression's value after the output under
// "Out[n]:", n the cell's number (RenderOptions.Cell).

// MIME types of the rich output that formatting reads.
const (
	mimePlain    = "text/plain"
	mimePNG      = "image/png"
	mimeSVG      = "image/svg+xml"
	mimeMarkdown = "text/markdown"
	mimeTable    = "application/vnd.dataresource+json"
)

// noSVG stands for an SVG image with no PNG form: no renderer here.
const noSVG = "[an SVG image: not shown, as there is no SVG renderer here]"

// lineKind tells how a line of the output view is shown.
type lineKind uint8

const (
	kindOutput   lineKind = iota // printed output, in the code block
	kindMarkdown                 // a display's markdown, out of the block
	kindNote                     // a remark of ours ("Out[3]:"), out of the block
)

// ResultFiles returns the images among res's displays, as files to
// attach as plots are: "display-1.png", numbered in display order.
func ResultFiles(res executor.Result) []executor.File {
	var files []executor.File
	for i, d := range res.Results {
		png, err := base64.StdEncoding.DecodeString(d.Data[mimePNG])
		if err != nil || len(png) == 0 {
			continue
		}
		name := "display-" + strconv.Itoa(i+1) + ".png"
		if d.Value {
			name = "out.png"
		}
		files = append(files, executor.File{Path: name, Size: int64(len(png)), MIME: mimePNG, Content: png})
	}
	return files
}

// outputLines returns the lines of res's stdout with its displays placed
// at their offsets, and the last expression's value after them, each
// line with its kind and, on Discord, its style.
func (r *result) outputLines(stdout string, displays []executor.Display, cell int) {
	at := 0
	var value *executor.Display
	for i := range displays {
		d := &displays[i]
		if d.Value {
			value = d
			continue
		}
		cut := min(max(int(d.At), at), len(stdout))
		r.addOutput(stdout[at:cut])
		at = cut
		r.addDisplay(*d)
	}
	r.addOutput(stdout[at:])
	if value == nil {
		return
	}
	label := "Out:"
	if cell > 0 {
		label = "Out[" + strconv.Itoa(cell) + "]:"
	}
	r.add(kindNote, label, nil)
	r.addDisplay(*value)
}

// addOutput adds printed output.
func (r *result) addOutput(out string) {
	lines, spans := styledLines(r.p, out)
	for i, l := range lines {
		var s []styleSpan
		if i < len(spans) {
			s = spans[i]
		}
		r.add(kindOutput, l, s)
	}
}

// addDisplay adds the form of d the platform shows best.
func (r *result) addDisplay(d executor.Display) {
	if t, ok := parseTable(d.Data[mimeTable]); ok {
		if r.p == Slack && len(r.tables) == 0 { // one native table a message
			r.tables = append(r.tables, t)
			r.add(kindNote, t.slackNote(), nil)
			return
		}
		for _, l := range t.text(r.p) {
			r.add(kindOutput, l, nil)
		}
		if n := t.notShown(r.p); n != "" {
			r.add(kindNote, n, nil)
		}
		return
	}
	plain := d.Data[mimePlain]
	switch md := d.Data[mimeMarkdown]; {
	case md != "" && r.p != Console:
		for _, l := range splitLines(cleanOutput(md)) {
			r.add(kindMarkdown, l, nil)
		}
		return
	case md != "":
		plain = md
	case d.Data[mimePNG] != "" && isDefaultRepr(plain):
		return // the image, attached, is the whole of it
	case d.Data[mimeSVG] != "" && d.Data[mimePNG] == "":
		r.add(kindNote, noSVG, nil)
		if isDefaultRepr(plain) {
			return
		}
	}
	r.addOutput(plain + "\n")
}

// isDefaultRepr reports whether plain is Python's default repr of an
// object ("<PIL.Image.Image image mode=RGB size=8x8>"), which says
// nothing an attached image does not.
func isDefaultRepr(plain string) bool {
	plain = strings.TrimSpace(plain)
	return plain == "" || strings.HasPrefix(plain, "<") && strings.HasSuffix(plain, ">") && !strings.Contains(plain, "\n")
}

func (r *result) add(k lineKind, line string, spans []styleSpan) {
	r.stdout = append(r.stdout, line)
	r.outKinds = append(r.outKinds, k)
	if spans != nil {
		for len(r.outSpans) < len(r.stdout)-1 {
			r.outSpans = append(r.outSpans, nil)
		}
		r.outSpans = append(r.outSpans, spans)
	}
}

// markdown makes a line of a display's markdown safe on p exactly as
// output is (neutralize: no fence it could break, no Slack markup; on
// Discord no mention either), in
// the platform's markdown: Slack's bold is one star, its heading a bold
// line.
func markdown(p Platform, line string) string {
	if p == Slack {
		if h := strings.TrimLeft(line, "#"); h != line && strings.HasPrefix(h, " ") {
			line = "**" + strings.TrimSpace(h) + "**"
		}
		line = strings.ReplaceAll(line, "**", "*")
	}
	if p == Discord { // no mention pill, even one that pings no one
		line = strings.ReplaceAll(line, "@", "@"+zwsp)
	}
	return neutralize(p, line)
}

// atEnd returns displays placed after all of the output.
func atEnd(displays []executor.Display, n int) []executor.Display {
	out := make([]executor.Display, len(displays))
	for i, d := range displays {
		d.At = int64(n)
		out[i] = d
	}
	return out
}

// blocks writes the lines of the output view: the printed lines as code
// blocks, a display's markdown and our notes between them.
func (r result) blocks(b *strings.Builder, lines []string, kinds []lineKind, spans [][]styleSpan) {
	for start := 0; start < len(lines); {
		end := start + 1
		for end < len(lines) && kinds[end] == kinds[start] {
			end++
		}
		switch kinds[start] {
		case kindOutput:
			r.block(b, lines[start:end], tail(spans, start))
		case kindMarkdown:
			for _, l := range lines[start:end] {
				r.line(b, markdown(r.p, l))
			}
		case kindNote:
			for _, l := range lines[start:end] {
				r.line(b, r.note(l))
			}
		}
		start = end
	}
}
