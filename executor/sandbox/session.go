package sandbox

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox/internal/policy"
	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
	"github.com/runblock/runblock/executor/sandbox/internal/stage"
)

var _ executor.SessionStarter = (*Executor)(nil)

// StartSession starts a live session: a sandbox like a run's (every
// layer, its own uid, work dir and namespaces), a fork of the fork server
// when there is one, else started from scratch, whose python runs cells
// one after another in one persistent __main__ (see protocol.go). Its
// memory limit, the executor's default, bounds the whole session; each
// cell has its own timeout. It is never a pooled sandbox: a session's
// CPU time rlimit is policy.SessionCPU, where a pooled one's is a run's.
func (e *Executor) StartSession(ctx context.Context) (executor.LiveSession, error) {
	if err := ctx.Err(); err != nil {
		return nil, &executor.Error{Code: executor.ErrCanceled, Message: "session start canceled", Err: err}
	}
	lim := limits{Timeout: policy.SessionCPU, Memory: e.cfg.MemoryBytes}
	p, err := e.start(ctx, e.plan, lim, e.forkServer(true).spawn)
	if err != nil {
		return nil, err
	}
	s, err := newSessionSandbox(e, p)
	if err != nil {
		return nil, &executor.Error{Code: executor.ErrInternal, Message: "start session", Err: err}
	}
	return s, nil
}

// sessionSandbox is the sandbox's side of a live session: its live
// process (the sandbox, its init and its python), waiting for its next
// cell.
type sessionSandbox struct {
	e      *Executor
	p      *proc
	out    *cellStream
	err    *cellStream
	grew   chan struct{} // a cell's kept output grew (one pending signal): its live output
	frames *bufio.Reader // the status pipe: the cells' ends

	budgetMu sync.Mutex
	budgets  map[int]*outputBudget // by cell: what its stdout and stderr may write together

	mu      sync.Mutex // held while a cell runs, and to release
	cell    int
	ended   atomic.Bool // released, or found dead
	closing atomic.Bool
	readers sync.WaitGroup

	// eldestMu guards the sandbox's eldest process (/proc/PID) and its
	// PID namespace, once found (see found): MemoryBytes counts beside a
	// cell.
	eldestMu sync.Mutex
	eldest   string
	pidNS    string
}

// newSessionSandbox takes over p's pipes (stopping the readers its start
// gave them) and tells its guard that it runs a session; p is destroyed
// when it fails.
func newSessionSandbox(e *Executor, p *proc) (*sessionSandbox, error) {
	pre, err := takeOver(p)
	if err != nil {
		p.destroy()
		return nil, err
	}
	s := &sessionSandbox{e: e, p: p, frames: bufio.NewReaderSize(p.statusR, 4096), budgets: map[int]*outputBudget{}, grew: make(chan struct{}, 1)}
	s.out = newCellStream(p.outR, e.cfg.KeepBytes, s.budget, s.grew)
	s.err = newCellStream(p.errR, e.cfg.KeepBytes, s.budget, s.grew)
	s.out.commit(pre[0])
	s.err.commit(pre[1])
	for _, c := range []*cellStream{s.out, s.err} {
		s.readers.Go(c.drain)
	}
	// Standard input is each cell's own (sys.stdin); descriptor 0 reads
	// EOF, so that a process that reads it does not wait.
	p.stdin.Close()
	lim := p.plan.transfer()
	head := fmt.Sprintf("%s%d %d %d %d %d %d %s\n", protocol.SessionStart, max(lim.MaxFiles, 0), max(lim.MaxBytes, 0),
		protocol.ReportMaxPath, protocol.ReportMaxOmitted, stage.CollectDepth, 4*policy.WorkInodes, strings.Join(policy.ScratchPrefixes, " "))
	// Into an empty pipe: python read the guard before it said "ready".
	if _, err := io.WriteString(p.request, head); err != nil {
		s.release()
		return nil, err
	}
	// Idle until its first cell, as between cells (see idle).
	s.idle()
	return s, nil
}

// idle stops the session's processes (see hold) and then tells its init
// that nothing of the session runs until the next cell wakes it
// (proc.sleep): a forked session's init then counts nothing and blocks,
// so an idle session uses no CPU. Where not every process could be
// stopped, the init goes on counting. s.mu is held (or s is not yet
// shared).
func (s *sessionSandbox) idle() {
	if s.pause() {
		s.p.sleep()
	}
}

// takeOver stops the readers p's start gave its stdout, stderr and status
// pipes (a read deadline in the past ends their reads), and returns what
// they had read of stdout and stderr: nothing, unless python wrote before
// its hand-over. Nothing had come on the status pipe after "ready": the
// guard writes there only once it has a cell.
func takeOver(p *proc) ([2][]byte, error) {
	files := []*os.File{p.outR, p.errR, p.statusR}
	for _, f := range files {
		if err := f.SetReadDeadline(time.Unix(1, 0)); err != nil {
			return [2][]byte{}, err
		}
	}
	<-p.stdout.done
	<-p.stderr.done
	<-p.statusDone
	for _, f := range files {
		if err := f.SetReadDeadline(time.Time{}); err != nil {
			return [2][]byte{}, err
		}
	}
	return [2][]byte{p.stdout.buf, p.stderr.buf}, nil
}

// budget is the output budget of cell n, shared by its two streams.
func (s *sessionSandbox) budget(n int) *outputBudget {
	s.budgetMu.Lock()
	defer s.budgetMu.Unlock()
	b, ok := s.budgets[n]
	if !ok {
		b = newOutputBudget(s.e.cfg.MaxOutputBytes)
		s.budgets[n] = b
	}
	return b
}

// Alive reports whether the session's python still holds its state.
func (s *sessionSandbox) Alive() bool { return !s.ended.Load() && s.p.alive() }

// errSessionEnded: a cell for a session whose python has ended.
var errSessionEnded = &executor.Error{Code: executor.ErrInternal, Message: "the session has ended"}

// Run runs one cell: see executor.LiveSession.
func (s *sessionSandbox) Run(ctx context.Context, req executor.Request) (executor.Result, error) {
	if n := int64(len(req.Code) + len(req.Stdin)); n > s.e.cfg.MaxCodeBytes {
		return executor.Result{}, executor.Errorf(executor.ErrTooLarge, "snippet and stdin are %d bytes, over the limit of %d bytes", n, s.e.cfg.MaxCodeBytes)
	}
	if err := checkFiles(req.Files, max(s.e.cfg.MaxFiles, 0), s.e.cfg.MaxFilesBytes); err != nil {
		return executor.Result{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.Alive() {
		s.release()
		return executor.Result{}, errSessionEnded
	}
	if err := ctx.Err(); err != nil {
		return executor.Result{}, &executor.Error{Code: executor.ErrCanceled, Message: "run canceled", Err: err}
	}
	s.cell++
	c := &cellRun{s: s, n: s.cell, req: req, timeout: cmp.Or(max(req.Timeout, 0), s.e.cfg.Timeout)}
	defer func() {
		s.budgetMu.Lock()
		delete(s.budgets, c.n)
		s.budgetMu.Unlock()
	}()
	// Between cells the session's processes are stopped: what a cell
	// left running uses no CPU until the next cell (see hold), and its
	// init counts nothing (see idle). It counts again before they go on.
	if err := s.p.wake(); err != nil {
		s.release()
		return executor.Result{}, errSessionEnded
	}
	s.resume()
	res, err := c.run(ctx)
	if !s.ended.Load() {
		stopped := s.pause()
		s.overLimit(&res)
		if stopped && !s.ended.Load() {
			s.p.sleep()
		}
	}
	return res, err
}

// overLimit ends the session with the memory verdict when what its
// sandbox holds once the cell ended, counted here as its init counts it
// past the limit, is over the limit. The init's own count is polled, and
// where the CPU is starved it can count late; a cell's end does not wait
// for it, so without this a session could pass its limit a cell at a time.
// The init's count also runs beside the cell's end: where it killed the
// sandbox meanwhile, nothing of it runs now, and the verdict is the init's
// (see killedAfterCell).
func (s *sessionSandbox) overLimit(res *executor.Result) {
	used, ok := s.held()
	if !(ok && used > s.p.lim.Memory) && (s.running() || !s.killedAfterCell()) {
		return
	}
	s.release()
	res.Success, res.ExitCode, res.Signal, res.MemoryExceeded, res.Error = false, -1, "SIGKILL", true, "MemoryError"
}

// endGrace bounds how long killedAfterCell waits for an init whose
// processes are gone to report: past it, the session is taken to live
// (its processes could not be listed for a moment).
const endGrace = 2 * time.Second

// killedAfterCell waits, where nothing of the session runs once its cell
// ended, for its init's report, and reports whether the init killed the
// sandbox for its memory; the session is then released.
func (s *sessionSandbox) killedAfterCell() bool {
	p := s.p
	grace := time.NewTimer(endGrace)
	defer grace.Stop()
	select {
	case <-p.waited:
	case <-grace.C:
		return false
	}
	p.drain(s.out.done, s.err.done)
	var res executor.Result
	killed, err := p.exitStatus(&res)
	s.release()
	return killed && err == nil
}

// Close ends the session: its whole sandbox is killed, and its work dir,
// uid slot and pipes are released. A cell running meanwhile ends as
// canceled.
func (s *sessionSandbox) Close() error {
	s.closing.Store(true)
	s.p.kill()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.release()
	return nil
}

// release kills the session's sandbox, if it lives, and releases
// everything it held; s.mu is held (or s is not yet shared).
func (s *sessionSandbox) release() {
	if s.ended.Swap(true) {
		return
	}
	s.p.destroy()
	s.readers.Wait()
}

// cellRun is one cell on its way.
type cellRun struct {
	s       *sessionSandbox
	n       int
	req     executor.Request
	timeout time.Duration
	nonce   string
}

// cellEnd is a cell's end as read on the status pipe.
type cellEnd struct {
	outcome  string
	files    []executor.File
	omitted  []executor.OmittedFile
	displays []executor.Display
	err      error
}

func (c *cellRun) run(ctx context.Context) (executor.Result, error) {
	s, p := c.s, c.s.p
	var nonce [protocol.SessionNonceBytes]byte
	rand.Read(nonce[:])
	c.nonce = hex.EncodeToString(nonce[:])
	marker := []byte(protocol.SessionMarkOpen + c.nonce + protocol.SessionMarkClose)
	out, errs := s.out.arm(c.n, marker), s.err.arm(c.n, marker)
	if out == nil || errs == nil {
		// Not reached: a cell ends cleanly only once both markers came.
		s.release()
		return executor.Result{}, &executor.Error{Code: executor.ErrInternal, Message: "session streams out of step"}
	}
	budget := s.budget(c.n)

	var frame bytes.Buffer
	request := encodeRequest(c.req)
	fmt.Fprintf(&frame, "%d %s %d %d\n", c.n, c.nonce, len(request), len(c.req.Stdin))
	frame.Write(request)
	frame.WriteString(c.req.Stdin)
	start := time.Now()
	// Both end by the cell's end or by release (the sandbox dead, the
	// pipes closed), which waits for them.
	wrote := make(chan struct{})
	s.readers.Go(func() {
		defer close(wrote)
		_, _ = p.request.Write(frame.Bytes())
	})
	ends := make(chan cellEnd, 1)
	s.readers.Go(func() { ends <- c.readEnd() })
	timer := time.NewTimer(c.timeout)
	defer timer.Stop()

	var end cellEnd
	var haveEnd, timedOut, canceled, outputLimit bool
	var broken error
	wroteC, endsC, outC, errC := wrote, ends, out.ended, errs.ended
	waited := p.waited
	// The cell's output so far goes to the caller's live view, if any,
	// from this loop: never after Run returns.
	live, grew := executor.OutputOf(ctx), s.grew
	if live == nil {
		grew = nil
	}
	for {
		if haveEnd && outC == nil && errC == nil && wroteC == nil && (end.outcome != protocol.CellExited || waited == nil) {
			break
		}
		select {
		case <-wroteC:
			wroteC = nil
		case end = <-endsC:
			endsC = nil
			switch {
			case end.err == nil:
				haveEnd = true
			case errors.Is(end.err, io.EOF) || errors.Is(end.err, io.ErrUnexpectedEOF) || errors.Is(end.err, os.ErrClosed):
				// The status pipe closed: python is ending, or
				// closed it; the wait status or the timer tells.
			default:
				broken = end.err
			}
		case <-outC:
			outC = nil
		case <-errC:
			errC = nil
		case <-grew:
			stdout, _, _ := s.out.text(out)
			stderr, _, _ := s.err.text(errs)
			live(stdout, stderr)
		case <-waited:
			waited = nil
		case <-timer.C:
			timedOut = true
		case <-budget.exceeded:
			outputLimit = true
		case <-ctx.Done():
			canceled = true
		}
		if timedOut || outputLimit || canceled || broken != nil || (waited == nil && end.outcome != protocol.CellExited) {
			break
		}
	}
	duration := time.Since(start)
	res := executor.Result{Duration: duration, DurationMS: duration.Milliseconds(), TimeoutLimit: c.timeout, MemoryLimit: p.lim.Memory}
	outputLimit = outputLimit || budget.total.Load() > budget.limit
	if haveEnd && waited != nil && !timedOut && !outputLimit && !canceled && end.outcome != protocol.CellExited {
		// The cell ended and the session lives on.
		c.output(&res, out, errs)
		res.ExitCode = 0
		if end.outcome == protocol.CellRaised {
			res.ExitCode = 1
		}
		res.Success = res.ExitCode == 0
		verdict(&res, false, c.timeout, c.s.e.cfg.MaxOutputBytes)
		c.files(&res, end)
		return res, nil
	}
	return c.ended(ctx, &res, end, haveEnd, out, errs, timedOut, outputLimit, canceled, broken)
}

// ended finishes a cell with which the session's python ended: it exited,
// died, or was killed (timeout, output limit, cancel, a malformed end).
func (c *cellRun) ended(ctx context.Context, res *executor.Result, end cellEnd, haveEnd bool, out, errs *segment,
	timedOut, outputLimit, canceled bool, broken error) (executor.Result, error) {
	s, p := c.s, c.s.p
	killed := timedOut || outputLimit || canceled || broken != nil || s.closing.Load()
	p.kill()
	<-p.waited
	p.drain(s.out.done, s.err.done)
	c.output(res, out, errs)
	res.OutputLimit = res.OutputLimit || outputLimit
	var cgroupOOM bool
	if p.cgroup != nil {
		cgroupOOM, p.memoryPeak = p.cgroup.oomKilled()
	}
	stale := p.namespaced && len(p.initStatus) == 0 && p.reportErr == nil && !killed && !cgroupOOM
	killedForMemory, err := p.exitStatus(res)
	s.release()
	if stale {
		// Killed, not by us: the sandbox died under the session (its
		// fork server was killed).
		return executor.Result{}, &executor.Error{Code: executor.ErrInternal, Message: "the session's sandbox died"}
	}
	if err != nil {
		return *res, err
	}
	if s.closing.Load() {
		return *res, &executor.Error{Code: executor.ErrCanceled, Message: "session closed"}
	}
	if canceled {
		return *res, &executor.Error{Code: executor.ErrCanceled, Message: "run canceled", Err: ctx.Err()}
	}
	killedForMemory = killedForMemory || cgroupOOM
	if res.Signal == "SIGXCPU" {
		timedOut = true
	}
	res.Timeout = timedOut && !killedForMemory
	res.Success = res.ExitCode == 0 && res.Signal == "" && !res.Timeout && !res.OutputLimit && !killedForMemory && broken == nil
	if broken != nil && !res.Timeout && !killedForMemory && !res.OutputLimit {
		res.Error = fmt.Sprintf("Session ended: its python broke the session's protocol (%v; process killed)", broken)
		return *res, nil
	}
	verdict(res, killedForMemory, c.timeout, c.s.e.cfg.MaxOutputBytes)
	if haveEnd && end.outcome == protocol.CellExited {
		c.files(res, end)
	}
	return *res, nil
}

// output fills in the cell's stdout and stderr.
func (c *cellRun) output(res *executor.Result, out, errs *segment) {
	var outCut, errCut bool
	res.Stdout, res.StdoutBytes, outCut = c.s.out.text(out)
	res.Stderr, res.StderrBytes, errCut = c.s.err.text(errs)
	res.OutputTruncated = outCut || errCut
	res.OutputLimit = out.budget.total.Load() > out.budget.limit
}

// files fills in the files the cell created or changed, and what it
// showed, from its end.
func (c *cellRun) files(res *executor.Result, end cellEnd) {
	res.Results = placeDisplays(end.displays, res.StdoutBytes)
	caps := c.s.p.plan.caps
	if caps.MaxFiles <= 0 {
		return
	}
	finishFiles(res, c.req.Files, end.files, end.omitted, caps.MaxFiles, caps.MaxBytes)
}

// errBadEnd: what came on the status pipe is not the cell's end.
type errBadEnd string

func (e errBadEnd) Error() string { return "malformed cell end: " + string(e) }

// readEnd reads the cell's end from the status pipe, checking every
// count and size against its bounds before it reads what they announce.
func (c *cellRun) readEnd() cellEnd {
	r := c.s.frames
	head, err := readFields(r)
	if err != nil {
		return cellEnd{err: err}
	}
	lim := c.s.p.plan.transfer()
	lim.MaxFiles, lim.MaxBytes = max(lim.MaxFiles, 0), max(lim.MaxBytes, 0)
	if len(head) != 5 || head[0] != c.nonce {
		return cellEnd{err: errBadEnd("not this cell's")}
	}
	end := cellEnd{outcome: head[1]}
	if end.outcome != protocol.CellOK && end.outcome != protocol.CellRaised && end.outcome != protocol.CellExited {
		return cellEnd{err: errBadEnd("unknown outcome")}
	}
	nFiles, err1 := count(head[2], int64(lim.MaxFiles))
	nOmitted, err2 := count(head[3], protocol.ReportMaxOmitted+1)
	nDisplays, err3 := count(head[4], protocol.DisplayCountMax+2)
	if err := errors.Join(err1, err2, err3); err != nil {
		return cellEnd{err: err}
	}
	left := lim.MaxBytes
	shown := map[string]bool{}
	for range nFiles {
		f, err := readFields(r)
		if err != nil {
			return cellEnd{err: err}
		}
		if len(f) != 2 {
			return cellEnd{err: errBadEnd("a file's line")}
		}
		nPath, err1 := count(f[0], protocol.ReportMaxPath)
		nContent, err2 := count(f[1], left)
		if err := errors.Join(err1, err2); err != nil {
			return cellEnd{err: err}
		}
		left -= nContent
		b := make([]byte, nPath+nContent)
		if _, err := io.ReadFull(r, b); err != nil {
			return cellEnd{err: err}
		}
		name, ok := shownPath(string(b[:nPath]), shown)
		if !ok {
			return cellEnd{err: errBadEnd("a file's path")}
		}
		end.files = append(end.files, executor.File{Path: name, Content: b[nPath:]})
	}
	for range nOmitted {
		f, err := readFields(r)
		if err != nil {
			return cellEnd{err: err}
		}
		if len(f) != 3 {
			return cellEnd{err: errBadEnd("an omitted file's line")}
		}
		nPath, err1 := count(f[0], protocol.ReportMaxPath)
		size, err2 := count(f[1], 1<<62)
		reason, ok := protocol.OmitReasons[f[2]]
		if err := errors.Join(err1, err2); err != nil || !ok {
			return cellEnd{err: cmp.Or[error](err, errBadEnd("an omitted file's reason"))}
		}
		b := make([]byte, nPath)
		if _, err := io.ReadFull(r, b); err != nil {
			return cellEnd{err: err}
		}
		if reason == executor.OmitNotNamed {
			end.omitted = append(end.omitted, executor.OmittedFile{Path: protocol.NotNamedPath(int(size)), Reason: reason, Count: int(size)})
			continue
		}
		end.omitted = append(end.omitted, executor.OmittedFile{Path: stage.EscapeInvalid(string(b)), Size: size, Reason: reason})
	}
	if end.displays, err = readDisplays(r, nDisplays); err != nil {
		return cellEnd{err: err}
	}
	return end
}

// readFields reads one line of at most protocol.SessionLineMax bytes and splits it.
func readFields(r *bufio.Reader) ([]string, error) {
	var line []byte
	for {
		b, err := r.ReadSlice('\n')
		line = append(line, b...)
		if len(line) > protocol.SessionLineMax {
			return nil, errBadEnd(fmt.Sprintf("a line over %d bytes", protocol.SessionLineMax))
		}
		if err == nil {
			return strings.Fields(string(line[:len(line)-1])), nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
}

// count parses a decimal count in [0, most].
func count(s string, most int64) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > most {
		return 0, errBadEnd(fmt.Sprintf("a count %.20q out of [0, %d]", s, most))
	}
	return n, nil
}

// shownPath is the path a file of the work dir comes back under (each
// byte that is not UTF-8 written \xNN, made unique among shown), and
// whether raw is a clean relative path, as the work dir's names are.
func shownPath(raw string, shown map[string]bool) (string, bool) {
	if raw == "" || path.IsAbs(raw) || path.Clean(raw) != raw || raw == ".." || strings.HasPrefix(raw, "../") || strings.ContainsRune(raw, 0) {
		return "", false
	}
	name := stage.EscapeInvalid(raw)
	for n := 2; shown[name]; n++ {
		name = stage.EscapeInvalid(raw) + "~" + strconv.Itoa(n)
	}
	shown[name] = true
	return name, true
}

// cellStream reads one of a session's output streams for its whole life
// and cuts it into the cells' output at their end markers. It holds back
// the last bytes that could begin a marker until the next read tells.
type cellStream struct {
	f      *os.File
	keep   int
	budget func(cell int) *outputBudget
	grew   chan<- struct{} // signalled, without waiting, when a cell's kept output grows
	done   chan struct{}   // at EOF, or stopped past its output budget

	mu     sync.Mutex
	seg    *segment
	marker []byte // the end of seg, nil until its cell is sent
	held   []byte
}

// segment is one cell's output on one stream: its first keep bytes, and
// how many it wrote.
type segment struct {
	cell   int
	buf    []byte
	n      int64
	budget *outputBudget
	ended  chan struct{} // its marker came
}

// markerLen is the length of every cell's end marker.
const markerLen = len(protocol.SessionMarkOpen) + 2*protocol.SessionNonceBytes + len(protocol.SessionMarkClose)

func newCellStream(f *os.File, keep int64, budget func(int) *outputBudget, grew chan<- struct{}) *cellStream {
	return &cellStream{f: f, keep: int(keep), budget: budget, grew: grew, done: make(chan struct{}),
		seg: &segment{cell: 1, budget: budget(1), ended: make(chan struct{})}}
}

// drain reads the stream until EOF (the sandbox is dead, or its read end
// closed), or until the current cell passes its output budget: then
// whoever writes blocks, and the cell is stopped. It reads into a small
// buffer, which an idle session holds for as long as it lives (hundreds
// of them may), and into a larger one from the first read that fills it:
// a flood takes fewer reads.
func (s *cellStream) drain() {
	defer close(s.done)
	chunk := make([]byte, 4<<10)
	for {
		n, err := s.f.Read(chunk)
		if n > 0 && !s.take(chunk[:n]) {
			return
		}
		if n == len(chunk) && len(chunk) < 32<<10 {
			chunk = make([]byte, 32<<10)
		}
		if err != nil {
			s.mu.Lock()
			s.commit(s.held)
			s.held = nil
			s.mu.Unlock()
			return
		}
	}
}

// take adds b to the stream, and reports whether the current cell is
// still within its output budget.
func (s *cellStream) take(b []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	data := append(s.held, b...)
	for s.marker != nil {
		i := bytes.Index(data, s.marker)
		if i < 0 {
			break
		}
		s.commit(data[:i])
		data = data[i+len(s.marker):]
		close(s.seg.ended)
		next := s.seg.cell + 1
		s.seg, s.marker = &segment{cell: next, budget: s.budget(next), ended: make(chan struct{})}, nil
	}
	h := markerHold(data)
	s.commit(data[:len(data)-h])
	s.held = append([]byte(nil), data[len(data)-h:]...)
	return s.seg.budget.total.Load() <= s.seg.budget.limit
}

// markerHold is how many of data's last bytes could begin an end marker,
// to be held back until the next read tells: from the first NUL of its
// last markerLen-1 bytes after which every byte fits a marker (the open
// mark, then hex digits), or none. Output shown live is held back only
// there.
func markerHold(data []byte) int {
	tail := data[max(0, len(data)-(markerLen-1)):]
	for i, c := range tail {
		if c == protocol.SessionMarkOpen[0] && markerPrefix(tail[i:]) {
			return len(tail) - i
		}
	}
	return 0
}

// markerPrefix reports whether b could be the start of an end marker.
func markerPrefix(b []byte) bool {
	open := protocol.SessionMarkOpen
	if len(b) <= len(open) {
		return open[:len(b)] == string(b)
	}
	if string(b[:len(open)]) != open {
		return false
	}
	for _, c := range b[len(open):] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// commit adds b to the current cell's output; s.mu is held (or s is not
// yet shared).
func (s *cellStream) commit(b []byte) {
	if len(b) == 0 {
		return
	}
	seg := s.seg
	seg.n += int64(len(b))
	if room := s.keep - len(seg.buf); room > 0 {
		seg.buf = append(seg.buf, b[:min(len(b), room)]...)
		select {
		case s.grew <- struct{}{}:
		default:
		}
	}
	seg.budget.add(len(b))
}

// arm gives cell's segment its end marker and returns it; nil when the
// stream is not at cell.
func (s *cellStream) arm(cell int, marker []byte) *segment {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seg.cell != cell {
		return nil
	}
	s.marker = marker
	return s.seg
}

// text is seg's output as valid UTF-8, how many bytes it wrote, and
// whether the text is only a prefix.
func (s *cellStream) text(seg *segment) (string, int64, bool) {
	s.mu.Lock()
	c := capture{buf: seg.buf, n: seg.n}
	s.mu.Unlock()
	text, cut := c.text()
	return text, c.n, cut
}
