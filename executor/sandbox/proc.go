package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox/internal/policy"
	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
	"github.com/runblock/runblock/executor/sandbox/internal/stage"
	"golang.org/x/sys/unix"
)

// limits are the limits a sandbox is started with (the policy's, as its
// rlimits are given for them).
type limits = policy.Limits

// proc is one started, guarded interpreter. After it has said "ready" it
// waits for exactly one snippet; run hands it over and collects the result.
// What differs between a sandbox started from scratch and a fork of the
// fork server is its launch.
type proc struct {
	launch  launch
	plan    *plan
	lim     limits
	born    time.Time
	hostDir string // host work dir to remove, "" with a mount namespace

	stdin, request *os.File // write ends
	readEnds       []*os.File
	outR, errR     *os.File // read ends, also in readEnds
	statusR        *os.File // also in readEnds
	initR          *os.File // not in readEnds (see drain)
	stdout, stderr *capture
	budget         *outputBudget
	grew           chan struct{} // the captures' kept output grew (one pending signal)

	readyLine  chan string   // first status line
	readySteps []string      // the lockdown steps python took, from its ready line
	statusDone chan struct{} // status pipe at EOF
	status     []string      // later status lines, read after statusDone
	initDone   chan struct{} // init status pipe at EOF (closed at once without namespaces)
	initStatus []byte
	reportErr  error // the init's report could not be read whole
	namespaced bool  // stage 1 runs as the namespaces' init and reports python's end
	memoryPeak int64 // the most memory the init or the cgroup accounted for the run
	cgroup     *runCgroup

	waited <-chan struct{} // the sandbox ended (see launch); nil until it started
}

// A launch is how a proc's sandbox was started, which decides how it is
// killed and how its end is known: coldLaunch (cold.go), whose init this
// process started, or forkedLaunch (forked.go), a run of the fork server.
type launch interface {
	// kill kills the whole sandbox (its PID 1 or process group); again
	// is a no-op.
	kill()
	// unreported fills in how python ended when the init sent no report.
	unreported(res *executor.Result)
	// setupError is why the sandbox ended before it was ready, with its
	// stderr, trimmed; !read: its stderr did not reach EOF in time.
	setupError(stderr string, read bool) error
	// release releases what the launch holds once the sandbox is gone;
	// again is a no-op.
	release()
}

// forked reports whether p is a fork of the fork server.
func (p *proc) forked() bool {
	_, ok := p.launch.(*forkedLaunch)
	return ok
}

// kill kills the whole sandbox.
func (p *proc) kill() { p.launch.kill() }

// spawn starts a sandbox as described by plan and waits until its guard is
// in place. The sandbox lives until run ends or destroy is called, not
// until ctx ends: ctx only bounds the wait for readiness.
func spawn(ctx context.Context, plan *plan, lim limits, keep, maxOutput int64) (*proc, error) {
	cold := &coldLaunch{}
	p := newProc(plan, lim, maxOutput, cold)
	ends, err := p.pipes(plan.layers.Namespaces)
	if err != nil {
		return p.fail(ends, err)
	}
	hostUID := plan.runUID()
	dir := policy.WorkDir
	if !plan.layers.Namespaces {
		dir, err = os.MkdirTemp("", "runblock-")
		if err != nil {
			return p.fail(ends, err)
		}
		p.hostDir = dir
		if hostUID >= 0 {
			if err := os.Chown(dir, hostUID, hostUID); err != nil {
				return p.fail(ends, err)
			}
		}
	}
	cgroupFD := -1
	if plan.cgroup != nil {
		if p.cgroup, err = plan.cgroup.newRun(lim.Memory); err != nil {
			return p.fail(ends, err)
		}
		cgroupFD = p.cgroup.fd
	}
	spec := plan.spec(lim, dir)
	pctx, cancel := context.WithCancel(context.Background())
	cold.cancel = cancel
	cmd, err := plan.command(pctx, spec, hostUID, cgroupFD)
	if err != nil {
		return p.fail(ends, err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.ExtraFiles = ends.stdin, ends.stdout, ends.stderr, ends.extra()
	cmd.WaitDelay = time.Second
	cold.cmd = cmd
	if p.waited, err = cold.start(); err != nil {
		return p.fail(ends, err)
	}
	ends.close()
	// The guard first (see guardLoader); python reads it as it starts. A
	// python that died first fails this write, and ready says why it died.
	_, _ = p.request.Write(plan.py.Code)
	return p.ready(ctx, keep)
}

func newProc(plan *plan, lim limits, maxOutput int64, l launch) *proc {
	return &proc{launch: l, plan: plan, lim: lim, born: time.Now(), readyLine: make(chan string, 1), statusDone: make(chan struct{}),
		initDone: make(chan struct{}), budget: newOutputBudget(maxOutput), grew: make(chan struct{}, 1)}
}

// childEnds are the sandbox's ends of its pipes, in the order of its
// descriptors 0 to 5 (init is nil without namespaces).
type childEnds struct {
	stdin, stdout, stderr, request, status, init *os.File
}

func (c childEnds) extra() []*os.File {
	if c.init == nil {
		return []*os.File{c.request, c.status}
	}
	return []*os.File{c.request, c.status, c.init}
}

func (c childEnds) close() {
	for _, f := range []*os.File{c.stdin, c.stdout, c.stderr, c.request, c.status, c.init} {
		if f != nil {
			f.Close()
		}
	}
}

// pipes makes the sandbox's pipes, keeping the service's ends in p; with
// init, also the pipe of the init's report.
func (p *proc) pipes(init bool) (childEnds, error) {
	var c childEnds
	var err error
	in := func() (r, w *os.File) { // the sandbox reads
		if err == nil {
			w, r, err = pipe(false)
		}
		return r, w
	}
	out := func(keepRead bool) (r, w *os.File) { // the sandbox writes
		if err == nil {
			if r, w, err = pipe(true); err == nil && keepRead {
				p.readEnds = append(p.readEnds, r)
			}
		}
		return r, w
	}
	c.stdin, p.stdin = in()
	c.request, p.request = in()
	p.outR, c.stdout = out(true)
	p.errR, c.stderr = out(true)
	p.statusR, c.status = out(true)
	if init {
		p.initR, c.init = out(false)
	}
	return c, err
}

// fail releases what a sandbox that could not start holds.
func (p *proc) fail(ends childEnds, err error) (*proc, error) {
	ends.close()
	p.destroy()
	return nil, &executor.Error{Code: executor.ErrInternal, Message: "start sandbox", Err: err}
}

// ready starts reading the sandbox's pipes and waits for its guard's
// "ready".
func (p *proc) ready(ctx context.Context, keep int64) (*proc, error) {
	p.stdout = startCapture(p.outR, keep, p.budget, p.grew)
	p.stderr = startCapture(p.errR, keep, p.budget, p.grew)
	go p.readStatus(p.statusR)
	if p.initR != nil {
		p.namespaced = true
		go func() {
			defer close(p.initDone)
			p.initStatus, p.reportErr = readReport(p.initR, p.plan.transfer())
		}()
	} else {
		close(p.initDone)
	}

	select {
	case line := <-p.readyLine:
		if word, steps, _ := strings.Cut(line, " "); word == protocol.StatusReady {
			p.readySteps = strings.Fields(steps)
			return p, nil
		}
		err := errors.New(line)
		if line == exitedEarly {
			<-p.waited
			<-p.initDone
			err = p.setupError()
		}
		p.destroy()
		return nil, &executor.Error{Code: executor.ErrInternal, Message: "sandbox setup failed", Err: err}
	case <-ctx.Done():
		p.destroy()
		return nil, &executor.Error{Code: executor.ErrCanceled, Message: "waiting for the sandbox", Err: ctx.Err()}
	}
}

// exitedEarly stands for the status line of a sandbox that closed its status
// pipe without one.
const exitedEarly = "exited before ready"

func (p *proc) readStatus(r io.Reader) {
	defer close(p.statusDone)
	sc := bufio.NewScanner(io.LimitReader(r, protocol.StatusMax))
	first := true
	for sc.Scan() {
		if first {
			p.readyLine <- sc.Text()
			first = false
			continue
		}
		p.status = append(p.status, sc.Text())
	}
	if first {
		p.readyLine <- exitedEarly
	}
}

// setupError explains why a sandbox died before it was ready.
func (p *proc) setupError() error {
	var st protocol.InitStatus
	if json.Unmarshal(p.initStatus, &st) == nil && st.Error != "" {
		return errors.New(st.Error)
	}
	grace := time.NewTimer(outputGrace)
	defer grace.Stop()
	select {
	case <-p.stderr.done:
	case <-grace.C:
		return p.launch.setupError("", false)
	}
	b, _ := p.stderr.text()
	return p.launch.setupError(strings.TrimSpace(b), true)
}

// alive reports whether the sandbox is still waiting for its snippet.
func (p *proc) alive() bool {
	select {
	case <-p.waited:
		return false
	default:
		return true
	}
}

// destroy kills the sandbox, waits for it and releases everything it held.
func (p *proc) destroy() {
	p.kill()
	if p.waited != nil {
		<-p.waited
	}
	for _, f := range p.readEnds {
		f.Close()
	}
	if p.initR != nil {
		p.initR.Close()
	}
	if p.stdin != nil {
		p.stdin.Close()
	}
	if p.request != nil {
		p.request.Close()
	}
	if p.hostDir != "" {
		_ = os.RemoveAll(p.hostDir)
	}
	if p.cgroup != nil {
		_ = p.cgroup.remove()
	}
	p.launch.release()
}

// errStale: the sandbox died, not by our kill, before the snippet could
// end (a pooled one killed from outside while idle or at the hand-over).
// Whatever the snippet did died with the sandbox, so it may run again in a
// fresh one.
var errStale = &executor.Error{Code: executor.ErrInternal, Message: "sandbox died before or during the hand-over"}

// outputGrace bounds how long run waits for the output pipes to reach EOF
// once the sandbox is dead (only a process that escaped the sandbox's
// process tree could keep them open).
const outputGrace = 100 * time.Millisecond

// sleep tells a forked run's init that nothing of the run runs until
// wake (see forkedLaunch.sleep), so that it counts nothing meanwhile;
// false for a sandbox started from scratch, whose init polls.
func (p *proc) sleep() bool {
	f, ok := p.launch.(*forkedLaunch)
	return ok && f.sleep()
}

// wake tells a forked run's init that sleep is over, before the run goes
// on (see forkedLaunch.wake).
func (p *proc) wake() error {
	if f, ok := p.launch.(*forkedLaunch); ok {
		return f.wake()
	}
	return nil
}

// run hands the snippet over and waits for it to end. The timeout counts
// from here. The proc is destroyed afterwards.
func (p *proc) run(ctx context.Context, req executor.Request) (executor.Result, error) {
	defer p.destroy()
	if p.wake() != nil {
		// A pooled run whose init cannot count it: another takes the
		// snippet, which never reached this one.
		return executor.Result{}, errStale
	}
	start := time.Now()
	var writers sync.WaitGroup
	feed := func(f *os.File, s string) {
		writers.Go(func() {
			_, _ = io.WriteString(f, s)
			f.Close()
		})
	}
	feed(p.request, string(encodeRequest(req)))
	feed(p.stdin, req.Stdin)
	stopLive := p.live(executor.OutputOf(ctx))
	timer := time.NewTimer(p.lim.Timeout)
	defer timer.Stop()
	var timedOut, canceled bool
	select {
	case <-p.waited:
	case <-timer.C:
		timedOut = true
	case <-p.budget.exceeded:
	case <-ctx.Done():
		canceled = true
	}
	p.kill()
	<-p.waited
	duration := time.Since(start)
	p.drain(p.stdout.done, p.stderr.done, p.statusDone)
	stopLive()
	p.stdin.Close()
	p.request.Close()
	writers.Wait()

	res := executor.Result{Duration: duration, DurationMS: duration.Milliseconds(), TimeoutLimit: p.lim.Timeout, MemoryLimit: p.lim.Memory}
	var outCut, errCut bool
	res.Stdout, outCut = p.stdout.text()
	res.Stderr, errCut = p.stderr.text()
	res.StdoutBytes, res.StderrBytes = p.stdout.n, p.stderr.n
	res.OutputTruncated = outCut || errCut
	res.OutputLimit = p.budget.total.Load() > p.budget.limit
	started := slices.Contains(p.status, protocol.StatusStarted)
	// With a cgroup, the kernel kills the whole sandbox, init included,
	// when the run passes its memory.max.
	var cgroupOOM bool
	if p.cgroup != nil {
		cgroupOOM, p.memoryPeak = p.cgroup.oomKilled()
	}
	if !started && !timedOut && !canceled && !cgroupOOM {
		return executor.Result{}, errStale
	}
	// The init reports how python ended unless it was killed. Killed but not
	// by us: the sandbox died under the snippet (a pooled one killed from
	// outside while it was handed over), so a fresh sandbox must take it.
	if p.namespaced && len(p.initStatus) == 0 && p.reportErr == nil && !timedOut && !canceled && !res.OutputLimit && !cgroupOOM {
		return executor.Result{}, errStale
	}
	killedForMemory, err := p.exitStatus(&res)
	if err != nil {
		return res, err
	}
	killedForMemory = killedForMemory || cgroupOOM
	if res.Signal == "SIGXCPU" {
		timedOut = true
	}
	if canceled {
		return res, &executor.Error{Code: executor.ErrCanceled, Message: "run canceled", Err: ctx.Err()}
	}
	res.Timeout = timedOut && !killedForMemory
	res.Success = res.ExitCode == 0 && res.Signal == "" && !res.Timeout && !res.OutputLimit && !killedForMemory
	verdict(&res, killedForMemory, p.lim.Timeout, p.budget.limit)
	if err := p.files(&res, req.Files); err != nil {
		return res, err
	}
	if !req.Script {
		p.displays(&res)
	}
	return res, nil
}

// verdict fills in the memory verdict and the error line of a finished
// run or cell, whose success, timeout and output limit are known, and
// whose limits were timeout and outputLimit bytes. The verdict comes from
// wait statuses and the service's and the init's own accounting. Stderr
// only tells a failed run's MemoryError apart: a hint that cannot change
// whether the run failed.
func verdict(res *executor.Result, killedForMemory bool, timeout time.Duration, outputLimit int64) {
	res.MemoryExceeded = killedForMemory ||
		(!res.Success && !res.Timeout && !res.OutputLimit && res.Signal == "" && strings.HasPrefix(errorLine(res.Stderr), "MemoryError"))
	switch {
	case res.Success:
	case killedForMemory:
		res.Error = "MemoryError"
	case res.Timeout:
		res.Error = fmt.Sprintf("Execution timed out after %s (process killed)", timeout)
	case res.OutputLimit:
		res.Error = fmt.Sprintf("Output limit exceeded: more than %d bytes (process killed)", outputLimit)
	case res.Signal != "":
		// No traceback: what python wrote last is no error line of its.
		res.Error = "Killed by " + res.Signal
	default:
		res.Error = errorLine(res.Stderr)
	}
}

// drain waits, once the sandbox is dead, until the readers of its output
// and status pipes (readers) are done, and then the init's report: past
// outputGrace it closes the pipes' read ends, which only a process that
// escaped the sandbox's process tree could keep open. The report's only
// writer is the init, which is gone (or, forked, has written it all), so
// its pipe reaches EOF once read, however long the reader is kept from
// the CPU: cut at outputGrace, a report of many files lost its end.
// reportGrace only bounds a wait that cannot be long.
func (p *proc) drain(readers ...chan struct{}) {
	grace := time.NewTimer(outputGrace)
	defer grace.Stop()
	for _, done := range readers {
		select {
		case <-done:
		case <-grace.C:
			for _, f := range p.readEnds {
				f.Close()
			}
			<-done
		}
	}
	grace.Reset(reportGrace)
	select {
	case <-p.initDone:
	case <-grace.C:
		p.initR.Close()
		<-p.initDone
	}
}

// reportGrace bounds how long drain waits for the report of an init that
// is gone.
const reportGrace = 10 * time.Second

// live calls fn, when not nil, with the output kept so far each time it
// grew, until stop is called; the captures never wait for fn, which gets
// the latest output when it is slower than the snippet.
func (p *proc) live(fn executor.OutputFunc) (stop func()) {
	if fn == nil {
		return func() {}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case <-p.grew:
				fn(p.stdout.sofar(), p.stderr.sofar())
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

// files fills in the files the snippet left: sent by the init, which read
// them in the sandbox's own view after every process in it died, or read
// here from the host work dir once the sandbox's process group is dead.
// A killed sandbox (timeout, output limit) returns none.
func (p *proc) files(res *executor.Result, in []executor.File) error {
	if p.plan.caps.MaxFiles <= 0 {
		return nil
	}
	var got []executor.File
	var omitted []executor.OmittedFile
	switch {
	case len(p.initStatus) > 0:
		st, err := p.report()
		if err != nil {
			return err
		}
		got, omitted = st.Files, st.Omitted
	case p.hostDir != "" && !res.Timeout && !res.OutputLimit:
		var err error
		if got, omitted, err = stage.CollectFiles(p.hostDir, p.plan.transfer()); err != nil {
			return &executor.Error{Code: executor.ErrInternal, Message: "read the work dir", Err: err}
		}
	}
	finishFiles(res, in, got, omitted, p.plan.caps.MaxFiles, p.plan.caps.MaxBytes)
	return nil
}

// displays fills in what a cell showed (see protocol.go's Rich output):
// sent by the init, or read here from the host work dir. A killed run
// wrote none.
func (p *proc) displays(res *executor.Result) {
	var raw []byte
	switch {
	case len(p.initStatus) > 0:
		if st, err := p.report(); err == nil {
			raw = st.Displays
		}
	case p.hostDir != "":
		raw = stage.ReadDisplays(p.hostDir)
	}
	ds, err := decodeDisplays(raw)
	if err != nil {
		res.Stderr += displaysLost(err)
		return
	}
	res.Results = placeDisplays(ds, res.StdoutBytes)
}

// exitStatus fills in how python ended: from stage 1's report when it ran
// in namespaces, else from the process itself; and whether the init killed
// the run for its memory.
func (p *proc) exitStatus(res *executor.Result) (killedForMemory bool, err error) {
	if len(p.initStatus) > 0 || p.reportErr != nil {
		st, err := p.report()
		if err != nil {
			return false, err
		}
		if st.Error != "" {
			return false, &executor.Error{Code: executor.ErrInternal, Message: "sandbox failed", Err: errors.New(st.Error)}
		}
		res.ExitCode = st.ExitCode
		if st.Signal != 0 {
			res.ExitCode = -1
			res.Signal = unix.SignalName(syscall.Signal(st.Signal))
		}
		p.memoryPeak = st.Peak
		return st.Memory, nil
	}
	p.launch.unreported(res)
	return false, nil
}

// lockdown is the lockdown steps the sandbox took, in the order it took
// them, as it recorded them (see protocol's Lockdown steps): its init's,
// from its report once the run ended, then python's, from its ready line.
func (p *proc) lockdown() []string {
	var init []string
	if len(p.initStatus) > 0 {
		if st, err := p.report(); err == nil {
			init = st.Lockdown
		}
	}
	return slices.Concat(init, p.readySteps)
}

// report decodes the init's report.
func (p *proc) report() (protocol.InitStatus, error) {
	var st protocol.InitStatus
	err := p.reportErr
	if err == nil {
		err = json.Unmarshal(p.initStatus, &st)
	}
	if err != nil {
		return st, &executor.Error{Code: executor.ErrInternal, Message: "read sandbox status", Err: err}
	}
	return st, nil
}

// sgr matches an SGR escape sequence (a colour, a reset), as a coloured
// traceback has (Request.Colour).
var sgr = regexp.MustCompile(`\x1b\[[0-9;:]*m`)

// errorLine is the last line of the traceback, without its colours, or
// "Execution failed".
func errorLine(stderr string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if last := strings.TrimSpace(sgr.ReplaceAllString(lines[len(lines)-1], "")); last != "" {
		return last
	}
	return "Execution failed"
}
