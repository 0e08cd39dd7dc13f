package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// fontCacheReady marks a font cache directory as complete.
const fontCacheReady = "runblock-ready"

// buildFontCache builds matplotlib's font cache for py once, outside any
// snippet's time, in a directory the service owns, and returns it ("" when
// py has no matplotlib). Sandboxes get it read-only (see
// policy.FontCacheDir); without it every run importing pyplot would scan
// the system's fonts first (about a second). The directory is reused
// across restarts when this uid owns it and no one else may write it.
func buildFontCache(ctx context.Context, py python) (string, error) {
	sum := sha256.Sum256([]byte(py.Real + "\x00" + py.Version + "\x00" + strings.Join(py.Site, "\x00")))
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("runblock-%d-matplotlib-%s", os.Geteuid(), hex.EncodeToString(sum[:8])))
	switch fi, err := os.Lstat(dir); {
	case os.IsNotExist(err):
		if err := os.Mkdir(dir, 0o755); err != nil {
			return "", err
		}
	case err != nil:
		return "", err
	case !ownedDir(fi):
		// Someone else's: build a private one instead.
		if dir, err = os.MkdirTemp("", "runblock-matplotlib-"); err != nil {
			return "", err
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			return "", err
		}
	default:
		if _, err := os.Stat(filepath.Join(dir, fontCacheReady)); err == nil {
			return dir, nil
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	const build = `import sys
sys.path.extend(sys.argv[1:])
try:
    import matplotlib
except ImportError:
    sys.exit(3)
from matplotlib import font_manager
`
	cmd := exec.CommandContext(ctx, py.Executable, slices.Concat([]string{"-I", "-S", "-c", build}, py.Site)...)
	cmd.Env = append(env(dir), "MPLCONFIGDIR="+dir)
	cmd.Dir = dir
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == 3 {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("build matplotlib's font cache: %w: %s", err, strings.TrimSpace(string(out)))
	}
	entries, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, e := range entries {
		_ = os.Chmod(e, 0o644)
	}
	if err := os.WriteFile(filepath.Join(dir, fontCacheReady), nil, 0o644); err != nil {
		return "", err
	}
	return dir, nil
}

// ownedDir: a real directory of this uid that no one else may write.
func ownedDir(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && fi.IsDir() && fi.Mode()&os.ModeSymlink == 0 && int(st.Uid) == os.Geteuid() && fi.Mode().Perm()&0o022 == 0
}
