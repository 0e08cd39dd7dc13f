package slack

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/runblock/runblock/bots/internal/attach"
	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/internal/fakeslack"
)

// mentionWithFiles posts "<@bot> text" with files attached, and sends
// app_mention and the file_share message event, as Slack does.
func (h *harness) mentionWithFiles(channel, user, text string, files ...map[string]any) fakeslack.Message {
	m := h.fake.PutMessage(fakeslack.Message{Channel: channel, User: user, Text: "<@" + fakeslack.BotUserID + "> " + text, SubType: "file_share", Files: files})
	h.fake.SendEvent(map[string]any{"type": "app_mention", "channel": channel, "user": user, "text": m.Text, "ts": m.TS, "event_ts": m.TS, "files": files})
	ev := messageEvent(m, "channel")
	ev["subtype"], ev["files"] = "file_share", files
	h.fake.SendEvent(ev)
	return m
}

var png = []byte("\x89PNG\r\n\x1a\nfake image")

// waitFiles waits until the thread holds files with exactly these names, in order.
func waitFiles(t *testing.T, h *harness, channel, thread string, names ...string) []fakeslack.File {
	t.Helper()
	nameList := func(files []fakeslack.File) string {
		var got []string
		for _, f := range files {
			got = append(got, f.Filename)
		}
		return strings.Join(got, ",")
	}
	files, err := h.fake.WaitFiles(h.ctx, channel, thread, func(files []fakeslack.File) bool { return nameList(files) == strings.Join(names, ",") })
	if err != nil {
		t.Fatalf("%v: files %s, want %v", err, nameList(h.fake.Files(channel, thread)), names)
	}
	return files
}

func TestFilesOutAndRerun(t *testing.T) {
	t.Parallel()
	runs := make(chan executor.Result, 2)
	runs <- executor.Result{Success: true, Stdout: "plotted\n",
		Files: []executor.File{
			{Path: "figure-1.png", Size: int64(len(png)), MIME: "image/png", Content: png},
			{Path: "summary.csv", Size: 4, MIME: "text/csv", Content: []byte("a,b\n")},
		},
		FilesOmitted: []executor.OmittedFile{{Path: "big.csv", Size: 12 << 20, Reason: "over the total size limit"}},
	}
	runs <- executor.Result{Success: true, Stdout: "second\n", Files: []executor.File{{Path: "figure-1.png", Size: 3, MIME: "image/png", Content: []byte("two")}}}
	var clk clock
	h := start(t, Config{EditWindow: time.Minute}, fakerunner.Func(func(context.Context, executor.Job) (executor.Result, error) {
		return <-runs, nil
	}), true, clk.install())
	ch := h.channel()
	m := h.mention(ch, h.user(), "```python\nplt.plot([1, 2, 3]); plt.show()\n```")
	r := h.reply(m, "plotted")
	if !strings.Contains(r.Text, "1 file not attached: `big.csv` (12 MiB, over the total size limit)") {
		t.Errorf("reply does not name the omitted file: %q", r.Text)
	}
	files := waitFiles(t, h, ch, m.TS, "figure-1.png", "summary.csv")
	if !bytes.Equal(files[0].Content, png) || files[0].AltText == "" || files[1].AltText != "" || string(files[1].Content) != "a,b\n" {
		t.Errorf("uploaded files: %+v", files)
	}
	h.reaction(m, "white_check_mark")
	// The reply's metadata names the files, for a later process.
	tagged, err := h.fake.WaitMessage(h.ctx, ch, func(x fakeslack.Message) bool {
		if x.TS != r.TS || x.Metadata == nil {
			return false
		}
		ids, _ := x.Metadata.EventPayload[metaFiles].([]any)
		return len(ids) == 2
	})
	if err != nil {
		t.Fatalf("reply metadata: %v", err)
	}
	ids := tagged.Metadata.EventPayload[metaFiles].([]any)
	if ids[0] != files[0].ID || ids[1] != files[1].ID {
		t.Errorf("metadata files %v, want %s %s", ids, files[0].ID, files[1].ID)
	}

	m = h.edit(m, "<@"+fakeslack.BotUserID+"> ```python\nplt.plot([3, 2, 1]); plt.show()\n```")
	h.reply(m, "second")
	files = waitFiles(t, h, ch, m.TS, "figure-1.png")
	if string(files[0].Content) != "two" {
		t.Errorf("after the edit: %+v", files)
	}
	if n := len(h.fake.Calls("files.delete")); n != 2 {
		t.Errorf("%d files.delete calls, want 2", n)
	}
	h.remove(m)
	waitFiles(t, h, ch, m.TS)
}

func TestFilesIn(t *testing.T) {
	t.Parallel()
	r := &fakerunner.Runner{}
	h := start(t, Config{MaxFiles: 2, MaxFilesBytes: 1000}, r, true)
	csv := []byte("x,y\n1,2\n")
	data := h.fake.AddUserFile(fakeslack.UserFile{Name: "data.csv", Mimetype: "text/csv", Content: csv, Size: -1})
	evil := h.fake.AddUserFile(fakeslack.UserFile{Name: "../../data.csv", Mimetype: "text/csv", Content: []byte("z\n"), Size: -1})
	big := h.fake.AddUserFile(fakeslack.UserFile{Name: "big.bin", Mimetype: "application/octet-stream", Content: make([]byte, 2000), Size: -1})
	third := h.fake.AddUserFile(fakeslack.UserFile{Name: "third.txt", Mimetype: "text/plain", Content: []byte("3"), Size: -1})
	m := h.mentionWithFiles(h.channel(), h.user(), "```python\nimport pandas as pd\n```", data, big, evil, third)
	reply := h.reply(m, "ran: ")
	for _, want := range []string{"2 files not given to the snippet:", "`big.bin` (2 KiB, over the total size limit)", "`third.txt` (1 B, over the file count limit)"} {
		if !strings.Contains(reply.Text, want) {
			t.Errorf("reply %q lacks %q", reply.Text, want)
		}
	}
	jobs := r.Jobs()
	if len(jobs) != 1 {
		t.Fatalf("%d jobs", len(jobs))
	}
	got := jobs[0].Request.Files
	if len(got) != 2 || got[0].Path != "data.csv" || !bytes.Equal(got[0].Content, csv) || got[0].MIME != "text/csv" ||
		got[1].Path != "data-2.csv" || string(got[1].Content) != "z\n" {
		t.Errorf("request files: %+v", got)
	}
	if n := h.fake.UserFileDownloads(big["id"].(string)); n != 0 {
		t.Errorf("the file over the cap (by its metadata) was downloaded %d times", n)
	}
}

func TestFilesInNoToken(t *testing.T) {
	t.Parallel()
	r := &fakerunner.Runner{}
	h := start(t, Config{}, r, true)
	// A file whose URL is not on Slack's host never gets the token.
	f := map[string]any{"id": "F0EVIL", "name": "x.csv", "mimetype": "text/csv", "size": 3, "url_private_download": "http://127.0.0.2:1/x.csv"}
	m := h.mentionWithFiles(h.channel(), h.user(), "```python\nprint(1)\n```", f)
	reply := h.reply(m, "ran: ")
	if !strings.Contains(reply.Text, "`x.csv` (3 B, "+attach.ReasonUntrustedURL+")") {
		t.Errorf("reply %q does not name the file it did not fetch", reply.Text)
	}
	if files := r.Jobs()[0].Request.Files; len(files) != 0 {
		t.Errorf("request files: %+v", files)
	}
}

func TestFilesThatCouldNotBeUploadedAreNamed(t *testing.T) {
	t.Parallel()
	h := start(t, Config{}, fakerunner.Func(func(context.Context, executor.Job) (executor.Result, error) {
		return executor.Result{Success: true, Stdout: "made\n", Files: []executor.File{
			{Path: "a.png", Size: 3, MIME: "image/png", Content: []byte("png")},
			{Path: "empty.txt", MIME: "text/plain"},
			{Path: "b.csv", Size: 2, MIME: "text/csv", Content: []byte("b\n")},
		}}, nil
	}), true)
	h.fake.Script("files.getUploadURLExternal", fakeslack.Response{Error: "internal_error"})
	m := h.mention(h.channel(), h.user(), "```python\nmake()\n```")
	h.reply(m, "2 files not attached: `a.png` (3 B, the upload failed), `empty.txt` (empty: Slack takes no empty files)")
	waitFiles(t, h, m.Channel, m.TS, "b.csv")
}

func TestFilesGoWhenTheRerunFails(t *testing.T) {
	t.Parallel()
	runs := make(chan func() (executor.Result, error), 2)
	runs <- func() (executor.Result, error) {
		return executor.Result{Success: true, Stdout: "first\n", Files: []executor.File{{Path: "figure-1.png", Size: 3, MIME: "image/png", Content: []byte("png")}}}, nil
	}
	runs <- func() (executor.Result, error) { return executor.Result{}, &executor.Error{Code: executor.ErrShutdown} }
	var clk clock
	h := start(t, Config{EditWindow: time.Minute}, fakerunner.Func(func(context.Context, executor.Job) (executor.Result, error) {
		return (<-runs)()
	}), true, clk.install())
	m := h.mention(h.channel(), h.user(), "```python\nplot()\n```")
	h.reply(m, "first")
	waitFiles(t, h, m.Channel, m.TS, "figure-1.png")
	h.reaction(m, "white_check_mark")
	m = h.edit(m, "<@"+fakeslack.BotUserID+"> ```python\nplot(2)\n```")
	waitFiles(t, h, m.Channel, m.TS)
}
