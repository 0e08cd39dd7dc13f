package notebook_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/formatting/notebook"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// validate fails the test when nb is not valid against nbformat's own
// schema of its minor version, as Debian's python3-nbformat ships it
// (nbformat/v4/nbformat.v4.N.schema.json; 4.4 and 4.5 are kept).
func validate(t *testing.T, nb []byte) {
	t.Helper()
	if err := validity(t, nb); err != nil {
		t.Errorf("%v\n%s", err, nb)
	}
}

// validity is why nb is not valid against nbformat's schema, or nil.
func validity(t *testing.T, nb []byte) error {
	t.Helper()
	var v struct {
		Minor int `json:"nbformat_minor"`
	}
	if err := json.Unmarshal(nb, &v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	name := fmt.Sprintf("nbformat.v4.%d.schema.json", v.Minor)
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(name, doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile(name)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(nb))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if err := schema.Validate(inst); err != nil {
		return fmt.Errorf("not a valid nbformat 4.%d notebook: %w", v.Minor, err)
	}
	return nil
}

// TestSchemaRefusesInvalid: the schema check catches what nbformat
// refuses, so that the tests above can fail.
func TestSchemaRefusesInvalid(t *testing.T) {
	for name, nb := range map[string]string{
		"no metadata":       `{"nbformat": 4, "nbformat_minor": 5, "cells": []}`,
		"no cell id":        `{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "raw", "metadata": {}, "source": ""}]}`,
		"a nameless stream": `{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "code", "id": "a", "metadata": {}, "execution_count": 1, "source": "", "outputs": [{"output_type": "stream", "text": "x"}]}]}`,
	} {
		if validity(t, []byte(nb)) == nil {
			t.Errorf("%s: valid", name)
		}
	}
}

// executed is a notebook as runblock writes it after a run: markdown,
// a cell with output, displays and a value, a failed one, one that timed
// out, one that did not run.
func executed() []notebook.Cell {
	return []notebook.Cell{
		{Kind: notebook.Markdown, Source: "# Sales\nA *table* and a value."},
		{Kind: notebook.Code, Source: "import pandas as pd\nprint('loading')\ndf = pd.DataFrame({'a': [1]})\ndisplay(df)\nprint('done')\nlen(df)", Count: 1,
			Result: &executor.Result{Success: true, Stdout: "loading\ndone\n", Results: []executor.Display{
				{Data: map[string]string{"text/plain": "   a\n0  1", "application/vnd.dataresource+json": `{"schema":{"fields":[{"name":"index","type":"integer"},{"name":"a","type":"integer"}]},"data":[{"index":0,"a":1}],"total_rows":1,"total_columns":1}`}, At: 8},
				{Data: map[string]string{"text/plain": "1", "image/png": "iVBORw0KGgo="}, Value: true, At: 13},
			}}},
		{Kind: notebook.Code, Source: "import warnings\nwarnings.warn('careful')\n1/0", Count: 2,
			Result: &executor.Result{Stderr: "<cell 2>:2: UserWarning: careful\nTraceback (most recent call last):\n  File \"<cell 2>\", line 3, in <module>\nZeroDivisionError: division by zero\n",
				Error: "ZeroDivisionError: division by zero", ExitCode: 1}},
		{Kind: notebook.Code, Source: "while True: pass", Count: 3,
			Result: &executor.Result{Timeout: true, Error: "Execution timed out after 5s (process killed)", ExitCode: -1, Signal: "SIGKILL"}},
		{Kind: notebook.Code, Source: "print('not run')"},
		{Kind: notebook.Raw, Source: "raw text"},
	}
}

// TestWriteExecuted: an executed notebook is valid nbformat 4.5, as the
// golden file shows it, and reads back to the same cells.
func TestWriteExecuted(t *testing.T) {
	cells := executed()
	got, err := notebook.Write(cells)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, got)
	golden := filepath.Join("testdata", "executed.ipynb")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("notebook differs from %s (go test -update):\n%s", golden, got)
	}
	nb, err := notebook.Parse(got)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range nb.Cells {
		if c.Kind != cells[i].Kind || c.Source != cells[i].Source {
			t.Errorf("cell %d read back as %s %q, want %s %q", i+1, c.Kind, c.Source, cells[i].Kind, cells[i].Source)
		}
	}
}

// TestWriteEmptyAndOdd: notebooks of no cells, of empty sources, of
// output that is not UTF-8 at an offset, are valid.
func TestWriteEmptyAndOdd(t *testing.T) {
	for name, cells := range map[string][]notebook.Cell{
		"no cells":     nil,
		"empty source": {{Kind: notebook.Code, Count: 1, Result: &executor.Result{Success: true}}},
		"offset inside a character": {{Kind: notebook.Code, Source: "x", Count: 1, Result: &executor.Result{Success: true, Stdout: "é\n",
			Results: []executor.Display{{Data: map[string]string{"text/plain": "1", "application/json": "not json"}, Value: true, At: 1}}}}},
		"an offset past stdout": {{Kind: notebook.Code, Source: "x", Count: 1, Result: &executor.Result{Success: true, Stdout: "a",
			Results: []executor.Display{{Data: map[string]string{"text/plain": "1"}, At: 99}}}}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := notebook.Write(cells)
			if err != nil {
				t.Fatal(err)
			}
			validate(t, got)
		})
	}
}

// TestParseJupyterNotebooks reads notebooks Jupyter wrote (nbconvert
// --execute, nbformat 4.4 and 4.5; see testdata/README.md).
func TestParseJupyterNotebooks(t *testing.T) {
	files, _ := filepath.Glob("testdata/jupyter-*.ipynb")
	if len(files) == 0 {
		t.Fatal("no testdata/jupyter-*.ipynb")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			validate(t, b)
			nb, err := notebook.Parse(b)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(strings.TrimSuffix(f, ".ipynb") + ".code")
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(nb.Code(), "\n# ---\n"); got != strings.TrimSuffix(string(want), "\n") {
				t.Errorf("code cells:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestParseRejects: what is not an nbformat 4 notebook is refused with a
// reason, never read as one.
func TestParseRejects(t *testing.T) {
	many := `{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [` + strings.Repeat(`{"cell_type": "raw", "source": ""},`, notebook.MaxCells) + `{"cell_type": "raw", "source": ""}]}`
	for _, tt := range []struct {
		name, in, want string
	}{
		{"garbage", "print('hi')", "invalid JSON"},
		{"empty", "", "invalid JSON"},
		{"a list", "[]", "invalid JSON"},
		{"no version", `{"cells": []}`, `no "nbformat" field`},
		{"version 3", `{"nbformat": 3, "nbformat_minor": 0, "worksheets": []}`, "nbformat 3"},
		{"no cells", `{"nbformat": 4, "nbformat_minor": 5, "metadata": {}}`, `no "cells" list`},
		{"a bad source", `{"nbformat": 4, "cells": [{"cell_type": "code", "source": 42}]}`, "cell 1: source is neither"},
		{"an unknown cell", `{"nbformat": 4, "cells": [{"cell_type": "widget", "source": ""}]}`, `cell 1: unknown cell_type "widget"`},
		{"too many cells", many, "1001 cells, over the limit of 1000"},
		{"too large", `{"nbformat": 4, "cells": [], "x": "` + strings.Repeat("x", notebook.MaxBytes) + `"}`, "over the limit"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := notebook.Parse([]byte(tt.in))
			var ne *notebook.Error
			if !errors.As(err, &ne) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want a *notebook.Error saying %q", err, tt.want)
			}
		})
	}
}

// TestParseJoinsSourceLines: a source as a list of lines or one string
// reads the same, and markdown cells are kept.
func TestParseJoinsSourceLines(t *testing.T) {
	nb, err := notebook.Parse([]byte(`{"nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": [
		{"cell_type": "markdown", "metadata": {}, "source": ["# Title\n", "text"]},
		{"cell_type": "code", "metadata": {}, "execution_count": null, "outputs": [], "source": ["x = 1\n", "x + 1"]},
		{"cell_type": "code", "metadata": {}, "execution_count": null, "outputs": [], "source": "print(x)"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := nb.Code(); !slices.Equal(got, []string{"x = 1\nx + 1", "print(x)"}) {
		t.Errorf("code %q", got)
	}
	if len(nb.Cells) != 3 || nb.Cells[0].Kind != notebook.Markdown || nb.Cells[0].Source != "# Title\ntext" {
		t.Errorf("cells %+v", nb.Cells)
	}
}
