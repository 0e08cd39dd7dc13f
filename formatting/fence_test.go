package formatting

import (
	"strings"
	"testing"
)

// TestFences checks that Fences, fed a message line by line, agrees with a
// scan of the whole text at every line: whether the text ends inside an
// unclosed block.
func TestFences(t *testing.T) {
	tests := []string{
		"```python\ndef f():\n    return 1\n\nprint(f())\n```\n\nnext",
		"~~~python\ndef f():\n    return 1\n\nprint(f())\n~~~\n\nnext",
		"  ~~~\nx\n\n  ~~~\ny",
		"~~~~\n~~~\n\n~~~~\nz",
		"run ```print(1)``` inline\n\nx",
		"wrap code in `` ``` `` fences\n\n```py\nprint(1)\n\n```",
		"a `\n\n```\nb\n\n```",
		"```\n\n\n\n",
		"> ```py\n> x = 1\n>\n> print(x)\n> ```",
		"````\n```\n\n````",
		"a ~~~python\n\nb",
	}
	for _, text := range tests {
		var f Fences
		lines := strings.Split(text, "\n")
		for i := range lines {
			prefix := strings.Join(lines[:i+1], "\n")
			if got, want := f.Open(prefix), unclosed(prefix); got != want {
				t.Errorf("%q: after line %d Open = %v, want %v", text, i, got, want)
			}
		}
	}
}

// unclosed scans the whole text: does it end inside an unclosed block?
func unclosed(text string) bool {
	var f Fences
	return f.Open(text)
}

func TestFencesTilde(t *testing.T) {
	var f Fences
	for _, step := range []struct {
		text string
		open bool
	}{
		{"~~~python", true},
		{"~~~python\ndef f():", true},
		{"~~~python\ndef f():\n    return 1", true},
		{"~~~python\ndef f():\n    return 1\n", true},
		{"~~~python\ndef f():\n    return 1\n\nprint(f())\n~~~", false},
	} {
		if got := f.Open(step.text); got != step.open {
			t.Errorf("Open(%q) = %v, want %v", step.text, got, step.open)
		}
	}
}
