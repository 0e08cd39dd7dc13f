package formatting

import (
	"strconv"
	"strings"
	"testing"

	"github.com/runblock/runblock/executor"
)

func BenchmarkRender(b *testing.B) {
	cases := map[string]executor.Result{
		"short":       {Success: true, Stdout: "hello\n"},
		"long_lines":  {Success: true, Stdout: lines(2000, "line %d")},
		"escape_fit":  {Success: true, Stdout: strings.Repeat("`", 1000)},
		"huge_stream": {Stdout: strings.Repeat("x", 64<<10), Stderr: guardTraceback, Error: "E"},
	}
	for name, res := range cases {
		for _, p := range []Platform{Slack, Discord} {
			b.Run(name+"/"+p.String(), func(b *testing.B) {
				for b.Loop() {
					Render(p, res, RenderOptions{})
				}
			})
		}
	}
}

func BenchmarkExtract(b *testing.B) {
	msg := "please run\n```python\n" + strings.Repeat("print(\u201chi\u201d)\u00a0# ok\n", 200) + "```\n```stdin\n1\n```"
	for b.Loop() {
		Extract(msg, ExtractOptions{Platform: Slack, Triggered: true})
	}
}

// BenchmarkExtractLarge: messages of many fences, unmatched backticks or
// quotes stay linear (a console message or modal may be large).
func BenchmarkExtractLarge(b *testing.B) {
	cases := map[string]string{
		"fences":         strings.Repeat("```py\nx\n```", 50000) + " ~~~",
		"unmatched_runs": strings.Repeat("` ``", 200000),
		"tilde_fences":   strings.Repeat("~~~\n", 200000),
		"quoted":         strings.Repeat("> ```\n> a\n", 100000),
		"pasted":         "```\n" + strings.Repeat("\u201c\u00a0", 200000) + "\n```",
	}
	for name, msg := range cases {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(msg)))
			for b.Loop() {
				Extract(msg, ExtractOptions{Platform: Slack, Triggered: true, Raw: true})
			}
		})
	}
}

// BenchmarkRenderDataFrame renders a 100×20 DataFrame's value as the
// sandbox sends it (issue 34 asks ≤ 20 ms).
func BenchmarkRenderDataFrame(b *testing.B) {
	var fields, rows []string
	for c := range 20 {
		fields = append(fields, `{"name":"column`+strconv.Itoa(c)+`","type":"number"}`)
	}
	for r := range 100 {
		cells := []string{`"index":` + strconv.Itoa(r)}
		for c := range 20 {
			cells = append(cells, `"column`+strconv.Itoa(c)+`":`+strconv.Itoa(r*c)+`.5`)
		}
		rows = append(rows, "{"+strings.Join(cells, ",")+"}")
	}
	table := `{"schema":{"fields":[{"name":"index","type":"integer"},` + strings.Join(fields, ",") + `],"primaryKey":["index"]},"data":[` + strings.Join(rows, ",") + `],"total_rows":100,"total_columns":20}`
	res := executor.Result{Success: true, Results: []executor.Display{{Data: map[string]string{"text/plain": "…", "application/vnd.dataresource+json": table}, Value: true}}}
	for _, p := range []Platform{Slack, Discord, Console} {
		b.Run(p.String(), func(b *testing.B) {
			for b.Loop() {
				Render(p, res, RenderOptions{Cell: 1})
			}
		})
	}
}
