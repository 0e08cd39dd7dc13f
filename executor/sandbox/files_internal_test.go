package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
	"github.com/runblock/runblock/executor/sandbox/internal/stage"
)

// TestCollectFilesHostDir: the walk the service does on a host work dir
// (tiers without a mount namespace) never follows a link out of it.
func TestCollectFilesHostDir(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("host secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	at := time.Now().Add(-time.Hour)
	write := func(name, data string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		at = at.Add(time.Second)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	write("b.txt", "b")
	write("a/z.txt", "z")
	write("_scratch", "s")
	write(".cache/x", "x")
	if err := os.Symlink(secret, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "linkdir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, filepath.Join(dir, "hard")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	files, omitted, err := stage.CollectFiles(dir, protocol.CollectLimits{MaxFiles: 10, MaxBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Path+"="+string(f.Content))
	}
	if want := []string{"b.txt=b", "a/z.txt=z"}; !slices.Equal(names, want) {
		t.Errorf("files %v, want %v (in order of appearance)", names, want)
	}
	reasons := map[string]string{}
	for _, o := range omitted {
		reasons[o.Path] = o.Reason
	}
	want := map[string]string{"link": executor.OmitSymlink, "linkdir": executor.OmitSymlink, "hard": executor.OmitHardLink, "fifo": executor.OmitNotRegular}
	if len(reasons) != len(want) {
		t.Errorf("omitted %v, want %v", reasons, want)
	}
	for k, v := range want {
		if reasons[k] != v {
			t.Errorf("omitted %s: %q, want %q", k, reasons[k], v)
		}
	}
}
