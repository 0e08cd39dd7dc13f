//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"log/slog"
)

// forkServer: the fork server needs Linux's namespaces; runs start from
// scratch.
type forkServer struct{}

var errForkServerDown = errors.New("the fork server needs Linux")

func startForkServer(context.Context, *plan, []string, *slog.Logger) (*forkServer, error) {
	return nil, errForkServerDown
}

func (*forkServer) spawn(context.Context, limits, int64, int64) (*proc, error) {
	return nil, errForkServerDown
}

func (*forkServer) prefork(context.Context, limits, int64, int64) (*proc, error) {
	return nil, errForkServerDown
}

func (*forkServer) up() bool { return false }

func (*forkServer) close() {}
