//go:build !linux

package sandbox

import (
	"errors"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
)

// collectFiles needs openat2 to read a work dir without following
// symlinks: without Linux, no files come back.
func collectFiles(string, protocol.CollectLimits) ([]executor.File, []executor.OmittedFile, error) {
	return nil, nil, errors.New("files out need Linux")
}
