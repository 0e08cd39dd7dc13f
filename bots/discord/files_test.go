package discord_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/bots/discord"
	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/internal/fakediscord"
)

var png = []byte("\x89PNG\r\n\x1a\nfake image")

// storedReply waits for the bot's answer to message id and returns the
// reply as the fake stores it.
func (e *env) storedReply(id string) (fakediscord.Request, discordgo.Message) {
	e.t.Helper()
	r := e.replyTo(e.channel, id)
	var m discordgo.Message
	if err := r.DecodeResponse(&m); err != nil {
		e.t.Fatal(err)
	}
	stored, ok := fake.Message(m.ID)
	if !ok {
		e.t.Fatalf("reply %s not stored", m.ID)
	}
	return r, stored
}

// attachments lists a message's attachments as "name (type) = content".
func attachments(t *testing.T, m discordgo.Message) []string {
	t.Helper()
	var out []string
	for _, a := range m.Attachments {
		data, ok := fake.AttachmentData(a.URL)
		if !ok {
			t.Fatalf("attachment %s has no content at %s", a.Filename, a.URL)
		}
		out = append(out, fmt.Sprintf("%s (%s) = %s", a.Filename, a.ContentType, data))
	}
	return out
}

func TestFilesOutAndRerun(t *testing.T) {
	t.Parallel()
	runs := make(chan executor.Result, 2)
	runs <- executor.Result{Success: true, Stdout: "plotted\n",
		Files: []executor.File{
			{Path: "figure-1.png", Size: int64(len(png)), MIME: "image/png", Content: png},
			{Path: "out/summary.csv", Size: 4, MIME: "text/csv", Content: []byte("a,b\n")},
		},
		FilesOmitted: []executor.OmittedFile{{Path: "big.csv", Size: 12 << 20, Reason: "over the total size limit"}},
	}
	runs <- executor.Result{Success: true, Stdout: "second\n", Files: []executor.File{{Path: "figure-1.png", Size: 3, MIME: "image/png", Content: []byte("two")}}}
	e := start(t, fakerunner.Func(func(context.Context, executor.Job) (executor.Result, error) { return <-runs, nil }),
		func(c *discord.Config) { c.EditWindow = 10 * time.Minute })
	m := e.say("!run ```py\nplt.plot([1, 2, 3]); plt.show()\n```")
	r, reply := e.storedReply(m.ID)
	if !strings.Contains(r.Content(), "1 file not attached: `big.csv` (12 MiB, over the total size limit)") {
		t.Errorf("reply does not name the omitted file: %q", r.Content())
	}
	want := []string{"figure-1.png (image/png) = " + string(png), "out_summary.csv (text/csv) = a,b\n"}
	if got := attachments(t, reply); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("attachments %q, want %q", got, want)
	}

	edited := *m
	edited.Content = "!run ```py\nplt.plot([3, 2, 1]); plt.show()\n```"
	e.fbot.MessageUpdate(edited)
	patch, err := fake.WaitRequest(e.ctx, func(r fakediscord.Request) bool {
		return fakediscord.Match("PATCH", "/channels/"+e.channel+"/messages/"+reply.ID)(r) && strings.Contains(r.Content(), "second")
	})
	if err != nil {
		t.Fatal(err)
	}
	// The attachments listed are the new uploads (ids are their indexes),
	// no earlier attachment (a snowflake string) is kept.
	var p struct {
		Attachments *[]struct {
			ID json.RawMessage `json:"id"`
		} `json:"attachments"`
	}
	if err := patch.Decode(&p); err != nil || p.Attachments == nil {
		t.Fatalf("the edit lists no attachments: %s (%v)", patch.JSON, err)
	}
	for _, a := range *p.Attachments {
		if strings.HasPrefix(string(a.ID), `"`) {
			t.Errorf("the edit keeps an old attachment: %s", patch.JSON)
		}
	}
	stored, _ := fake.Message(reply.ID)
	if got := attachments(t, stored); len(got) != 1 || got[0] != "figure-1.png (image/png) = two" {
		t.Errorf("after the edit: %q", got)
	}
}

func TestFilesOverTheAttachmentLimit(t *testing.T) {
	t.Parallel()
	var files []executor.File
	for i := range 10 {
		files = append(files, executor.File{Path: fmt.Sprintf("f%d.txt", i), Size: 1, MIME: "text/plain", Content: []byte("x")})
	}
	long := strings.Repeat("line\n", 500)
	e := start(t, fakerunner.Func(func(context.Context, executor.Job) (executor.Result, error) {
		return executor.Result{Success: true, Stdout: long, Files: files}, nil
	}), nil)
	m := e.say("!run ```py\nprint(1)\n```")
	r, reply := e.storedReply(m.ID)
	if len(reply.Attachments) != 10 || reply.Attachments[0].Filename != "output.txt" || reply.Attachments[9].Filename != "f8.txt" {
		t.Errorf("%d attachments: %+v", len(reply.Attachments), reply.Attachments)
	}
	if !strings.Contains(r.Content(), "1 file not attached: `f9.txt` (1 B, over Discord's 10 attachments a message)") {
		t.Errorf("reply does not name the file left out: %q", r.Content())
	}
}

func TestFilesIn(t *testing.T) {
	t.Parallel()
	runner := &fakerunner.Runner{}
	e := start(t, runner, func(c *discord.Config) { c.MaxFiles, c.MaxFilesBytes = 2, 1000 })
	csv := []byte("x,y\n1,2\n")
	data := fake.Attachment("data.csv", "text/csv; charset=utf-8", csv, -1)
	big := fake.Attachment("big.bin", "application/octet-stream", make([]byte, 2000), -1)
	evil := fake.Attachment("../data.csv", "text/csv", []byte("z\n"), -1)
	liar := fake.Attachment("liar.bin", "", make([]byte, 5000), 10) // announces 10 bytes
	m := e.fbot.MessageCreate(discordgo.Message{ChannelID: e.channel, GuildID: e.guild, Author: e.user,
		Content: "!run ```py\nimport pandas as pd\n```", Attachments: []*discordgo.MessageAttachment{data, big, evil, liar}})
	r := e.replyTo(e.channel, m.ID)
	for _, want := range []string{"2 files not given to the snippet:", "`big.bin` (2 KiB, over the total size limit)", "`liar.bin` (10 B, over the file count limit)"} {
		if !strings.Contains(r.Content(), want) {
			t.Errorf("reply %q lacks %q", r.Content(), want)
		}
	}
	jobs := runner.Jobs()
	if len(jobs) != 1 {
		t.Fatalf("%d jobs", len(jobs))
	}
	got := jobs[0].Request.Files
	if len(got) != 2 || got[0].Path != "data.csv" || !bytes.Equal(got[0].Content, csv) || got[1].Path != "data-2.csv" || string(got[1].Content) != "z\n" {
		t.Errorf("request files: %+v", got)
	}
	if n := fake.Downloads(big.URL); n != 0 {
		t.Errorf("the file over the cap (by its metadata) was downloaded %d times", n)
	}
}

func TestFilesInSizeFromTheDownload(t *testing.T) {
	t.Parallel()
	runner := &fakerunner.Runner{}
	e := start(t, runner, func(c *discord.Config) { c.MaxFilesBytes = 1000 })
	liar := fake.Attachment("liar.bin", "", make([]byte, 5000), 10) // announces 10 bytes
	m := e.fbot.MessageCreate(discordgo.Message{ChannelID: e.channel, GuildID: e.guild, Author: e.user,
		Content: "!run ```py\nprint(1)\n```", Attachments: []*discordgo.MessageAttachment{liar}})
	r := e.replyTo(e.channel, m.ID)
	if !strings.Contains(r.Content(), "`liar.bin` (10 B, over the total size limit)") {
		t.Errorf("reply %q does not name the file over the cap", r.Content())
	}
	if files := runner.Jobs()[0].Request.Files; len(files) != 0 {
		t.Errorf("request files: %+v", files)
	}
}

func TestFilesTooLargeForDiscordAreNamed(t *testing.T) {
	t.Parallel()
	big := make([]byte, fakediscord.MaxUploadBytes+1)
	e := start(t, fakerunner.Func(func(context.Context, executor.Job) (executor.Result, error) {
		return executor.Result{Success: true, Stdout: "made it\n", Files: []executor.File{{Path: "huge.bin", Size: int64(len(big)), MIME: "application/octet-stream", Content: big}}}, nil
	}), func(c *discord.Config) { c.MaxFilesBytes = 64 << 20 })
	m := e.say("!run ```py\nopen('huge.bin', 'wb').write(bytes(11 << 20))\n```")
	r, reply := e.storedReply(m.ID)
	if !strings.Contains(r.Content(), "1 file not attached: `huge.bin` (10 MiB, over Discord's upload size limit)") {
		t.Errorf("reply does not name the file Discord refused: %q", r.Content())
	}
	if len(reply.Attachments) != 0 {
		t.Errorf("attachments %+v", reply.Attachments)
	}
	if n := len(fake.Requests(func(r fakediscord.Request) bool { return r.Status == 413 && strings.Contains(r.Path, e.channel) })); n != 1 {
		t.Errorf("%d refused uploads, want 1", n)
	}
}

func TestRunCodeContextMenuTakesTheMessagesFilesAndAttachesTheRunsFiles(t *testing.T) {
	t.Parallel()
	runner := &fakerunner.Runner{Func: func(_ context.Context, job executor.Job) (executor.Result, error) {
		return executor.Result{Success: true, Stdout: "ok\n", Files: []executor.File{{Path: "figure-1.png", Size: int64(len(png)), MIME: "image/png", Content: png}}}, nil
	}}
	e := start(t, runner, nil)
	data := fake.Attachment("data.csv", "text/csv", []byte("a\n1\n"), -1)
	target := fake.PutMessage(discordgo.Message{ChannelID: e.channel, Author: &discordgo.User{ID: "9", Bot: true},
		Content: "```py\nprint('menu')\n```", Attachments: []*discordgo.MessageAttachment{data}})
	in := e.fbot.InteractionCreate(map[string]any{
		"type": discordgo.InteractionApplicationCommand, "channel_id": e.channel, "guild_id": e.guild,
		"member": map[string]any{"user": e.user},
		"data": map[string]any{
			"id": "2", "name": "Run code", "type": discordgo.MessageApplicationCommand, "target_id": target.ID,
			"resolved": map[string]any{"messages": map[string]any{target.ID: target}},
		},
	})
	e.callback(in)
	r := e.original(in)
	if len(r.Files) != 1 || r.Files[0].Name != "figure-1.png" || !bytes.Equal(r.Files[0].Data, png) {
		t.Errorf("files of the response: %+v", r.Files)
	}
	if files := runner.Jobs()[0].Request.Files; len(files) != 1 || files[0].Path != "data.csv" || string(files[0].Content) != "a\n1\n" {
		t.Errorf("request files: %+v", files)
	}
}
