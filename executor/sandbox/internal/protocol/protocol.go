// Package protocol is the protocol between the service (package sandbox),
// the sandbox's stages (package stage: this binary re-executed as an init
// or the locker), the fork server (forkserver.py, in a python its init
// starts) and python with its guard (guard.py): every descriptor, argv
// slot and message, with its direction, encoding and bound, declared here
// and nowhere else. The Python side takes its numbers from here: the fork
// server from its configuration (ForkServerConf), the guard from the
// protocol lines of guard.py, which the sandbox's TestPythonProtocol holds
// to these declarations (as it holds the keys forkserver.py reads of its
// configuration to ForkServerConf's).
//
// A run started from scratch (spawn):
//
//	service → stage   argv[0]       InitMarker or LockerMarker: which stage
//	service → stage   argv[1]       StageSpec, JSON (ArgSpec)
//	stage → python    argv          policy.PythonFlags, -c guardLoader, the
//	                                guard's size (LoaderArg), GuardArgv
//	service → python  FDRequest     the compiled guard (its size in bytes is
//	                                LoaderArg), then the request
//	                                (the service's encodeRequest), until EOF
//	python → service  FDStatus      lines: StatusReady once the guard is in
//	                                place (with the lockdown steps python
//	                                took: see Lockdown steps), StatusStarted
//	                                once the request is in; the locker's
//	                                "error: ..." (die); at most StatusMax
//	                                bytes are read
//	init → python     FDGate        nothing: the init closes its end once it
//	                                supervises python, its memory counted
//	                                once; the guard waits for that EOF
//	                                before anything else (where no init
//	                                starts python, FDGate is not open)
//	init → service    FDInitStatus  InitStatus, one JSON line (a setup error,
//	                                or how python ended and its files, and
//	                                the lockdown steps the init took); at
//	                                most ReportMaxBytes; python never holds it
//
// The request (the service's encodeRequest, guard.py's _runblock_unpack)
// is a header line "<code bytes> <args> <files> <flags>", then the code,
// each argument as "<bytes>\n<arg>" and each input file as "<path bytes>
// <bytes>\n<path><content>"; flags is a sum of the Request flags below.
//
// Python gets descriptors 0 to 4 (stdin, stdout, stderr, FDRequest,
// FDStatus), and FDGate from a cold run's init; the guard closes FDGate
// once it opened, and FDRequest and FDStatus before the snippet runs; every
// other descriptor is closed in python (the stages mark them close-on-exec;
// the guard closes them where there is no stage). Nothing python writes
// decides its verdict: that comes from the wait status, the init's report
// or the sandbox process's own.
//
// The fork server (the service's forkServer.launch):
//
//	service → its init     argv[0]  ForkServerMarker; argv[1] StageSpec
//	init → fork server     argv     -c forkServerLoader, the compiled guard
//	                                in base64 (LoaderArg), then GuardArgv with
//	                                ForkServerConf, JSON, at GuardArgConfig
//	service → its init     FDForkControl  SOCK_SEQPACKET: one ForkRun per
//	                                datagram (JSON, at most ForkRequestMax)
//	                                with RunFDs descriptors (below)
//	init → fork server     FDForkControl  the ForkRun as its Record, with
//	                                ZygoteFDs descriptors (below): python's,
//	                                a back channel and the run's PID 1
//	init → fork server     FDForkControl  a run whose python to reap,
//	                                ForkReapSize bytes
//	fork server → service  FDStatus StatusReady
//	init → service         FDInitStatus   InitStatus when the fork server ends
//
// A forked run's descriptors, in the order of a ForkRun's: python's 0 to 4
// (RunPythonFDs), then RunReport (the service reads the run's InitStatus
// from it; the fork server's init keeps it and gives the fork server a back
// channel in its place) and RunLifeline (closed by the service to kill the
// run: the init then kills the run's PID 1). The service writes one byte
// on the lifeline, LifelineIdle, where nothing of the run can run until
// further word (a pooled run waits for its snippet; a session's processes
// are stopped between cells): the fork server's init then stops counting
// its memory and blocks; and LifelineBusy before it lets the run go on,
// which the init then counts at its pace: not at once, since nothing of
// it ran while it idled and what it held was counted (a pooled run's by
// its init before its start, a session's by the service as its last cell
// ended, with its processes stopped). On the back channel python sends its
// hello (ForkHello, JSON, one datagram of at most ForkHelloMax bytes, with
// its credentials, its work dir and a sock_diag socket) and the init
// answers "{}" with the Landlock ruleset, or python sends ForkHello.Error
// (ForkErrorMax characters at most) when its run could not be made.
// As it exits, python closes its descriptors 0 to 2 and touches the times
// of its work dir (guard.py's _runblock_exit): the init, which watches
// the work dir's attributes, then reads how python ended from its stat
// file once the kernel says it is exiting, and reports (the report is one
// line, ended by a newline, and the service reads no further), without
// waiting for its memory to be freed. The touch decides nothing: where
// the kernel does not say python is exiting, the init stops watching.
package protocol

import (
	"encoding/binary"
	"fmt"

	"github.com/runblock/runblock/executor"
)

// The executor re-executes its own binary (/proc/self/exe) as the sandbox.
// os.Args[0] tells the stage; os.Args[ArgSpec] carries the StageSpec
// as JSON.
const (
	InitMarker   = "runblock-sandbox-init"   // PID 1 of the namespaces: builds the root, forks python
	LockerMarker = "runblock-sandbox-locker" // without namespaces: locks itself down, execs python
	// The fork server's init: PID 1 of its namespaces; builds the root,
	// starts the fork server, supervises the forked runs.
	ForkServerMarker = "runblock-sandbox-forkserver"
	ArgSpec          = 1
)

// File descriptors shared by the stages and the guard (see guard.py). The
// stages mark every other descriptor close-on-exec; python gets 0 to 4, and
// the guard closes 3 and 4 before the snippet runs. Nothing the snippet can
// write decides its verdict: that comes from the wait status (the init's
// report, which python never holds, or the sandbox process's own).
const (
	FDRequest    = 3 // read end: the snippet's source
	FDStatus     = 4 // write end: guard's "ready", "started"; the locker's "error: ..."
	FDInitStatus = 5 // write end: the init's setup error or python's end (JSON); never python's
	// FDGate is python's read end of its init's gate (a cold run's):
	// FDInitStatus's place, which python never holds.
	FDGate = FDInitStatus
	// FDForkControl is the fork server's control socket, in its init and
	// in the fork server: FDRequest's place.
	FDForkControl = FDRequest
)

// The status pipe's lines (FDStatus), each ended by "\n".
const (
	// StatusReady: the guard is in place, the preloads imported. A run's
	// python follows it with the lockdown steps it took, each after a
	// space (see Lockdown steps); the fork server's own ready line has
	// none.
	StatusReady   = "ready"
	StatusStarted = "started" // the request is in: the snippet runs
	// StatusMax bounds what the service reads of the status pipe.
	StatusMax = 64 << 10
)

// Request flags, in the request's header.
const (
	// RequestColour: the reply renders ANSI colour (executor.Request.Colour):
	// the guard asks a python that colours tracebacks (3.13 on) to colour
	// the snippet's.
	RequestColour = 1
	// RequestCell: the snippet runs as a notebook cell (executor.Request's
	// Script is false): see Rich output below.
	RequestCell = 2
	// RequestLaunch: the request is launched (executor.Request.Launch):
	// the code is the launch's target (the code, the file's path or the
	// module's name) and the first argument its mode (executor.Launch),
	// before the program's own.
	RequestLaunch = 4
)

// Python's argv after `python <policy.PythonFlags> -c <loader>`: the
// loader takes argv[LoaderArg] (the guard's size, or the guard in base64) and
// pops it, and the guard reads the rest at these slots (GuardArgv).
const (
	LoaderArg = 1
	// GuardArgConfig is the run's rlimits ("resource:limit,..."), or in
	// "forkserver" mode the fork server's configuration (ForkServerConf).
	GuardArgConfig    = 1
	GuardArgMode      = 2 // "isolated", "strict" or "forkserver", with "+unguarded" in tests
	GuardArgFontCache = 3 // matplotlib's font cache directory, or ""
	GuardArgPreload   = 4 // modules to import before "ready", comma-separated, or ""
	GuardArgSite      = 5 // and on: site directories added to sys.path
)

// GuardArgv is the guard's argv from argv[GuardArgConfig] on, each
// argument at its slot.
func GuardArgv(config, mode, fontCache, preload string, site []string) []string {
	argv := make([]string, GuardArgSite, GuardArgSite+len(site))
	argv[GuardArgConfig], argv[GuardArgMode], argv[GuardArgFontCache], argv[GuardArgPreload] = config, mode, fontCache, preload
	return append(argv, site...)[GuardArgConfig:]
}

// StageSpec is everything the stages need, passed from the service.
type StageSpec struct {
	Python string   `json:"python"` // real interpreter path
	Args   []string `json:"args"`   // argv after argv[0]
	Env    []string `json:"env"`
	Dir    string   `json:"dir"` // python's working directory

	// The init (namespaces) only.
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
	Collect     CollectLimits `json:"collect"`              // what the init sends back of the work dir

	// The fork server's init only: each forked run's PID 1, which it
	// makes (see ZygoteInit), is cloned with the namespaces of RunClone
	// (all but the network's, which is made beside), and the init maps
	// its user namespace's ids: the run's root to its own, RunUID to
	// RunIDBase plus the run's slot (ForkRun.Slot).
	RunClone  uintptr `json:"run_clone,omitempty"`
	RunUID    int     `json:"run_uid,omitempty"`
	RunIDBase int     `json:"run_id_base,omitempty"`

	// Every stage.
	Landlock *LandlockSet `json:"landlock,omitempty"`
	Seccomp  []byte       `json:"seccomp,omitempty"` // assembled filter: SockFilterSize bytes an instruction
}

// SockFilterSize is the size of one struct sock_filter. StageSpec.Seccomp
// is the kernel's struct sock_filter array in native byte order (base64 in
// JSON), assembled once in the service: as JSON objects its instructions
// doubled the time every init spends decoding its spec.
const SockFilterSize = 8

type LandlockSet struct {
	ListDirs []string `json:"list_dirs"` // readdir only, inherited below
	RODirs   []string `json:"ro_dirs"`
	RWDirs   []string `json:"rw_dirs"`
	ROFiles  []string `json:"ro_files"`
	RWFiles  []string `json:"rw_files"`
}

// InitStatus is the init's report on FDInitStatus: how python ended, and the files
// left in the work dir once every process in the sandbox is dead.
type InitStatus struct {
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
	// Displays is the run's ResultsFile as python left it (at most
	// DisplaysMax bytes; nil when absent, unreadable or larger).
	Displays []byte `json:"displays,omitempty"`
	// Lockdown: the lockdown steps a cold run's init took, in the order
	// it took them (see Lockdown steps); none from the fork server's init.
	Lockdown []string `json:"lockdown,omitempty"`
}

// Lockdown steps: the sandbox records each step of its lockdown as it
// takes it, under these names, and the service reads them back in the
// order they were taken (the canary run and TestLockdownOrder hold it to
// policy.Lockdown, the one order). A cold run's init names its steps in
// its report (InitStatus.Lockdown) and its python, which sets the
// rlimits itself, on its ready line: "ready rlimits". A forked run's
// python takes every step itself (forkserver.py, which gets these names
// in ForkServerConf) and names them all on its ready line:
// "ready namespaces mounts ... rlimits".
const (
	StepNamespaces  = "namespaces"
	StepMounts      = "mounts"
	StepDescriptors = "descriptors" // python keeps 0 to 4 only
	StepNoNewPrivs  = "no_new_privs"
	StepLandlock    = "landlock"
	StepSeccomp     = "seccomp"
	StepUID         = "uid" // the sandbox uid, no capabilities
	StepRlimits     = "rlimits"
)

// The init's report (InitStatus, one JSON line on FDInitStatus) is bounded
// by construction, whatever the snippet left in its work dir: the init
// cuts it to these bounds before it writes it (the stage's encodeReport)
// and the service reads no more than ReportMaxBytes of it (readReport). A
// snippet's thousands of files or long, escaped names come back as
// omitted files, named one by one up to ReportMaxOmitted and counted
// past it; never as a report the service cannot read.
const (
	// ReportMaxOmitted is how many omitted files the report names one by
	// one; one more entry (executor.OmitNotNamed) counts the rest.
	ReportMaxOmitted = 100
	// ReportMaxPath bounds a path in the report, in bytes before JSON
	// escaping (which takes up to 6 bytes a byte): a longer omitted path
	// is cut, a returned file with a longer path is omitted.
	ReportMaxPath = 8 << 10
	// ReportMaxError bounds the init's error message.
	ReportMaxError = 4 << 10
)

// ReportMaxBytes is the most a report collected within lim can take:
// the files' content in base64, every path escaped, and the rest.
func ReportMaxBytes(lim CollectLimits) int64 {
	const entry = 6*ReportMaxPath + 256 // an escaped path, its size, reason and MIME type
	return 4*(lim.MaxBytes+2)/3 + int64(max(lim.MaxFiles, 0)+ReportMaxOmitted+1)*entry + 6*ReportMaxError + 4*(DisplaysMax+2)/3 + 4<<10
}

// NotNamedPath stands for n omitted files not named one by one: the path
// of the report's last omitted entry (executor.OmitNotNamed) past
// ReportMaxOmitted.
func NotNamedPath(n int) string { return fmt.Sprintf("(%d more files)", n) }

// CollectLimits bound what is read back of a work dir: the count and total
// size of regular files. The collector reads up to twice the configured
// caps, so that input files the snippet left unchanged (dropped afterwards)
// do not crowd out its own; the service applies the caps themselves.
type CollectLimits struct {
	MaxFiles int   `json:"max_files"`
	MaxBytes int64 `json:"max_bytes"`
}

// ForkServerConf is the fork server's configuration (forkserver.py), at
// GuardArgConfig: the policy, for the mechanics there to apply, and the
// protocol's numbers it uses.
type ForkServerConf struct {
	JoinFlags   uintptr `json:"join_flags"`   // the namespaces of the run's PID 1 that python joins (all but its PID namespace)
	CloneNewPID uintptr `json:"clone_newpid"` // CLONE_NEWPID, with which the fork server forks python into the run's PID namespace
	Seccomp     string  `json:"seccomp"`      // hex of the assembled filter
	ProcOptions string  `json:"proc_options"`
	WorkDir     string  `json:"work_dir"`
	ShmDir      string  `json:"shm_dir"`
	WorkInodes  int     `json:"work_inodes"`
	WorkNoExec  bool    `json:"work_noexec"`
	UID         int     `json:"uid"`

	// The protocol's numbers, from the declarations below.
	ControlFD    int    `json:"control_fd"`     // FDForkControl
	StatusFD     int    `json:"status_fd"`      // FDStatus
	Ready        string `json:"ready"`          // StatusReady
	RequestMax   int    `json:"request_max"`    // ForkRequestMax: the most a run request takes
	RunFDs       int    `json:"run_fds"`        // ZygoteFDs: descriptors of a run request
	RunPythonFDs int    `json:"run_python_fds"` // RunPythonFDs: python's 0 to 4, first of a run's descriptors
	RunBack      int    `json:"run_back"`       // ZygoteBack: the back channel to the init
	RunInit      int    `json:"run_init"`       // ZygoteInit: a pidfd of the run's PID 1
	ReapSize     int    `json:"reap_size"`      // ForkReapSize
	HelloMax     int    `json:"hello_max"`      // ForkHelloMax: one datagram on the back channel
	ErrorMax     int    `json:"error_max"`      // ForkErrorMax

	// A run request's fields (RecordSlot...): their positions.
	RecordSlot      int `json:"record_slot"`
	RecordWorkBytes int `json:"record_work_bytes"`
	RecordMemory    int `json:"record_memory"`
	RecordRehearse  int `json:"record_rehearse"`
	RecordInit      int `json:"record_init"`
	RecordRlimits   int `json:"record_rlimits"`

	// The lockdown steps (Step...), which a run's python names on its
	// ready line as it takes them.
	StepNamespaces  string `json:"step_namespaces"`
	StepMounts      string `json:"step_mounts"`
	StepDescriptors string `json:"step_descriptors"`
	StepNoNewPrivs  string `json:"step_no_new_privs"`
	StepLandlock    string `json:"step_landlock"`
	StepSeccomp     string `json:"step_seccomp"`
	StepUID         string `json:"step_uid"`
	StepRlimits     string `json:"step_rlimits"`
}

// ForkRlimit is one of a run's rlimits, which the run's python sets as
// soft = hard, the last step of its lockdown (forkserver.py).
type ForkRlimit struct {
	Resource int    `json:"resource"`
	Value    uint64 `json:"value"`
}

// ForkRun is the message that asks the fork server for one run.
type ForkRun struct {
	Rlimits   []ForkRlimit  `json:"rlimits"`
	Memory    int64         `json:"memory"` // bound of the whole run, accounted by its init
	WorkBytes int64         `json:"work_bytes"`
	Slot      int           `json:"slot"` // the snippet's uid slot, -1: none (the service is not root)
	Collect   CollectLimits `json:"collect"`
	// Rehearse: a pre-forked run of the preloaded fork server, which
	// draws a figure before "ready" (the plots' pool).
	Rehearse bool `json:"rehearse"`
}

// A run request as the fork server's init passes it on to the fork server
// (ForkRun.Record): little-endian 64-bit integers, a field at each of
// these positions, then each rlimit's resource and value (unsigned). The
// fork server reads it with one struct unpack, not a JSON decoder: every
// page the fork server writes after a fork is copied, and the run forked
// before keeps the old copy, for as long as it lives (a session); the
// decoder wrote about 60 of them per run.
const (
	RecordSlot      = iota
	RecordWorkBytes // ForkRun.WorkBytes
	RecordMemory    // ForkRun.Memory
	RecordRehearse  // 1: ForkRun.Rehearse
	RecordInit      // the run's PID 1, by its pid in the init's namespace (see ForkReapSize)
	RecordRlimits   // the first rlimit's resource; its value follows
)

// Record is r as the fork server reads it (see RecordSlot), for the run
// whose PID 1 is init.
func (r ForkRun) Record(init int) []byte {
	rehearse := int64(0)
	if r.Rehearse {
		rehearse = 1
	}
	b := make([]byte, 0, 8*(RecordRlimits+2*len(r.Rlimits)))
	for _, v := range [RecordRlimits]int64{RecordSlot: int64(r.Slot), RecordWorkBytes: r.WorkBytes, RecordMemory: r.Memory, RecordRehearse: rehearse, RecordInit: int64(init)} {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	for _, rl := range r.Rlimits {
		b = binary.LittleEndian.AppendUint64(b, uint64(rl.Resource))
		b = binary.LittleEndian.AppendUint64(b, rl.Value)
	}
	return b
}

// Descriptors of a run request, as the service sends them (see the
// service's forkServer.fork): python's 0 to 4, then the init's report
// and the lifeline, which stay with the fork server's init.
const (
	// ForkRequestMax bounds a run request (ForkRun, JSON) on the control
	// socket, and the fork server's (forkserver.py) read of it.
	ForkRequestMax = 64 << 10
	RunPythonFDs   = 5 // python's 0 to 4
	RunReport      = RunPythonFDs
	RunLifeline    = RunReport + 1
	RunFDs         = RunLifeline + 1
)

// Descriptors of a run request as the fork server's init passes it on to
// the fork server: python's 0 to 4, the back channel's end, and a pidfd
// of the run's PID 1, which the init made (the fork server forks python
// into its namespaces).
const (
	ZygoteBack = RunPythonFDs
	ZygoteInit = ZygoteBack + 1
	ZygoteFDs  = ZygoteInit + 1
)

// ForkReapSize is the size of the init's word to the fork server that a
// run's python is the fork server's to reap, on the control socket: the
// run's PID 1, as its request named it (RecordInit), a little-endian
// 64-bit integer. python is the fork server's child: its zombie keeps how
// it ended, which the init reads from its stat file, until the init has
// read it and asks for the reap (the run's PID 1 ends only once python is
// reaped). The run, not python's pid, because the init may not know that
// one: where the run ends before python said hello, python may be forked
// still, after the init gave up on it. The word follows the run's request
// on the same socket, so the fork server has forked that python, or
// failed to, when it reads it.
const ForkReapSize = 8

// The bytes the service writes on a forked run's lifeline (see above),
// which the fork server's init reads.
const (
	LifelineIdle = 'i' // nothing of the run runs: count nothing until LifelineBusy
	LifelineBusy = 'b' // the run goes on: count it at its pace
)

const (
	// ForkHelloMax bounds a datagram on a run's back channel: python's
	// hello, the init's answer.
	ForkHelloMax = 4096
	// ForkErrorMax is how many characters of its error forkserver.py
	// sends in a hello: JSON in UTF-8 takes at most 6 bytes each, so they
	// fit in ForkHelloMax (TestForkErrorFitsTheHello).
	ForkErrorMax = 600
)

// ForkHello is what a forked python says on its back channel once it
// mounted its /proc and work dir, with its credentials (its pid, as this
// init sees it) and its work dir; or why it could not.
type ForkHello struct {
	Error string `json:"error,omitempty"`
}

// Sessions (executor/sandbox/session.go): a live python that runs cells, one after
// another, in one persistent __main__ (guard.py's _runblock_session). The
// request pipe and the status pipe stay open while the cells run, so the
// cells' code can read and write them: everything the service reads of a
// session is bounded and checked, and anything malformed ends the session
// with the cell's failure, never the service's (see package policy).
//
//	service → python  FDRequest  SessionStart and the collect limits, one
//	                             line: "session <files> <bytes> <path
//	                             bytes> <named omitted> <depth> <entries>
//	                             <scratch prefixes...>"; then per cell a
//	                             line "<cell> <nonce> <request bytes> <stdin
//	                             bytes>", the request (encodeRequest) and
//	                             its stdin
//	python → service  1 and 2    the cell's output, then its end marker:
//	                             SessionMarkOpen, the cell's nonce,
//	                             SessionMarkClose
//	python → service  FDStatus   the cell's end: a line "<nonce> <outcome>
//	                             <files> <omitted> <displays>", then per file a line
//	                             "<path bytes> <content bytes>", the path
//	                             and the content, then per omitted file a
//	                             line "<path bytes> <size> <reason>" and
//	                             the path (the reason OmitNotNamed: size
//	                             counts the files not named), then its
//	                             displays (see Rich output)
//
// The nonce is fresh for each cell, drawn by the service when it sends
// the cell: no code of an earlier cell can know it. Each line the service
// reads is at most SessionLineMax bytes; a cell's end holds at most the
// collect limits' files and bytes, ReportMaxOmitted named omitted files
// and one count, and paths of ReportMaxPath bytes. Output written after a
// cell's marker (by a thread or process still running) belongs to the
// next cell.
const (
	SessionStart     = "session "
	SessionMarkOpen  = "\x00runblock-cell-end "
	SessionMarkClose = "\x00"
	// SessionNonceBytes is the size of a cell's nonce, before hex.
	SessionNonceBytes = 16
	// SessionLineMax bounds each line the service reads on FDStatus.
	SessionLineMax = 256
)

// Rich output. A run not in script mode (RequestCell) is a notebook cell:
// the guard (_runblock_notebook) makes display() a builtin and shows the
// value of the cell's last expression, each shown object as a Jupyter MIME
// bundle. They travel as displays: a line "<entries> <value> <stdout
// offset>" (value 1 for the last expression's, 0 for display(); the
// offset counts the bytes printed through sys.stdout before it), then per
// entry a line "<MIME type bytes> <data bytes>", the MIME type and the
// data (UTF-8; binary types base64, JSON types as JSON text).
//
//	python → service  ResultsFile  a single run's displays, written as it
//	                               ends: a line "<displays>", then each;
//	                               read by the init (the service, without
//	                               one) once python is dead, and carried
//	                               in InitStatus.Displays
//	python → service  FDStatus     a session cell's displays, after the
//	                               omitted files of its end, whose line
//	                               counts them
//
// The guard keeps within the bounds below (it cuts a long text/plain,
// drops an oversized form and the forms past the run's total, saying so
// in the text/plain); the service reads at most DisplaysMax bytes and
// DisplayCountMax+2 displays of DisplayMIMEMax entries, lines of at most
// SessionLineMax bytes, and drops a run's displays, saying so, when they
// are malformed. A pandas DataFrame or Series also comes as
// "application/vnd.dataresource+json" (Table Schema, orient="table"), of
// its first DisplayTableRows rows and DisplayTableColumns columns, with
// "total_rows" and "total_columns" the whole table's.
const (
	ResultsFile         = ".runblock-results" // in the work dir: a scratch name, never collected
	DisplayTextMax      = 64 << 10            // characters of a text/plain, cut past them with a note
	DisplayEntryMax     = 1 << 20             // bytes of one form; a larger one is dropped
	DisplayRunMax       = 4 << 20             // bytes of a run's forms, all displays together
	DisplayCountMax     = 100                 // displays a run shows; then one note counts the rest
	DisplayMIMEMax      = 16                  // entries of one display, as read
	DisplayTableRows    = 100
	DisplayTableColumns = 20
	// DisplaysMax bounds what the service reads of a run's displays.
	DisplaysMax = DisplayRunMax + (DisplayCountMax+2)*(DisplayMIMEMax+1)*SessionLineMax + 2*DisplayTextMax*4
)

// A cell's outcome, in its end.
const (
	CellOK     = "ok"     // it ran to its end
	CellRaised = "raised" // it raised: the traceback is on its stderr
	CellExited = "exit"   // it raised SystemExit: python exits after its end
)

// Why a file a cell created or changed does not come back, in its end:
// the reasons of executor.OmittedFile, as tokens.
const (
	OmitSymlink    = "symlink"
	OmitNotRegular = "not-regular"
	OmitHardLink   = "hard-link"
	OmitUnreadable = "unreadable"
	OmitTooDeep    = "too-deep"
	OmitCount      = "count"
	OmitSize       = "size"
	OmitNotNamed   = "not-named"
)

// OmitReasons are the reasons of the tokens above.
var OmitReasons = map[string]string{
	OmitSymlink: executor.OmitSymlink, OmitNotRegular: executor.OmitNotRegular, OmitHardLink: executor.OmitHardLink,
	OmitUnreadable: executor.OmitUnreadable, OmitTooDeep: executor.OmitTooDeep, OmitCount: executor.OmitCount,
	OmitSize: executor.OmitSize, OmitNotNamed: executor.OmitNotNamed,
}

// The kernel's numbers forkserver.py passes to prctl, syscall, mount and
// socket as a run's python locks itself down: each is declared there in
// a protocol line ("NAME = value  # protocol: GoName"), which the
// sandbox's TestForkServerKernelNumbers holds to these, and these to
// golang.org/x/sys/unix (the generic ABI's numbers: the same on x86-64
// and arm64). The fork server gets clone's number in its configuration
// (ForkServerConf.SysClone), as it differs between them.
const (
	PrSetDumpable   = 4
	PrSetSeccomp    = 22
	PrSetSecurebits = 28
	PrSetNoNewPrivs = 38
	// SeccompModeFilter is PR_SET_SECCOMP's mode of a filter program.
	SeccompModeFilter = 2
	// SecbitsNoRoot are SECBIT_NOROOT and SECBIT_NOROOT_LOCKED: no
	// capabilities gained as root, for good.
	SecbitsNoRoot           = 0x3
	SysLandlockRestrictSelf = 446
	// CapabilityVersion3 is _LINUX_CAPABILITY_VERSION_3, capset's header.
	CapabilityVersion3 = 0x20080522
	MountNoSuid        = 2 // MS_NOSUID
	MountNoDev         = 4 // MS_NODEV
	MountNoExec        = 8 // MS_NOEXEC
	NetlinkSockDiag    = 4
	// SaNoCldStop is SA_NOCLDSTOP: the fork server is not signalled
	// when one of its children stops or continues.
	SaNoCldStop = 1
)
