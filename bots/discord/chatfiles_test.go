package discord_test

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/bots/discord"
	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/internal/fakediscord"
)

// TestUploadRefusedAsTooLargeKeepsTheFilesWithinTheLimit: when Discord
// refuses an upload as too large (413, 40005), the reply keeps the files
// under the per-file limit and names only those over it.
func TestUploadRefusedAsTooLargeKeepsTheFilesWithinTheLimit(t *testing.T) {
	t.Parallel()
	big := make([]byte, fakediscord.MaxUploadBytes+1)
	e := start(t, fakerunner.Func(func(context.Context, executor.Job) (executor.Result, error) {
		return executor.Result{Success: true, Stdout: "made them\n", Files: []executor.File{
			{Path: "small.csv", Size: 4, MIME: "text/csv", Content: []byte("a,b\n")},
			{Path: "huge.bin", Size: int64(len(big)), MIME: "application/octet-stream", Content: big},
			{Path: "figure-1.png", Size: int64(len(png)), MIME: "image/png", Content: png},
		}}, nil
	}), func(c *discord.Config) { c.MaxFilesBytes = 64 << 20 })
	m := e.say("!run ```py\nmake()\n```")
	r, reply := e.storedReply(m.ID)
	if !strings.Contains(r.Content(), "1 file not attached: `huge.bin` (10 MiB, over Discord's upload size limit)") {
		t.Errorf("reply does not name the file over the limit alone: %q", r.Content())
	}
	if strings.Contains(r.Content(), "small.csv") || strings.Contains(r.Content(), "figure-1.png") {
		t.Errorf("reply names a file that fits: %q", r.Content())
	}
	got := attachments(t, reply)
	if len(got) != 2 || got[0] != "small.csv (text/csv) = a,b\n" || !strings.HasPrefix(got[1], "figure-1.png (image/png) = ") {
		t.Errorf("attachments %q, want small.csv and figure-1.png", got)
	}
	if n := len(fake.Requests(func(r fakediscord.Request) bool { return r.Status == 413 && strings.Contains(r.Path, e.channel) })); n != 1 {
		t.Errorf("%d refused uploads, want 1", n)
	}
}

// TestDeletingTheBotsOwnReplyLooksNothingUp: the bot's own reply answers no
// message, so its deletion costs no lookup in the channel's history.
func TestDeletingTheBotsOwnReplyLooksNothingUp(t *testing.T) {
	t.Parallel()
	e := start(t, &fakerunner.Runner{}, nil)
	m := e.say("!run " + block)
	reply := replyID(t, e.replyTo(e.channel, m.ID))
	// ✅ comes once the flow has the reply sent.
	if _, err := fake.WaitRequest(e.ctx, fakediscord.Match("PUT", "/channels/"+e.channel+"/messages/"+m.ID+"/reactions/✅/@me")); err != nil {
		t.Fatal(err)
	}
	e.fbot.MessageDelete(e.channel, reply, e.guild)
	// Events are handled in order: once the next message is answered,
	// the deletion's handler was started, and Close waits for it.
	next := e.say("!run " + block)
	e.replyTo(e.channel, next.ID)
	closeBot(t, e)
	if got := e.lookups(); len(got) != 0 {
		t.Errorf("%d lookups, want 0: %+v", len(got), got)
	}
}

// TestImagesCarryAltText: the reply's images carry a description (alt
// text), a plot's naming its title and axes, on a new reply and on an
// edit; other files carry none.
func TestImagesCarryAltText(t *testing.T) {
	t.Parallel()
	plot := pngWithDescription("Sales, x axis: month")
	e := start(t, fakerunner.Func(func(context.Context, executor.Job) (executor.Result, error) {
		return executor.Result{Success: true, Stdout: "plotted\n", Files: []executor.File{
			{Path: "figure-1.png", Size: int64(len(plot)), MIME: "image/png", Content: plot},
			{Path: "raw.png", Size: int64(len(png)), MIME: "image/png", Content: png},
			{Path: "data.csv", Size: 2, MIME: "text/csv", Content: []byte("a\n")},
		}}, nil
	}), func(c *discord.Config) { c.EditWindow = time.Minute })
	m := e.say("!run ```py\nplot()\n```")
	_, reply := e.storedReply(m.ID)
	check := func(reply discordgo.Message) {
		t.Helper()
		want := []string{"Plot figure-1.png: Sales, x axis: month", "Image raw.png made by the snippet", ""}
		if len(reply.Attachments) != len(want) {
			t.Fatalf("attachments %+v", reply.Attachments)
		}
		for i, a := range reply.Attachments {
			if got := fake.AttachmentDescription(a.ID); got != want[i] {
				t.Errorf("%s: description %q, want %q", a.Filename, got, want[i])
			}
		}
	}
	check(reply)
	edited := *m
	edited.Content = "!run ```py\nplot(2)\n```"
	e.fbot.MessageUpdate(edited)
	if _, err := fake.WaitRequest(e.ctx, fakediscord.Match("PATCH", "/channels/"+e.channel+"/messages/"+reply.ID)); err != nil {
		t.Fatal(err)
	}
	after, _ := fake.Message(reply.ID)
	check(after)
}

// pngWithDescription is a tiny PNG whose Description chunk is desc, as the
// sandbox's plot hook writes it.
func pngWithDescription(desc string) []byte {
	chunk := func(kind, data string) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
		b = append(b, kind+data...)
		return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE([]byte(kind+data)))
	}
	b := append([]byte(nil), pngMagic...)
	b = append(b, chunk("tEXt", "Description\x00"+desc)...)
	return append(b, chunk("IEND", "")...)
}
