package sandbox

import (
	"sync/atomic"

	"github.com/runblock/runblock/executor"
)

// mainCalled is set by Main: only a binary that calls Main first thing can
// become a sandbox stage when a sandbox re-executes it.
var mainCalled atomic.Bool

// The executor re-executes its own binary (/proc/self/exe) as the sandbox.
// os.Args[0] tells the stage; os.Args[1] carries the stageSpec as JSON.
const (
	initMarker   = "runblock-sandbox-init"   // PID 1 of the namespaces: builds the root, forks python
	lockerMarker = "runblock-sandbox-locker" // without namespaces: locks itself down, execs python
	// The fork server's init: PID 1 of its namespaces; builds the root,
	// starts the fork server, supervises the forked runs.
	forkServerMarker = "runblock-sandbox-forkserver"
)

// File descriptors shared by the stages and the guard (see guard.py). The
// stages mark every other descriptor close-on-exec; python gets 0 to 4, and
// the guard closes 3 and 4 before the snippet runs. Nothing the snippet can
// write decides its verdict: that comes from the wait status (the init's
// report, which python never holds, or the sandbox process's own).
const (
	fdRequest    = 3 // read end: the snippet's source
	fdStatus     = 4 // write end: guard's "ready", "started"; the locker's "error: ..."
	fdInitStatus = 5 // write end: stage 1's setup error or python's end (JSON); never python's
)

// stageSpec is everything the stages need, passed from the service.
type stageSpec struct {
	Python string   `json:"python"` // real interpreter path
	Args   []string `json:"args"`   // argv after argv[0]
	Env    []string `json:"env"`
	Dir    string   `json:"dir"` // python's working directory

	// Stage 1 (namespaces) only.
	Binds     []string          `json:"binds,omitempty"`    // read-only binds at the same path
	Files     []string          `json:"files,omitempty"`    // read-only file binds at the same path
	Symlinks  map[string]string `json:"symlinks,omitempty"` // e.g. /bin -> usr/bin
	WorkBytes int64             `json:"work_bytes,omitempty"`
	ShmBytes  int64             `json:"shm_bytes,omitempty"` // size of the shared memory tmpfs (see policy.ShmDir)
	// MemoryBytes bounds the whole run, accounted by the init (0: not).
	MemoryBytes int64         `json:"memory_bytes,omitempty"`
	UID         int           `json:"uid"`
	GID         int           `json:"gid"`
	SetGroups   bool          `json:"set_groups"`
	FontCache   string        `json:"font_cache,omitempty"` // host dir bound read-only at policy.FontCacheDir
	Collect     collectLimits `json:"collect"`              // what the init sends back of the work dir

	// Both stages.
	Landlock *landlockSet `json:"landlock,omitempty"`
	Seccomp  []byte       `json:"seccomp,omitempty"` // assembled filter, see seccompFilter
}

type landlockSet struct {
	ListDirs []string `json:"list_dirs"` // readdir only, inherited below
	RODirs   []string `json:"ro_dirs"`
	RWDirs   []string `json:"rw_dirs"`
	ROFiles  []string `json:"ro_files"`
	RWFiles  []string `json:"rw_files"`
}

// initStatus is stage 1's report on fd 5: how python ended, and the files
// left in the work dir once every process in the sandbox is dead.
type initStatus struct {
	Error    string                 `json:"error,omitempty"`
	Exited   bool                   `json:"exited"`
	ExitCode int                    `json:"exit_code"`
	Signal   int                    `json:"signal"`
	Files    []executor.File        `json:"files,omitempty"`
	Omitted  []executor.OmittedFile `json:"omitted,omitempty"`
	// Memory: the init killed the run past its memory limit. Peak is the
	// most it accounted.
	Memory bool  `json:"memory,omitempty"`
	Peak   int64 `json:"peak,omitempty"`
}
