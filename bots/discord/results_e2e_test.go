package discord_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/bots/discord"
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

// TestE2EImportANotebook: a notebook attached to "!run" in a thread runs
// its code cells as the thread's session, answered in one reply with the
// executed notebook attached.
func TestE2EImportANotebook(t *testing.T) {
	t.Parallel()
	sched, m := sessionRunner(t, 60*time.Second)
	e := start(t, sched, func(c *discord.Config) { c.End = m.End })
	th := e.thread()
	nb := `{"nbformat":4,"nbformat_minor":4,"metadata":{},"cells":[` +
		`{"cell_type":"code","metadata":{},"execution_count":null,"outputs":[],"source":"x = 41"},` +
		`{"cell_type":"code","metadata":{},"execution_count":null,"outputs":[],"source":"x + 1"}]}`
	att := fake.Attachment("demo.ipynb", "application/json", []byte(nb), -1)
	msg := e.fbot.MessageCreate(discordgo.Message{ChannelID: th, GuildID: e.guild, Author: e.user, Content: "!run", Attachments: []*discordgo.MessageAttachment{att}})
	r := posted(t, e.replyTo(th, msg.ID))
	if !strings.HasPrefix(r.Content, "Ran 2 cells of 2 code cells") || !strings.Contains(r.Content, "_Out[2]:_\n```\n42\n```") {
		t.Fatalf("reply %q", r.Content)
	}
	if len(r.Attachments) != 1 || r.Attachments[0].Filename != "demo.ipynb" {
		t.Fatalf("attachments %+v", r.Attachments)
	}
	if data, _ := fake.AttachmentData(r.Attachments[0].URL); !bytes.Contains(data, []byte(`"execute_result"`)) {
		t.Fatalf("executed notebook %s", data)
	}
}
