package formatting

import (
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
