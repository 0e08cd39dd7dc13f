package fakeslack_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/runblock/runblock/internal/fakeslack"
)

func TestUserFilesAndUploads(t *testing.T) {
	s, api, ctx := setup(t, fakeslack.Options{})
	obj := s.AddUserFile(fakeslack.UserFile{Name: "data.csv", Mimetype: "text/csv", Content: []byte("a,b\n"), Size: -1})
	get := func(token string) (*http.Response, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, obj["url_private_download"].(string), nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	if resp, body := get(fakeslack.BotToken); resp.StatusCode != 200 || body != "a,b\n" || resp.Header.Get("Content-Type") != "text/csv" {
		t.Errorf("with the bot token: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if resp, body := get(""); resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || strings.Contains(body, "a,b") {
		t.Errorf("without a token Slack serves its sign-in page: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if n := s.UserFileDownloads(obj["id"].(string)); n != 1 {
		t.Errorf("%d authorized downloads, want 1", n)
	}

	parent := s.PutMessage(fakeslack.Message{Channel: "C1", User: "U1", Text: "plot"})
	var ids []string
	for _, name := range []string{"figure-1.png", "b.csv"} {
		content := []byte("content of " + name)
		f, err := api.UploadFileContext(ctx, slack.UploadFileParameters{Filename: name, Title: name, Reader: bytes.NewReader(content), FileSize: len(content),
			Channel: "C1", ThreadTimestamp: parent.TS, AltTxt: "alt " + name})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, f.ID)
	}
	files := s.Files("C1", parent.TS)
	if len(files) != 2 || files[0].Filename != "figure-1.png" || files[0].AltText != "alt figure-1.png" || string(files[1].Content) != "content of b.csv" {
		t.Fatalf("files %+v", files)
	}
	if err := api.DeleteFileContext(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if err := api.DeleteFileContext(ctx, ids[0]); err == nil || err.Error() != "file_not_found" {
		t.Errorf("deleting twice: %v", err)
	}
	if files := s.Files("C1", parent.TS); len(files) != 1 || files[0].ID != ids[1] {
		t.Errorf("after the delete: %+v", files)
	}
}
