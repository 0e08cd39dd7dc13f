// Package notebook reads and writes Jupyter notebooks (nbformat 4): the
// cells of a notebook to run, and a run's cells as an executed notebook.
// It is pure: bytes in, bytes out.
package notebook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/runblock/runblock/executor"
)

// Bounds of a notebook Parse reads.
const (
	MaxBytes = 16 << 20
	MaxCells = 1000
)

// Cell kinds, nbformat's cell_type.
const (
	Code     = "code"
	Markdown = "markdown"
	Raw      = "raw"
)

// Cell is one cell of a notebook. Count and Result are those of a code
// cell that ran (Count 0: it did not); Parse leaves them empty.
type Cell struct {
	Kind   string
	Source string
	Count  int
	Result *executor.Result
}

// Notebook is a notebook's cells, in order.
type Notebook struct {
	Cells []Cell
}

// Code is the sources of the notebook's code cells, in order.
func (nb Notebook) Code() []string {
	var code []string
	for _, c := range nb.Cells {
		if c.Kind == Code {
			code = append(code, c.Source)
		}
	}
	return code
}

// Error says why bytes are not a notebook this package reads.
type Error struct {
	Reason string
}

func (e *Error) Error() string { return "not a Jupyter notebook (nbformat 4): " + e.Reason }

func errorf(format string, args ...any) *Error { return &Error{Reason: fmt.Sprintf(format, args...)} }

// Parse reads an nbformat 4 notebook: its cells' kinds and sources. Other
// versions, garbage and notebooks over MaxBytes or MaxCells are an *Error.
func Parse(b []byte) (Notebook, error) {
	if len(b) > MaxBytes {
		return Notebook{}, errorf("%d bytes, over the limit of %d", len(b), MaxBytes)
	}
	var raw struct {
		NBFormat *int `json:"nbformat"`
		Cells    *[]struct {
			Kind   string          `json:"cell_type"`
			Source json.RawMessage `json:"source"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return Notebook{}, errorf("invalid JSON: %v", err)
	}
	switch {
	case raw.NBFormat == nil:
		return Notebook{}, errorf("no \"nbformat\" field")
	case *raw.NBFormat != 4:
		return Notebook{}, errorf("nbformat %d (save it as version 4, as Jupyter does since 2015)", *raw.NBFormat)
	case raw.Cells == nil:
		return Notebook{}, errorf("no \"cells\" list")
	case len(*raw.Cells) > MaxCells:
		return Notebook{}, errorf("%d cells, over the limit of %d", len(*raw.Cells), MaxCells)
	}
	var nb Notebook
	for i, c := range *raw.Cells {
		if c.Kind != Code && c.Kind != Markdown && c.Kind != Raw {
			return Notebook{}, errorf("cell %d: unknown cell_type %.40q", i+1, c.Kind)
		}
		src, err := source(c.Source)
		if err != nil {
			return Notebook{}, errorf("cell %d: %v", i+1, err)
		}
		nb.Cells = append(nb.Cells, Cell{Kind: c.Kind, Source: src})
	}
	return nb, nil
}

// source is a multiline string: a string, or a list of strings joined.
func source(b json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(b, &s) == nil {
		return s, nil
	}
	var lines []string
	if err := json.Unmarshal(b, &lines); err != nil {
		return "", fmt.Errorf("source is neither a string nor a list of strings")
	}
	return strings.Join(lines, ""), nil
}

// Write is cells as an executed nbformat 4.5 notebook for a python3
// kernel: each cell with its source, a code cell that ran with its
// execution count and outputs (its stdout as streams split where each of
// its displays was shown, the displays as display_data and its value as
// execute_result, then its stderr as a stream, and an error for a failed
// run, its traceback taken from stderr).
func Write(cells []Cell) ([]byte, error) {
	nb := notebook{
		Cells: make([]any, 0, len(cells)),
		Metadata: map[string]any{
			"kernelspec":    map[string]string{"display_name": "Python 3", "language": "python", "name": "python3"},
			"language_info": map[string]string{"name": "python"},
		},
		NBFormat: 4, NBFormatMinor: 5,
	}
	for i, c := range cells {
		id := "cell-" + strconv.Itoa(i+1)
		if c.Kind != Code {
			kind := c.Kind
			if kind != Markdown {
				kind = Raw
			}
			nb.Cells = append(nb.Cells, textCell{ID: id, Kind: kind, Metadata: map[string]any{}, Source: lines(c.Source)})
			continue
		}
		cc := codeCell{ID: id, Kind: Code, Metadata: map[string]any{}, Source: lines(c.Source), Outputs: []any{}}
		if c.Count > 0 {
			cc.Count = &c.Count
		}
		if c.Result != nil {
			cc.Outputs = outputs(*c.Result, c.Count)
		}
		nb.Cells = append(nb.Cells, cc)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", " ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(nb); err != nil {
		return nil, fmt.Errorf("encode the notebook: %w", err)
	}
	return buf.Bytes(), nil
}

type notebook struct {
	Cells         []any          `json:"cells"`
	Metadata      map[string]any `json:"metadata"`
	NBFormat      int            `json:"nbformat"`
	NBFormatMinor int            `json:"nbformat_minor"`
}

type textCell struct {
	Kind     string         `json:"cell_type"`
	ID       string         `json:"id"`
	Metadata map[string]any `json:"metadata"`
	Source   []string       `json:"source"`
}

type codeCell struct {
	Kind     string         `json:"cell_type"`
	Count    *int           `json:"execution_count"`
	ID       string         `json:"id"`
	Metadata map[string]any `json:"metadata"`
	Outputs  []any          `json:"outputs"`
	Source   []string       `json:"source"`
}

type stream struct {
	Type string   `json:"output_type"`
	Name string   `json:"name"`
	Text []string `json:"text"`
}

type display struct {
	Type     string         `json:"output_type"`
	Count    *int           `json:"execution_count,omitempty"`
	Data     map[string]any `json:"data"`
	Metadata map[string]any `json:"metadata"`
}

type failure struct {
	Type      string   `json:"output_type"`
	Name      string   `json:"ename"`
	Value     string   `json:"evalue"`
	Traceback []string `json:"traceback"`
}

// outputs are a run's outputs, as Jupyter records them.
func outputs(res executor.Result, count int) []any {
	out := []any{}
	from := 0
	for _, d := range res.Results {
		at := Offset(res.Stdout, d.At)
		if at > from {
			out = append(out, stream{Type: "stream", Name: "stdout", Text: lines(res.Stdout[from:at])})
			from = at
		}
		o := display{Type: "display_data", Data: bundle(d.Data), Metadata: map[string]any{}}
		if d.Value {
			o.Type, o.Count = "execute_result", &count
		}
		out = append(out, o)
	}
	if from < len(res.Stdout) {
		out = append(out, stream{Type: "stream", Name: "stdout", Text: lines(res.Stdout[from:])})
	}
	stderr, tb := res.Stderr, ""
	if !res.Success {
		if i := strings.LastIndex(stderr, "Traceback (most recent call last):"); i >= 0 {
			stderr, tb = stderr[:i], stderr[i:]
		}
	}
	if stderr != "" {
		out = append(out, stream{Type: "stream", Name: "stderr", Text: lines(stderr)})
	}
	if !res.Success {
		name, value := "Error", res.Error
		if n, v, ok := strings.Cut(res.Error, ": "); ok && identifier(n) {
			name, value = n, v
		} else if identifier(res.Error) {
			name, value = res.Error, ""
		}
		trace := strings.Split(strings.TrimRight(tb, "\n"), "\n")
		if tb == "" {
			trace = []string{res.Error}
		}
		out = append(out, failure{Type: "error", Name: name, Value: value, Traceback: trace})
	}
	return out
}

// bundle is a display's data as nbformat holds it: JSON types as JSON,
// base64 images as one string as Jupyter writes them, the others as
// multiline strings; a JSON form that is not JSON is left out.
func bundle(data map[string]string) map[string]any {
	b := make(map[string]any, len(data))
	for mime, v := range data {
		switch {
		case isJSON(mime):
			if json.Valid([]byte(v)) {
				b[mime] = json.RawMessage(v)
			}
		case strings.HasPrefix(mime, "image/") && mime != "image/svg+xml":
			b[mime] = v
		default:
			b[mime] = lines(v)
		}
	}
	return b
}

// isJSON reports whether nbformat holds mime's data as JSON
// (application/json, application/*+json).
func isJSON(mime string) bool {
	sub, ok := strings.CutPrefix(mime, "application/")
	return ok && (sub == "json" || strings.HasSuffix(sub, "+json"))
}

// Offset is a display's stdout offset within stdout as kept: at most its
// length, at the start of a character.
func Offset(stdout string, at int64) int {
	i := min(int(max(at, 0)), len(stdout))
	for i > 0 && i < len(stdout) && !utf8.RuneStart(stdout[i]) {
		i--
	}
	return i
}

// identifier reports whether s is a Python exception's name
// (ZeroDivisionError, json.decoder.JSONDecodeError).
func identifier(s string) bool {
	if s == "" {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if part == "" || (part[0] >= '0' && part[0] <= '9') {
			return false
		}
		for _, r := range part {
			if r != '_' && !('a' <= r && r <= 'z') && !('A' <= r && r <= 'Z') && !('0' <= r && r <= '9') {
				return false
			}
		}
	}
	return true
}

// lines is s as nbformat's multiline string: its lines, each with its
// newline.
func lines(s string) []string {
	out := []string{}
	for s != "" {
		i := strings.IndexByte(s, '\n') + 1
		if i == 0 {
			i = len(s)
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}
