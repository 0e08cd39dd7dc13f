package sandbox

import "github.com/runblock/runblock/executor"

// The protocol between the service, the sandbox's stages (this binary
// re-executed as an init or the locker), the fork server (forkserver.py,
// in a python its init starts) and python with its guard (guard.py): every
// descriptor, argv slot and message, with its direction, encoding and
// bound, declared here and nowhere else. The Python side takes its numbers
// from here: the fork server from its configuration (forkServerConf), the
// guard from the protocol lines of guard.py, which TestPythonProtocol holds
// to these declarations (as it holds the keys forkserver.py reads of its
// configuration to forkServerConf's).
//
// A run started from scratch (spawn):
//
//	service → stage   argv[0]       initMarker or lockerMarker: which stage
//	service → stage   argv[1]       stageSpec, JSON (stageArgSpec)
//	stage → python    argv          policy.PythonFlags, -c guardLoader, the
//	                                guard's size (loaderArg), guardArgv
//	service → python  fdRequest     the compiled guard (its size in bytes is
//	                                loaderArg), then the request
//	                                (encodeRequest), until EOF
//	python → service  fdStatus      lines: statusReady once the guard is in
//	                                place, statusStarted once the request is
//	                                in; the locker's "error: ..." (die); at
//	                                most statusMax bytes are read
//	init → service    fdInitStatus  initStatus, one JSON line (a setup error,
//	                                or how python ended and its files); at
//	                                most reportMaxBytes; python never holds it
//
// Python gets descriptors 0 to 4 (stdin, stdout, stderr, fdRequest,
// fdStatus) and the guard closes fdRequest and fdStatus before the snippet
// runs; every descriptor from fdInitStatus on is closed in python (the
// stages mark them close-on-exec; the guard closes them where there is no
// stage). Nothing python writes decides its verdict: that comes from the
// wait status, the init's report or the sandbox process's own.
//
// The fork server (forkServer.launch):
//
//	service → its init     argv[0]  forkServerMarker; argv[1] stageSpec
//	init → fork server     argv     -c forkServerLoader, the compiled guard
//	                                in base64 (loaderArg), then guardArgv with
//	                                forkServerConf, JSON, at guardArgConfig
//	service → its init     fdForkControl  SOCK_SEQPACKET: one forkRun per
//	                                datagram (JSON, at most forkRequestMax)
//	                                with runFDs descriptors (below)
//	init → fork server     fdForkControl  the same datagram, with python's
//	                                descriptors, a back channel and the
//	                                lifeline (runReport is replaced by the
//	                                back channel's end)
//	fork server → service  fdStatus statusReady
//	init → service         fdInitStatus   initStatus when the fork server ends
//
// A forked run's descriptors, in the order of a forkRun's: python's 0 to 4
// (runPythonFDs), then runReport (the service reads the run's initStatus
// from it; the fork server's init keeps it and gives the fork server a back
// channel in its place) and runLifeline (closed by the service to kill the
// run; the run's PID 1 holds it too). On the back channel python sends its
// hello (forkHello, JSON, one datagram of at most forkHelloMax bytes, with
// its credentials, its work dir and a sock_diag socket) and the init
// answers "{}" with the Landlock ruleset, or python sends forkHello.Error
// (forkErrorMax characters at most) when its run could not be made.

// The executor re-executes its own binary (/proc/self/exe) as the sandbox.
// os.Args[0] tells the stage; os.Args[stageArgSpec] carries the stageSpec
// as JSON.
const (
	initMarker   = "runblock-sandbox-init"   // PID 1 of the namespaces: builds the root, forks python
	lockerMarker = "runblock-sandbox-locker" // without namespaces: locks itself down, execs python
	// The fork server's init: PID 1 of its namespaces; builds the root,
	// starts the fork server, supervises the forked runs.
	forkServerMarker = "runblock-sandbox-forkserver"
	stageArgSpec     = 1
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
	// fdForkControl is the fork server's control socket, in its init and
	// in the fork server: fdRequest's place.
	fdForkControl = fdRequest
)

// The status pipe's lines (fdStatus), each ended by "\n".
const (
	statusReady   = "ready"   // the guard is in place, the preloads imported
	statusStarted = "started" // the request is in: the snippet runs
	// statusMax bounds what the service reads of the status pipe.
	statusMax = 64 << 10
)

// Python's argv after `python <policy.PythonFlags> -c <loader>`: the
// loader takes argv[loaderArg] (the guard's size, or the guard in base64) and
// pops it, and the guard reads the rest at these slots (guardArgv).
const (
	loaderArg = 1
	// guardArgConfig is the run's rlimits ("resource:limit,..."), or in
	// "forkserver" mode the fork server's configuration (forkServerConf).
	guardArgConfig    = 1
	guardArgMode      = 2 // "isolated", "strict" or "forkserver", with "+unguarded" in tests
	guardArgFontCache = 3 // matplotlib's font cache directory, or ""
	guardArgPreload   = 4 // modules to import before "ready", comma-separated, or ""
	guardArgSite      = 5 // and on: site directories added to sys.path
)

// guardArgv is the guard's argv from argv[guardArgConfig] on, each
// argument at its slot.
func guardArgv(config, mode, fontCache, preload string, site []string) []string {
	argv := make([]string, guardArgSite, guardArgSite+len(site))
	argv[guardArgConfig], argv[guardArgMode], argv[guardArgFontCache], argv[guardArgPreload] = config, mode, fontCache, preload
	return append(argv, site...)[guardArgConfig:]
}

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

// The init's report (initStatus, one JSON line on fdInitStatus) is bounded
// by construction, whatever the snippet left in its work dir: the init
// cuts it to these bounds before it writes it (encodeReport) and the
// service reads no more than reportMaxBytes of it (readReport). A
// snippet's thousands of files or long, escaped names come back as
// omitted files, named one by one up to reportMaxOmitted and counted
// past it; never as a report the service cannot read.
const (
	// reportMaxOmitted is how many omitted files the report names one by
	// one; one more entry (executor.OmitNotNamed) counts the rest.
	reportMaxOmitted = 100
	// reportMaxPath bounds a path in the report, in bytes before JSON
	// escaping (which takes up to 6 bytes a byte): a longer omitted path
	// is cut, a returned file with a longer path is omitted.
	reportMaxPath = 8 << 10
	// reportMaxError bounds the init's error message.
	reportMaxError = 4 << 10
)

// forkServerConf is the fork server's configuration (forkserver.py), at
// guardArgConfig: the policy, for the mechanics there to apply, and the
// protocol's numbers it uses.
type forkServerConf struct {
	CloneFlags  uintptr `json:"clone_flags"`
	SysClone    int     `json:"sys_clone"` // clone(2)'s number here
	Seccomp     string  `json:"seccomp"`   // hex of the assembled filter
	ProcOptions string  `json:"proc_options"`
	WorkDir     string  `json:"work_dir"`
	ShmDir      string  `json:"shm_dir"`
	WorkInodes  int     `json:"work_inodes"`
	WorkNoExec  bool    `json:"work_noexec"`
	UID         int     `json:"uid"`
	IDBase      int     `json:"id_base"`

	// The protocol's numbers, from the declarations below.
	ControlFD    int    `json:"control_fd"`     // fdForkControl
	StatusFD     int    `json:"status_fd"`      // fdStatus
	Ready        string `json:"ready"`          // statusReady
	RequestMax   int    `json:"request_max"`    // forkRequestMax: the most a run request takes
	RunFDs       int    `json:"run_fds"`        // runFDs: descriptors of a run request
	RunPythonFDs int    `json:"run_python_fds"` // runPythonFDs: python's 0 to 4, first of a run's descriptors
	RunBack      int    `json:"run_back"`       // runReport: the back channel to the init, in the fork server
	RunLifeline  int    `json:"run_lifeline"`   // runLifeline
	HelloMax     int    `json:"hello_max"`      // forkHelloMax: one datagram on the back channel
	ErrorMax     int    `json:"error_max"`      // forkErrorMax
}

// forkRlimit is one of a run's rlimits, set as soft = hard.
type forkRlimit struct {
	Resource int    `json:"resource"`
	Value    uint64 `json:"value"`
}

// forkRun is the message that asks the fork server for one run.
type forkRun struct {
	Rlimits   []forkRlimit  `json:"rlimits"`
	Memory    int64         `json:"memory"` // bound of the whole run, accounted by its init
	WorkBytes int64         `json:"work_bytes"`
	Prefault  bool          `json:"prefault"` // a pre-forked run: copy the shared pages before "ready"
	Slot      int           `json:"slot"`     // the snippet's uid slot, -1: none (the service is not root)
	Collect   collectLimits `json:"collect"`
}

// Descriptors of a run request, as the service sends them (see
// forkServer.spawn): python's 0 to 4, then the init's report, which stays
// with the fork server's init, and the lifeline, which the run's PID 1
// holds as well.
const (
	// forkRequestMax bounds a run request (forkRun, JSON) on the control
	// socket, and the fork server's (forkserver.py) read of it.
	forkRequestMax = 64 << 10
	runPythonFDs   = 5 // python's 0 to 4
	runReport      = runPythonFDs
	runLifeline    = runReport + 1
	runFDs         = runLifeline + 1
)

const (
	// forkHelloMax bounds a datagram on a run's back channel: python's
	// hello, the init's answer.
	forkHelloMax = 4096
	// forkErrorMax is how many characters of its error forkserver.py
	// sends in a hello: JSON in UTF-8 takes at most 6 bytes each, so they
	// fit in forkHelloMax (TestForkErrorFitsTheHello).
	forkErrorMax = 600
)

// forkHello is what a forked python says on its back channel once it
// mounted its /proc and work dir, with its credentials (its pid, as this
// init sees it) and its work dir; or why it could not.
type forkHello struct {
	Error string `json:"error,omitempty"`
}

// Sessions (session.go): a live python that runs cells, one after
// another, in one persistent __main__ (guard.py's _runblock_session). The
// request pipe and the status pipe stay open while the cells run, so the
// cells' code can read and write them: everything the service reads of a
// session is bounded and checked, and anything malformed ends the session
// with the cell's failure, never the service's (see policy.go).
//
//	service → python  fdRequest  sessionStart and the collect limits, one
//	                             line: "session <files> <bytes> <path
//	                             bytes> <named omitted> <depth> <entries>
//	                             <scratch prefixes...>"; then per cell a
//	                             line "<cell> <nonce> <request bytes> <stdin
//	                             bytes>", the request (encodeRequest) and
//	                             its stdin
//	python → service  1 and 2    the cell's output, then its end marker:
//	                             sessionMarkOpen, the cell's nonce,
//	                             sessionMarkClose
//	python → service  fdStatus   the cell's end: a line "<nonce> <outcome>
//	                             <files> <omitted>", then per file a line
//	                             "<path bytes> <content bytes>", the path
//	                             and the content, then per omitted file a
//	                             line "<path bytes> <size> <reason>" and
//	                             the path (the reason omitNotNamed: size
//	                             counts the files not named)
//
// The nonce is fresh for each cell, drawn by the service when it sends
// the cell: no code of an earlier cell can know it. Each line the service
// reads is at most sessionLineMax bytes; a cell's end holds at most the
// collect limits' files and bytes, reportMaxOmitted named omitted files
// and one count, and paths of reportMaxPath bytes. Output written after a
// cell's marker (by a thread or process still running) belongs to the
// next cell.
const (
	sessionStart     = "session "
	sessionMarkOpen  = "\x00runblock-cell-end "
	sessionMarkClose = "\x00"
	// sessionNonceBytes is the size of a cell's nonce, before hex.
	sessionNonceBytes = 16
	// sessionLineMax bounds each line the service reads on fdStatus.
	sessionLineMax = 256
)

// A cell's outcome, in its end.
const (
	cellOK     = "ok"     // it ran to its end
	cellRaised = "raised" // it raised: the traceback is on its stderr
	cellExited = "exit"   // it raised SystemExit: python exits after its end
)

// Why a file a cell created or changed does not come back, in its end:
// the reasons of executor.OmittedFile, as tokens.
const (
	omitSymlink    = "symlink"
	omitNotRegular = "not-regular"
	omitHardLink   = "hard-link"
	omitUnreadable = "unreadable"
	omitTooDeep    = "too-deep"
	omitCount      = "count"
	omitSize       = "size"
	omitNotNamed   = "not-named"
)

// omitReasons are the reasons of the tokens above.
var omitReasons = map[string]string{
	omitSymlink: executor.OmitSymlink, omitNotRegular: executor.OmitNotRegular, omitHardLink: executor.OmitHardLink,
	omitUnreadable: executor.OmitUnreadable, omitTooDeep: executor.OmitTooDeep, omitCount: executor.OmitCount,
	omitSize: executor.OmitSize, omitNotNamed: executor.OmitNotNamed,
}
