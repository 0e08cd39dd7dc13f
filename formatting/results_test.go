package formatting

import (
	"encoding/base64"
	"strconv"
	"strings"
	"testing"

	"github.com/runblock/runblock/executor"
)

// tableJSON is a dataresource as the sandbox sends a DataFrame's: 3 of
// its 250 rows, 2 of its 30 columns.
const tableJSON = `{"schema":{"fields":[{"name":"index","type":"integer"},{"name":"name","type":"string"},{"name":"score","type":"number"}],"primaryKey":["index"],"pandas_version":"1.4.0"},` +
	`"data":[{"index":0,"name":"ada","score":9.5},{"index":1,"name":"bob","score":null},{"index":2,"name":"charlotte","score":10}],"total_rows":250,"total_columns":30}`

var png = base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\nfake"))

// TestRenderResults: a cell's displays among its output and its value
// after it, in the form each platform shows best (golden files under
// testdata/results).
func TestRenderResults(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stdout  string
		results []executor.Display
	}{
		{"value", "", []executor.Display{{Data: map[string]string{mimePlain: "42"}, Value: true}}},
		{"display-among-output", "before\nafter\n", []executor.Display{
			{Data: map[string]string{mimePlain: "shown"}, At: 7},
			{Data: map[string]string{mimePlain: "'last'"}, Value: true, At: 13}}},
		{"table", "", []executor.Display{{Data: map[string]string{mimePlain: "      name  score\n0 ...", "text/html": "<table>", mimeTable: tableJSON}, Value: true}}},
		{"markdown", "", []executor.Display{{Data: map[string]string{mimePlain: "<IPython.core.display.Markdown object>",
			mimeMarkdown: "# Title\n**bold** <@U1> @everyone <!channel>\n```\nunclosed fence"}}}},
		{"image", "", []executor.Display{{Data: map[string]string{mimePlain: "<PIL.Image.Image image mode=RGB size=8x8>", mimePNG: png}, Value: true}}},
		{"sympy", "", []executor.Display{{Data: map[string]string{mimePlain: " 3\nx \n──\n3 ", "text/latex": `$\displaystyle \frac{x^{3}}{3}$`, mimePNG: png}, Value: true}}},
		{"svg-alone", "", []executor.Display{{Data: map[string]string{mimePlain: "<Drawing>", mimeSVG: "<svg/>"}}}},
		{"html-alone", "", []executor.Display{{Data: map[string]string{mimePlain: "Styled(3 rows)", "text/html": "<b>x</b>"}}}},
	} {
		for _, p := range []Platform{Discord, Slack, Console} {
			res := executor.Result{Success: true, Stdout: tc.stdout, Results: tc.results}
			r := Render(p, res, RenderOptions{Header: "[3]", Cell: 3, MaxLines: 30})
			golden(t, "results/"+tc.name+"."+p.String()+".txt", r.Text+"\n")
		}
	}
}

func TestResultFiles(t *testing.T) {
	res := executor.Result{Results: []executor.Display{
		{Data: map[string]string{mimePlain: "x"}},
		{Data: map[string]string{mimePlain: "<img>", mimePNG: png}},
		{Data: map[string]string{mimePlain: "<img>", mimePNG: "not base64!"}},
		{Data: map[string]string{mimePlain: "<img>", mimePNG: png}, Value: true},
	}}
	var names []string
	for _, f := range ResultFiles(res) {
		if !strings.HasPrefix(string(f.Content), "\x89PNG") || f.MIME != "image/png" {
			t.Fatalf("%s: %q %s", f.Path, f.Content, f.MIME)
		}
		names = append(names, f.Path)
	}
	if strings.Join(names, " ") != "display-2.png out.png" {
		t.Fatalf("files %v", names)
	}
}

// TestTableWithinWidth: a wide table's text keeps to the platform's
// width and says how many columns it leaves out.
func TestTableWithinWidth(t *testing.T) {
	var fields, cells []string
	for i := range 20 {
		name := "column_" + strings.Repeat("x", i%3) + string(rune('a'+i))
		fields = append(fields, `{"name":"`+name+`","type":"integer"}`)
		cells = append(cells, `"`+name+`":123456`)
	}
	doc := `{"schema":{"fields":[{"name":"index","type":"integer"},` + strings.Join(fields, ",") + `],"primaryKey":["index"]},"data":[{"index":0,` + strings.Join(cells, ",") + `}],"total_rows":1,"total_columns":20}`
	tab, ok := parseTable(doc)
	if !ok {
		t.Fatal("not parsed")
	}
	for _, p := range []Platform{Discord, Slack, Console} {
		for _, l := range tab.text(p) {
			if n := len([]rune(l)); n > p.tableWidth() {
				t.Errorf("%v: a line of %d characters, over %d: %q", p, n, p.tableWidth(), l)
			}
		}
		if n := tab.notShown(p); !strings.HasSuffix(n, "columns not shown") {
			t.Errorf("%v: %q", p, n)
		}
	}
}

// TestSlackTableWithinLimits: the table Slack gets keeps to its table
// block's 100 rows (the header's included) and 20 cells a row.
func TestSlackTableWithinLimits(t *testing.T) {
	var fields []string
	for i := range 25 {
		fields = append(fields, `{"name":"c`+strconv.Itoa(i)+`","type":"string"}`)
	}
	var rows []string
	for i := range 150 {
		rows = append(rows, `{"index":`+strconv.Itoa(i)+`,"c0":"a, \"b\""}`)
	}
	doc := `{"schema":{"fields":[{"name":"index","type":"integer"},` + strings.Join(fields, ",") + `],"primaryKey":["index"]},"data":[` + strings.Join(rows, ",") + `],"total_rows":1000,"total_columns":25}`
	tab, ok := parseTable(doc)
	if !ok {
		t.Fatal("not parsed")
	}
	s := tab.Slack()
	if len(s.Rows)+1 != SlackTableRows || len(s.Columns) != SlackTableColumns || !s.Cut() {
		t.Fatalf("%d rows and a header, %d columns, cut %v", len(s.Rows), len(s.Columns), s.Cut())
	}
	for _, r := range s.Rows {
		if len(r) != SlackTableColumns {
			t.Fatalf("a row of %d cells", len(r))
		}
	}
	if n := tab.slackNote(); n != "table below: 1000 rows × 25 columns, 901 rows and 6 columns not shown" {
		t.Fatalf("note %q", n)
	}
	if csv := tab.CSV(); !strings.HasPrefix(csv, ",c0,c1,") || !strings.Contains(csv, "\n0,\"a, \"\"b\"\"\",") {
		t.Fatalf("csv %q", csv[:80])
	}
}
