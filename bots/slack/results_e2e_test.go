package slack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/runblock/runblock/bots/internal/answer"
	"github.com/runblock/runblock/internal/fakeslack"
)

// tableRows returns the rows of the table block in a reply's attachments,
// as text.
func tableRows(t *testing.T, attachments string) [][]string {
	t.Helper()
	var atts []struct {
		Blocks []struct {
			Type string `json:"type"`
			Rows [][]struct {
				Text string `json:"text"`
			} `json:"rows"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal([]byte(attachments), &atts); err != nil {
		t.Fatalf("attachments %q: %v", attachments, err)
	}
	var rows [][]string
	for _, a := range atts {
		for _, b := range a.Blocks {
			for _, r := range b.Rows {
				if b.Type != "table" {
					continue
				}
				var cells []string
				for _, c := range r {
					cells = append(cells, c.Text)
				}
				rows = append(rows, cells)
			}
		}
	}
	return rows
}

// TestPythonDataFrameIsATable: with real Python, a DataFrame a run shows
// is a native table block under the reply, the text saying so, and the
// last expression's value follows the output; a wide and long one keeps
// to the table block's limits, its rows as table.csv beside the reply.
func TestPythonDataFrameIsATable(t *testing.T) {
	t.Parallel()
	h := start(t, Config{}, sciPython(t, "pandas"), true)
	ch := h.channel()
	m := h.mention(ch, h.user(), "```python\nimport pandas as pd\ndisplay(pd.DataFrame({'name': ['ada', 'bob'], 'score': [9.5, 7]}))\nx = 41\nx + 1\n```")
	r := h.reply(m, "42")
	if !strings.Contains(r.Text, "_table below: 2 rows × 2 columns_") || !strings.Contains(r.Text, "_Out[1]:_\n```\n42\n```") {
		t.Fatalf("reply %q", r.Text)
	}
	rows := tableRows(t, r.Attachments)
	if got := fmtRows(rows); got != "[  name score] [0 ada 9.5] [1 bob 7.0]" {
		t.Fatalf("table rows %s", got)
	}

	m = h.mention(ch, h.user(), "```python\nimport pandas as pd\npd.DataFrame([[i * j for j in range(30)] for i in range(500)])\n```")
	r = h.reply(m, "table below")
	if !strings.Contains(r.Text, "500 rows × 30 columns, 401 rows and 11 columns not shown") {
		t.Fatalf("reply %q", r.Text)
	}
	if rows := tableRows(t, r.Attachments); len(rows) != 100 || len(rows[0]) != 20 {
		t.Fatalf("a table of %d rows of %d cells", len(rows), len(rows[0]))
	}
	files := waitFiles(t, h, ch, m.TS, "table.csv")
	if s := string(files[0].Content); !strings.HasPrefix(s, ",0,1,2,") || strings.Count(s, "\n") != 101 {
		t.Fatalf("table.csv: %q…", s[:min(40, len(s))])
	}
}

func fmtRows(rows [][]string) string {
	var parts []string
	for _, r := range rows {
		parts = append(parts, "["+strings.Join(r, " ")+"]")
	}
	return strings.Join(parts, " ")
}

// TestPythonExportANotebook: "@runblock export" in a thread posts the
// thread's session as a notebook, valid against nbformat's v4.5 schema,
// one code cell per cell with its source, outputs and number.
func TestPythonExportANotebook(t *testing.T) {
	t.Parallel()
	sched, m := sessionPython(t, 60*time.Second)
	h := start(t, Config{End: m.End}, sched, true)
	ch, ada := h.channel(), h.user()
	c1 := h.say(ch, "", ada, py("x = 41\nprint('set')"))
	h.cell(c1, "[1]", "set")
	h.cell(h.say(ch, c1.TS, ada, py("x + 1")), "[2]", "42")
	h.say(ch, c1.TS, ada, "export")
	raw := waitFiles(t, h, ch, c1.TS, answer.ExportName)[0].Content
	// /run export names no thread: it exports the session the user last
	// ran a cell in, in that channel, into its thread.
	h.fake.SendSlashCommand(map[string]string{"command": "/run", "text": "export", "user_id": ada, "channel_id": ch, "response_url": h.fake.ResponseURL()})
	if _, err := h.fake.WaitFiles(h.ctx, ch, c1.TS, func(fs []fakeslack.File) bool {
		n := 0
		for _, f := range fs {
			if f.Filename == answer.ExportName {
				n++
			}
		}
		return n == 2
	}); err != nil {
		t.Fatalf("/run export: %v", err)
	}

	schemaPath := filepath.Join("..", "..", "formatting", "notebook", "testdata", "nbformat.v4.5.schema.json")
	f, err := os.Open(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("nbformat.json", doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("nbformat.json")
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	if err := schema.Validate(inst); err != nil {
		t.Fatalf("not a valid notebook: %v\n%s", err, raw)
	}
	var nb struct {
		Cells []struct {
			Source  []string `json:"source"`
			Count   int      `json:"execution_count"`
			Outputs []struct {
				Type string         `json:"output_type"`
				Text []string       `json:"text"`
				Data map[string]any `json:"data"`
			} `json:"outputs"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(raw, &nb); err != nil {
		t.Fatal(err)
	}
	if len(nb.Cells) != 2 || nb.Cells[0].Count != 1 || nb.Cells[1].Count != 2 || strings.Join(nb.Cells[1].Source, "") != "x + 1" {
		t.Fatalf("cells %+v", nb.Cells)
	}
	if o := nb.Cells[0].Outputs; len(o) != 1 || o[0].Type != "stream" || strings.Join(o[0].Text, "") != "set\n" {
		t.Fatalf("the first cell's outputs %+v", o)
	}
	if o := nb.Cells[1].Outputs; len(o) != 1 || o[0].Type != "execute_result" || fmt.Sprint(o[0].Data["text/plain"]) != "[42]" {
		t.Fatalf("the second cell's outputs %+v", o)
	}
}

// TestPythonImportANotebook: a notebook attached to a mention runs its
// code cells in order as the thread's session (a later message sees its
// state); the reply sums up each cell and carries the executed notebook.
func TestPythonImportANotebook(t *testing.T) {
	t.Parallel()
	sched, m := sessionPython(t, 60*time.Second)
	h := start(t, Config{End: m.End}, sched, true)
	ch, ada := h.channel(), h.user()
	nb := `{"nbformat":4,"nbformat_minor":5,"metadata":{},"cells":[` +
		`{"cell_type":"markdown","metadata":{},"source":["# Demo"]},` +
		`{"cell_type":"code","metadata":{},"execution_count":null,"outputs":[],"source":["x = 41\n","print('set')"]},` +
		`{"cell_type":"code","metadata":{},"execution_count":null,"outputs":[],"source":["x + 1"]}]}`
	file := h.fake.AddUserFile(fakeslack.UserFile{Name: "demo.ipynb", Mimetype: "application/json", Content: []byte(nb), Size: -1})
	msg := h.say(ch, "", ada, "run this notebook", file)
	r := h.reply(msg, "Ran 2 cells")
	for _, want := range []string{"[1]", "set", "[2]", "_Out[2]:_\n```\n42\n```"} {
		if !strings.Contains(r.Text, want) {
			t.Fatalf("reply %q, want %q in it", r.Text, want)
		}
	}
	raw := waitFiles(t, h, ch, msg.TS, "demo.ipynb")[0].Content
	var out struct {
		Cells []struct {
			Kind    string `json:"cell_type"`
			Count   int    `json:"execution_count"`
			Outputs []any  `json:"outputs"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Cells) != 3 || out.Cells[0].Kind != "markdown" || out.Cells[2].Count != 2 || len(out.Cells[2].Outputs) != 1 {
		t.Fatalf("executed notebook %s", raw)
	}
	h.cell(h.say(ch, msg.TS, ada, py("print(x * 2)")), "[3]", "82")
}
