package formatting

import (
	"strings"
	"testing"

	"github.com/runblock/runblock/executor"
)

// TestHeaderComesFirstWithinTheLimit: RenderOptions.Header is the reply's
// first line, its control characters escaped, and the reply still fits
// the platform's limit.
func TestHeaderComesFirstWithinTheLimit(t *testing.T) {
	long := strings.Repeat(strings.Repeat("x", 150)+"\n", 40)
	for _, p := range []Platform{Discord, Slack, Console} {
		header := "[12] · state rebuilt from 11 earlier cells\x1b[2J"
		r := RenderRun(p, Extraction{Found: true}, executor.Result{Success: true, Stdout: long}, RenderOptions{Header: header, MaxChars: 5000, MaxLines: 100})
		first, rest, _ := strings.Cut(r.Text, "\n")
		if !strings.HasPrefix(first, "[12] · state rebuilt from 11 earlier cells") || strings.Contains(first, "\x1b") {
			t.Errorf("%v: first line %q", p, first)
		}
		if !strings.Contains(rest, "OK") {
			t.Errorf("%v: no status after the header: %q", p, rest[:min(40, len(rest))])
		}
		if limit := p.MaxText(); limit > 0 && utf16Len(r.Text) > limit {
			t.Errorf("%v: %d units, over %d", p, utf16Len(r.Text), limit)
		}
	}
}

// TestNoStatusIsTheOutputAlone: RenderOptions.NoStatus leaves out the
// status line and nothing else: under the header, or first without one,
// comes the output as the reply shows it.
func TestNoStatusIsTheOutputAlone(t *testing.T) {
	res := executor.Result{Success: true, Stdout: "one\ntwo\n"}
	for _, p := range []Platform{Discord, Slack, Console} {
		for _, header := range []string{"", "The whole output:"} {
			with := Render(p, res, RenderOptions{Header: header}).Text
			without := Render(p, res, RenderOptions{Header: header, NoStatus: true}).Text
			status := Render(p, res, RenderOptions{}).Text
			status, _, _ = strings.Cut(status, "\n")
			want := strings.Replace(with, status+"\n", "", 1)
			if without != want || strings.Contains(without, status) || !strings.HasPrefix(without, header) {
				t.Errorf("%v, header %q: %q, want %q", p, header, without, want)
			}
		}
	}
}
