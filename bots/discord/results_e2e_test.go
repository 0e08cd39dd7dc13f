package discord_test

import (
	"bytes"
	"strings"
	"testing"
)

// TestE2ENotebookResults: with real Python, a run shows what a notebook
// cell would: a DataFrame passed to display() as an aligned table among
// the printed output, a PIL image as an attachment, and the last
// expression's value after the output (x + 1 → 42); a sympy expression
// as its unicode pretty print and its mathtext image.
func TestE2ENotebookResults(t *testing.T) {
	t.Parallel()
	e := start(t, sciRunner(t, "pandas", "PIL", "sympy", "matplotlib"), nil)
	m := e.say("!run ```py\nimport pandas as pd\nfrom PIL import Image\nprint('before')\n" +
		"display(pd.DataFrame({'name': ['ada', 'bob'], 'score': [9.5, 7]}))\nprint('after')\n" +
		"display(Image.new('RGB', (8, 8), 'red'))\nx = 41\nx + 1\n```")
	r, reply := e.storedReply(m.ID)
	c := r.Content()
	for _, want := range []string{"before\n   name  score\n0  ada     9.5\n1  bob     7.0\nafter\n```", "_Out[1]:_\n```\n42\n```"} {
		if !strings.Contains(c, want) {
			t.Fatalf("reply %q, want %q in it", c, want)
		}
	}
	if len(reply.Attachments) != 1 || reply.Attachments[0].Filename != "display-2.png" {
		t.Fatalf("attachments %+v, want the image", reply.Attachments)
	}
	if data, _ := fake.AttachmentData(reply.Attachments[0].URL); !bytes.HasPrefix(data, pngMagic) {
		t.Fatalf("display-2.png is not a PNG: %q", data[:min(8, len(data))])
	}

	m = e.say("!run ```py\nimport sympy\nx = sympy.Symbol('x')\nsympy.integrate(x**2, x)\n```")
	r, reply = e.storedReply(m.ID)
	if c := r.Content(); !strings.Contains(c, " 3\nx \n──\n3") {
		t.Fatalf("reply %q, want the pretty print of x³/3", c)
	}
	if len(reply.Attachments) != 1 || reply.Attachments[0].Filename != "out.png" {
		t.Fatalf("attachments %+v, want the mathtext image", reply.Attachments)
	}
}
