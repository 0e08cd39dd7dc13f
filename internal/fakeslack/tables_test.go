package fakeslack

import (
	"strings"
	"testing"
)

// TestTableBlockLimits: a message's table blocks are held to Slack's
// rules, as chat.postMessage answers invalid_blocks.
func TestTableBlockLimits(t *testing.T) {
	row := func(n int, text string) string {
		cells := make([]string, n)
		for i := range cells {
			cells[i] = `{"type":"raw_text","text":"` + text + `"}`
		}
		return "[" + strings.Join(cells, ",") + "]"
	}
	table := func(rows, cols int) string {
		rs := make([]string, rows)
		for i := range rs {
			rs[i] = row(cols, "x")
		}
		return `{"type":"table","rows":[` + strings.Join(rs, ",") + `]}`
	}
	for _, tc := range []struct {
		name, attachments string
		ok                bool
	}{
		{"none", "", true},
		{"at the limits", `[{"blocks":[` + table(TableMaxRows, TableMaxColumns) + `]}]`, true},
		{"too many rows", `[{"blocks":[` + table(TableMaxRows+1, 2) + `]}]`, false},
		{"too many columns", `[{"blocks":[` + table(2, TableMaxColumns+1) + `]}]`, false},
		{"two tables", `[{"blocks":[` + table(2, 2) + `]},{"blocks":[` + table(2, 2) + `]}]`, false},
		{"an empty cell", `[{"blocks":[{"type":"table","rows":[` + row(2, "") + `]}]}]`, false},
	} {
		if got := validTables(tc.attachments); got != tc.ok {
			t.Errorf("%s: valid %v, want %v", tc.name, got, tc.ok)
		}
	}
}
