//go:build !linux

package stage

import (
	"errors"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
)

// CollectFiles needs openat2 to read a work dir without following
// symlinks: without Linux, no files come back.
func CollectFiles(string, protocol.CollectLimits) ([]executor.File, []executor.OmittedFile, error) {
	return nil, nil, errors.New("files out need Linux")
}

// ReadDisplays needs openat2, as CollectFiles: without Linux, no displays
// come back.
func ReadDisplays(string) []byte { return nil }
