package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/wire"
	"github.com/runblock/runblock/internal/api"
)

// TestFilesComeWhole: the files of an answer, written in base64 as the
// answer goes out rather than encoded with it, come whole and in place,
// on /v1/run and /eval, beside outputs that need escaping.
func TestFilesComeWhole(t *testing.T) {
	const size = 8 << 20
	r := canaryOK(func(context.Context, executor.Request) (executor.Result, error) {
		content := make([]byte, size)
		for i := range content {
			content[i] = byte(i)
		}
		return executor.Result{Success: true, Stdout: "hi\"\n", Files: []executor.File{{Path: "big.bin", Size: size, Content: content}, {Path: "b", Content: []byte("xy")}}}, nil
	})
	s := open(t, r, executor.Config{Concurrency: 2}, api.Config{})
	resp := post(t, s.url+"/v1/run", `{"code":"1"}`)
	if resp.status != http.StatusOK {
		t.Fatalf("%d", resp.status)
	}
	var got wire.RunResponse
	if err := json.Unmarshal(resp.body, &got); err != nil || len(got.Files) != 2 || len(got.Files[0].Content) != size ||
		got.Files[0].Content[size-1] != byte((size-1)%256) || string(got.Files[1].Content) != "xy" || got.Stdout != "hi\"\n" {
		t.Fatalf("/v1/run: %v (%d bytes)", err, len(resp.body))
	}
	resp = post(t, s.url+"/eval", `{"input":"1"}`)
	var sn struct {
		Stdout string
		Files  []struct {
			Path    string
			Size    int
			Content []byte
		}
	}
	if err := json.Unmarshal(resp.body, &sn); err != nil || len(sn.Files) != 2 || sn.Files[0].Size != size ||
		len(sn.Files[0].Content) != size || sn.Files[0].Content[size-1] != byte((size-1)%256) || string(sn.Files[1].Content) != "xy" || sn.Stdout != "hi\"\n" {
		t.Fatalf("/eval: %v (%d bytes)", err, len(resp.body))
	}
}
