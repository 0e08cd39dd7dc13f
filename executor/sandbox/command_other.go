//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"

	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
)

// Without Linux there is no kernel isolation to try: only the guard-only
// tier, which needs RUNBLOCK_ALLOW_UNISOLATED (see probe).
var tiers []layerSet

// addressSpaceLimit: macOS refuses RLIMIT_AS, so memory is not bounded here.
const addressSpaceLimit = false

func seccompFilter() ([]byte, error) {
	return nil, errors.New("seccomp needs Linux")
}

// command runs python directly, in its own process group so a kill reaches
// what it started (unless that left the group).
func (p *plan) command(ctx context.Context, spec protocol.StageSpec, hostUID, cgroupFD int) (*exec.Cmd, error) {
	cmd := exec.CommandContext(ctx, spec.Python, spec.Args...)
	attr := &syscall.SysProcAttr{Setpgid: true}
	if hostUID >= 0 {
		attr.Credential = &syscall.Credential{Uid: uint32(hostUID), Gid: uint32(hostUID)}
	}
	cmd.SysProcAttr = attr
	cmd.Dir = spec.Dir
	cmd.Env = spec.Env
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return cmd, nil
}

// cgroupTree and runCgroup: cgroups need Linux.
type (
	cgroupTree struct{ dir string }
	runCgroup  struct{ fd int }
)

func serviceCgroup(string) (*cgroupTree, error) { return nil, errors.New("cgroups need Linux") }

func (*cgroupTree) newRun(int64) (*runCgroup, error) { return nil, errors.New("cgroups need Linux") }
func (*runCgroup) oomKilled() (bool, int64)          { return false, 0 }
func (*runCgroup) remove() error                     { return nil }

// pipe makes a pipe for a sandbox, its service's end first (the read end
// where reads).
func pipe(reads bool) (service, sandbox *os.File, err error) {
	r, w, err := os.Pipe()
	if reads {
		return r, w, err
	}
	return w, r, err
}
