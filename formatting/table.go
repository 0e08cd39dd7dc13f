package formatting

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// Table is a display's table ("application/vnd.dataresource+json",
// Table Schema as pandas writes it with orient="table"): the first rows
// and columns the sandbox sent, the index first, and the whole table's
// size.
type Table struct {
	Columns []string
	// Numeric columns are aligned right.
	Numeric []bool
	Rows    [][]string
	// TotalRows and TotalColumns are the whole table's, index aside.
	TotalRows, TotalColumns int
	index                   int // leading index columns
}

// How much of a table the text form shows: rows, and characters a line
// on each platform (a Discord code block wraps past about 80 on a
// desktop).
const (
	tableTextRows = 10
	consoleRows   = 30
)

func (p Platform) tableWidth() int {
	switch p {
	case Discord:
		return 72
	case Slack:
		return 100
	}
	return 120
}

// parseTable reads a dataresource; false when s is not one.
func parseTable(s string) (Table, bool) {
	if s == "" {
		return Table{}, false
	}
	var doc struct {
		Schema struct {
			Fields []struct {
				Name json.RawMessage `json:"name"` // a string, or a number: a column named 0
				Type string          `json:"type"`
			} `json:"fields"`
			PrimaryKey []string `json:"primaryKey"`
		} `json:"schema"`
		Data         []map[string]json.RawMessage `json:"data"`
		TotalRows    *int                         `json:"total_rows"`
		TotalColumns *int                         `json:"total_columns"`
	}
	if err := json.Unmarshal([]byte(s), &doc); err != nil || len(doc.Schema.Fields) == 0 {
		return Table{}, false
	}
	var t Table
	names := make([]string, len(doc.Schema.Fields))
	for i, f := range doc.Schema.Fields {
		names[i] = fieldName(f.Name)
		name := names[i]
		isIndex := false
		for _, k := range doc.Schema.PrimaryKey {
			isIndex = isIndex || k == name
		}
		if isIndex {
			t.index++
			if name == "index" {
				name = ""
			}
		}
		t.Columns = append(t.Columns, name)
		t.Numeric = append(t.Numeric, f.Type == "integer" || f.Type == "number")
	}
	for _, row := range doc.Data {
		cells := make([]string, len(doc.Schema.Fields))
		for i, name := range names {
			cells[i] = cellText(row[name])
		}
		t.Rows = append(t.Rows, cells)
	}
	t.TotalRows, t.TotalColumns = len(t.Rows), len(t.Columns)-t.index
	if doc.TotalRows != nil {
		t.TotalRows = *doc.TotalRows
	}
	if doc.TotalColumns != nil {
		t.TotalColumns = *doc.TotalColumns
	}
	return t, true
}

// fieldName is a field's name as the keys of the rows have it.
func fieldName(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(bytes.TrimSpace(raw))
}

// cellText is a JSON value as pandas shows it: a string as it is, null as
// NaN, anything else as its JSON.
func cellText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return "NaN"
	case raw[0] == '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return escapeControls(s)
		}
	}
	return escapeControls(string(raw))
}

// shown returns how many rows and columns (index included) of t the text
// form on p shows.
func (t Table) shown(p Platform) (rows, cols int) {
	rows = min(len(t.Rows), tableTextRows)
	if p == Console {
		rows = min(len(t.Rows), consoleRows)
	}
	width := 0
	for c := range t.Columns {
		w := t.columnWidth(c, rows)
		if c > 0 {
			w += 2
		}
		if c > t.index && width+w > p.tableWidth() {
			break
		}
		width += w
		cols = c + 1
	}
	return rows, cols
}

func (t Table) columnWidth(c, rows int) int {
	w := utf8.RuneCountInString(t.Columns[c])
	for _, row := range t.Rows[:rows] {
		w = max(w, utf8.RuneCountInString(row[c]))
	}
	return w
}

// text is t as aligned monospace lines within the platform's width.
func (t Table) text(p Platform) []string {
	rows, cols := t.shown(p)
	widths := make([]int, cols)
	for c := range widths {
		widths[c] = t.columnWidth(c, rows)
	}
	line := func(cells []string) string {
		var b strings.Builder
		for c, cell := range cells[:cols] {
			if c > 0 {
				b.WriteString("  ")
			}
			pad := strings.Repeat(" ", widths[c]-utf8.RuneCountInString(cell))
			if t.Numeric[c] {
				b.WriteString(pad + cell)
			} else {
				b.WriteString(cell + pad)
			}
		}
		return strings.TrimRight(b.String(), " ")
	}
	out := []string{line(t.Columns)}
	for _, row := range t.Rows[:rows] {
		out = append(out, line(row))
	}
	return out
}

// notShown says how many rows and columns of the whole table the text
// form on p leaves out, "" for none.
func (t Table) notShown(p Platform) string {
	rows, cols := t.shown(p)
	return notShown(t.TotalRows-rows, t.TotalColumns-(cols-t.index))
}

func notShown(rows, cols int) string {
	var parts []string
	if rows > 0 {
		parts = append(parts, plural(rows, "row"))
	}
	if cols > 0 {
		parts = append(parts, plural(cols, "column"))
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, " and ") + " not shown"
}

// CSV is the rows of t the sandbox sent, as comma-separated values.
func (t Table) CSV() string {
	var b strings.Builder
	w := csv.NewWriter(&b)
	_ = w.Write(t.Columns) // a strings.Builder takes every write
	_ = w.WriteAll(t.Rows)
	return b.String()
}

// Slack's table block takes at most 100 rows, the header's included, and
// 20 cells a row.
const (
	SlackTableRows    = 100
	SlackTableColumns = 20
)

// Slack returns t within the table block's limits: its header and first
// rows, its index and first columns.
func (t Table) Slack() Table {
	cols := min(len(t.Columns), SlackTableColumns)
	rows := min(len(t.Rows), SlackTableRows-1)
	out := Table{Columns: t.Columns[:cols], Numeric: t.Numeric[:cols], TotalRows: t.TotalRows, TotalColumns: t.TotalColumns, index: t.index}
	for _, r := range t.Rows[:rows] {
		out.Rows = append(out.Rows, r[:cols])
	}
	return out
}

// Cut reports whether t holds less than the whole table.
func (t Table) Cut() bool {
	return len(t.Rows) < t.TotalRows || len(t.Columns)-t.index < t.TotalColumns
}

// slackNote is the line of a reply whose table is its native table,
// below the text: its size, and what it does not show.
func (t Table) slackNote() string {
	s := t.Slack()
	note := "table below: " + plural(t.TotalRows, "row") + " × " + plural(t.TotalColumns, "column")
	if n := notShown(t.TotalRows-len(s.Rows), t.TotalColumns-(len(s.Columns)-s.index)); n != "" {
		note += ", " + n
	}
	return note
}
