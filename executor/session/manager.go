package session

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/runblock/runblock/executor"
)

// MemoryReporter is a LiveSession that can say how much memory it holds
// now (executor/sandbox's sessions are). The Manager asks when the session
// starts and after each of its cells, and weighs that against
// Config.MemoryBytes; it counts a live session that is not one at
// Options.SessionBytes.
type MemoryReporter interface {
	MemoryBytes() int64
}

// Metrics receives the Manager's observations. Its methods are called with
// the Manager's lock held: they must not block or call back into it.
type Metrics interface {
	SessionsLive(n int)
	SessionCell()
	// SessionReplay counts a rebuild of a session's state from earlier
	// cells: outcome "restored", or "fresh" when it failed or
	// passed its budget.
	SessionReplay(outcome string, cells int)
	// SessionEvicted counts a live process ended to free room or because
	// it was idle: reason "idle", "count" or "memory".
	SessionEvicted(reason string)
}

// Options configure a Manager.
type Options struct {
	Config
	// SessionBytes is the memory a live session that is no MemoryReporter
	// is counted at: the executor's memory limit, which bounds the whole
	// session. 0: Config.MemoryBytes / Config.MaxLive.
	SessionBytes int64
	// Clock is the time of idleness and of the replay budget; nil:
	// time.Now.
	Clock func() time.Time
	// Ticks, if set, wake the idle sweep instead of a ticker (tests).
	Ticks <-chan time.Time
	// quietTimer, if set, is the timer of the memory count's wait for
	// quiet (tests): armed anew at each cell's end, it fires once that
	// wait is over. nil: a real one.
	quietTimer func(time.Duration) <-chan time.Time
	Logger     *slog.Logger // nil: discard
	Metrics    Metrics      // nil: none
}

// Manager is an executor.Runner that keeps sessions: a Request without a
// Session goes to the Runner it wraps unchanged; the cells of a session run
// one at a time, in the order they come, in the session's live process,
// which is started (and its state rebuilt by replay) when there is none
// that holds the state the cell expects. It owns one goroutine, the idle
// sweep, which Close stops.
type Manager struct {
	inner        executor.Runner
	starter      executor.SessionStarter
	cfg          Config
	sessionBytes int64
	maxRecords   int
	now          func() time.Time
	log          *slog.Logger
	metrics      Metrics

	stop chan struct{} // closed by Close: ends the idle sweep
	done chan struct{} // closed when the idle sweep has ended
	// recount (room for one) wakes the sweep to count the memory of the
	// sessions a cell left stale: after the cell's answer, not before it
	// (a count reads /proc for some milliseconds), once no other cell
	// ended for quiet.
	recount    chan struct{}
	quietTimer func(time.Duration) <-chan time.Time

	mu          sync.Mutex
	closed      bool
	sessions    map[string]*entry
	lru         list.List // of *entry, the most recently used first
	live        int       // sessions with a live process
	liveBytes   int64     // their memory, measured or counted
	recordBytes int64     // the records' size, all sessions together
	busy        int       // cells running
	drained     chan struct{}

	// evicting counts the live processes a session's start evicted that
	// are still ending (see start); Close waits for them once no cell
	// runs.
	evicting sync.WaitGroup
}

// entry is the Manager's record of one session, guarded by Manager.mu.
// Its turn is held by the cell that runs (or End), which alone changes
// the other fields, except that eviction may end the live process of an
// entry that is not busy.
type entry struct {
	key  string
	elem *list.Element

	refs        int             // cells and End calls waiting for or holding the turn
	held        bool            // the turn is taken
	queue       []chan struct{} // those waiting for it, in order; closed to hand it over
	busy        bool            // a cell holds live
	live        executor.LiveSession
	mem         int64  // live's memory as counted
	stale       bool   // a cell ran since mem was counted
	gen         uint64 // counts the live processes it had: tells them apart
	used        time.Time
	cells       int                // cells run, the number of the last
	record      []executor.Request // the successful cells, oldest first
	recordBytes int64
	lost        bool     // the record lacks cells past MaxRecordBytes
	state       [32]byte // the hash of the successful cells (of live, when set)
}

// New returns a Manager that runs requests without a Session on inner and
// sessions on live processes from starter.
func New(inner executor.Runner, starter executor.SessionStarter, opts Options) *Manager {
	cfg := opts.Config.withDefaults()
	m := &Manager{
		inner:        inner,
		starter:      starter,
		cfg:          cfg,
		sessionBytes: opts.SessionBytes,
		maxRecords:   max(minRecords, 4*cfg.MaxLive),
		now:          opts.Clock,
		log:          opts.Logger,
		metrics:      opts.Metrics,
		stop:         make(chan struct{}),
		recount:      make(chan struct{}, 1),
		quietTimer:   opts.quietTimer,
		done:         make(chan struct{}),
		sessions:     make(map[string]*entry),
		drained:      make(chan struct{}),
	}
	if m.sessionBytes <= 0 {
		m.sessionBytes = cfg.MemoryBytes / int64(cfg.MaxLive)
	}
	if m.now == nil {
		m.now = time.Now
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	if m.metrics == nil {
		m.metrics = nopMetrics{}
	}
	ticks, stopTicks := opts.Ticks, func() {}
	if ticks == nil {
		t := time.NewTicker(min(max(cfg.Idle/10, time.Second), time.Minute))
		ticks, stopTicks = t.C, t.Stop
	}
	go m.sweep(ticks, stopTicks)
	return m
}

// Live counts the sessions that have a live process.
func (m *Manager) Live() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.live
}

// Run runs req: alone on the wrapped Runner without a Session, else as the
// next cell of its session.
func (m *Manager) Run(ctx context.Context, req executor.Request) (executor.Result, error) {
	if req.Session == nil {
		return m.inner.Run(ctx, req)
	}
	id := req.Session.ID
	if id == "" || len(id) > executor.MaxSessionIDBytes {
		return executor.Result{}, executor.Errorf(executor.ErrInvalid, "a session id is 1 to %d bytes, not %d", executor.MaxSessionIDBytes, len(id))
	}
	s, turn, err := m.enter(id, true)
	if err != nil {
		return executor.Result{}, err
	}
	if err := m.await(ctx, s, turn); err != nil {
		return executor.Result{}, err
	}
	defer m.leave(s)
	if err := m.claim(s); err != nil {
		return executor.Result{}, err
	}
	res, err := m.cell(ctx, s, req)
	m.release(s)
	return res, err
}

// End ends the session id, if there is one: its live process and the
// record of its cells, so that its next cell starts fresh. It waits for a
// running cell of the session to finish.
func (m *Manager) End(ctx context.Context, id string) error {
	_, err := m.EndSession(ctx, id)
	return err
}

// EndSession is End, reporting whether there was such a session.
func (m *Manager) EndSession(ctx context.Context, id string) (bool, error) {
	s, turn, err := m.enter(id, false)
	if s == nil || err != nil {
		return false, err
	}
	if err := m.await(ctx, s, turn); err != nil {
		return false, err
	}
	defer m.leave(s)
	m.mu.Lock()
	live := m.dropLiveLocked(s)
	m.setRecordLocked(s, nil, [32]byte{}, false)
	s.cells = 0
	m.mu.Unlock()
	closeLive(m.log, live)
	return true, nil
}

// Close ends every live session and stops the idle sweep. Cells still
// running end their sessions when they finish; Close waits for them until
// ctx ends.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	var victims []executor.LiveSession
	for _, s := range m.sessions {
		if !s.busy {
			victims = append(victims, m.dropLiveLocked(s))
		}
	}
	if m.busy == 0 {
		close(m.drained)
	}
	m.mu.Unlock()
	close(m.stop)
	<-m.done
	for _, l := range victims {
		closeLive(m.log, l)
	}
	select {
	case <-m.drained:
		// Only a cell's start evicts: none adds to evicting now.
		m.evicting.Wait()
		return nil
	case <-ctx.Done():
		return fmt.Errorf("closing sessions: cells still running: %w", ctx.Err())
	}
}

// enter finds (or, with create, makes) the session key, counts the caller
// in it and queues it for the session's turn: turn is closed when the turn
// is the caller's (nil: it is already). Without create, a session that
// does not exist is nil.
func (m *Manager) enter(key string, create bool) (*entry, chan struct{}, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, nil, executor.Errorf(executor.ErrShutdown, "runblock is shutting down")
	}
	s, ok := m.sessions[key]
	if !ok {
		if !create {
			return nil, nil, nil
		}
		s = &entry{key: key, used: m.now()}
		s.elem = m.lru.PushFront(s)
		m.sessions[key] = s
	}
	s.refs++
	if !s.held {
		s.held = true
		return s, nil, nil
	}
	turn := make(chan struct{})
	s.queue = append(s.queue, turn)
	return s, turn, nil
}

// await waits for the caller's turn in s; when ctx ends first, the caller
// leaves the queue (handing the turn on if it had just been given it).
func (m *Manager) await(ctx context.Context, s *entry, turn chan struct{}) error {
	if turn == nil {
		return nil
	}
	select {
	case <-turn:
		return nil
	case <-ctx.Done():
	}
	m.mu.Lock()
	if i := slices.Index(s.queue, turn); i >= 0 {
		s.queue = slices.Delete(s.queue, i, i+1)
		m.leaveLocked(s, false)
	} else {
		m.leaveLocked(s, true)
	}
	m.mu.Unlock()
	return &executor.Error{Code: executor.ErrCanceled, Message: "the cell was canceled waiting for the session's previous one", Err: ctx.Err()}
}

// leave hands the turn of s on and counts the caller out of it.
func (m *Manager) leave(s *entry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.leaveLocked(s, true)
}

// leaveLocked counts the caller out of s, handing the turn on if it held
// it, and forgets s if nothing is left of it.
func (m *Manager) leaveLocked(s *entry, held bool) {
	s.refs--
	if held {
		if len(s.queue) > 0 {
			close(s.queue[0])
			s.queue = slices.Delete(s.queue, 0, 1)
		} else {
			s.held = false
		}
	}
	if s.refs == 0 && s.live == nil && s.cells == 0 {
		m.forgetLocked(s)
	}
}

// claim marks s busy, so that neither eviction nor the idle sweep ends
// its process while its cell runs.
func (m *Manager) claim(s *entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return executor.Errorf(executor.ErrShutdown, "runblock is shutting down")
	}
	s.busy = true
	m.busy++
	return nil
}

// release marks the cell of s done, evicting what the bounds no longer
// allow (never s itself, now the most recently used).
func (m *Manager) release(s *entry) {
	m.mu.Lock()
	s.busy = false
	s.used = m.now()
	m.lru.MoveToFront(s.elem)
	var victims []executor.LiveSession
	if m.closed {
		victims = append(victims, m.dropLiveLocked(s))
	} else {
		victims = m.evictLocked(s)
	}
	m.busy--
	if m.closed && m.busy == 0 {
		close(m.drained)
	}
	m.mu.Unlock()
	for _, l := range victims {
		closeLive(m.log, l)
	}
}

// cell runs req in s, which the caller holds busy.
func (m *Manager) cell(ctx context.Context, s *entry, req executor.Request) (executor.Result, error) {
	info := executor.SessionInfo{ID: req.Session.ID}
	m.mu.Lock()
	want, wantState, complete := s.record, s.state, !s.lost
	if req.Session.Replay != nil {
		want, wantState, complete = req.Session.Replay, stateOf(req.Session.Replay), true
	}
	live := s.live
	m.mu.Unlock()

	if live != nil && (!live.Alive() || s.state != wantState) {
		m.mu.Lock()
		m.dropLiveLocked(s)
		m.mu.Unlock()
		closeLive(m.log, live)
		live = nil
	}
	if live == nil {
		var err error
		if live, err = m.start(ctx, s); err != nil {
			return executor.Result{}, err
		}
		restored := complete
		if complete && len(want) > 0 {
			if restored, err = m.replay(ctx, live, want); err != nil {
				m.mu.Lock()
				m.dropLiveLocked(s)
				m.mu.Unlock()
				closeLive(m.log, live)
				return executor.Result{}, err
			}
		}
		m.mu.Lock()
		if restored {
			info.Restored = len(want)
			if req.Session.Replay != nil || s.cells < len(want) {
				s.cells = len(want)
			}
			m.setRecordLocked(s, want, wantState, false)
			if len(want) > 0 {
				m.metrics.SessionReplay("restored", len(want))
			}
		} else {
			m.metrics.SessionReplay("fresh", len(want))
			m.dropLiveLocked(s)
		}
		m.mu.Unlock()
		if !restored {
			m.log.Info("session: starting fresh, its state could not be rebuilt", "session", s.key, "cells", len(want), "record_complete", complete)
			closeLive(m.log, live)
			if live, err = m.start(ctx, s); err != nil {
				return executor.Result{}, err
			}
			info.Fresh = true
			m.mu.Lock()
			m.setRecordLocked(s, nil, [32]byte{}, false)
			s.cells = 0
			m.mu.Unlock()
		}
	}

	cell := req
	cell.Session = nil
	res, err := live.Run(ctx, cell)
	alive := live.Alive()
	m.mu.Lock()
	defer m.mu.Unlock()
	if !alive {
		defer closeLive(m.log, live)
		m.dropLiveLocked(s)
	} else {
		s.stale = true
		select {
		case m.recount <- struct{}{}:
		default:
		}
	}
	if err != nil {
		return executor.Result{}, err
	}
	s.cells++
	m.metrics.SessionCell()
	info.Cell = s.cells
	info.Ended = !alive
	if res.Success && alive {
		m.appendLocked(s, cell)
	}
	res.Session = &info
	return res, nil
}

// start starts a live process for s and counts it.
func (m *Manager) start(ctx context.Context, s *entry) (executor.LiveSession, error) {
	live, err := m.starter.StartSession(ctx)
	if err != nil {
		return nil, err
	}
	mem := m.memoryOf(live)
	m.mu.Lock()
	s.live, s.mem = live, mem
	s.gen++
	m.live++
	m.liveBytes += mem
	m.metrics.SessionsLive(m.live)
	victims := m.evictLocked(s)
	m.mu.Unlock()
	// Ending a process waits for its teardown (3 ms where the preload is
	// mapped): the new session's cell does not wait for it.
	for _, l := range victims {
		m.evicting.Go(func() { closeLive(m.log, l) })
	}
	return live, nil
}

// replay runs cells in live, their output discarded, within the replay
// budget. It reports whether live then holds their state; the error is
// the caller's cancellation or the service's failure.
func (m *Manager) replay(ctx context.Context, live executor.LiveSession, cells []executor.Request) (bool, error) {
	budget, cancel := context.WithTimeout(ctx, m.cfg.ReplayBudget)
	defer cancel()
	// A replayed cell's output is not the cell's: no live view shows it.
	budget = executor.WithOutput(budget, nil)
	began := m.now()
	for _, c := range cells {
		left := m.cfg.ReplayBudget - m.now().Sub(began)
		if left <= 0 {
			return false, nil
		}
		c.Session = nil
		if c.Timeout > left {
			c.Timeout = left
		}
		res, err := live.Run(budget, c)
		switch {
		case ctx.Err() != nil:
			return false, &executor.Error{Code: executor.ErrCanceled, Message: "canceled while rebuilding the session", Err: ctx.Err()}
		case budget.Err() != nil:
			return false, nil
		case err != nil:
			return false, fmt.Errorf("replaying a session's cell: %w", err)
		case !res.Success || !live.Alive():
			return false, nil
		}
	}
	return true, nil
}

func (m *Manager) memoryOf(live executor.LiveSession) int64 {
	if r, ok := live.(MemoryReporter); ok {
		return r.MemoryBytes()
	}
	return m.sessionBytes
}

// quiet is how long the memory count of the sessions a cell ran in waits
// for no other cell to end. Cells that follow each other closer are
// counted once they pause, or at the sweep's next tick: a count walks the
// page tables of a session's processes (1.5 ms of CPU where the preload
// is mapped), which beside the next cell would delay it.
const quiet = 100 * time.Millisecond

// sweep ends idle sessions' processes at each tick, and counts the memory
// of those a cell left stale once cells pause (or at the next tick), until
// Close.
func (m *Manager) sweep(ticks <-chan time.Time, stopTicks func()) {
	defer close(m.done)
	defer stopTicks()
	arm := m.quietTimer
	if arm == nil {
		t := time.NewTimer(quiet)
		t.Stop()
		defer t.Stop()
		arm = func(d time.Duration) <-chan time.Time {
			t.Reset(d)
			return t.C
		}
	}
	var quieted <-chan time.Time // nil while nothing waits to be counted
	for {
		select {
		case <-m.stop:
			return
		case <-ticks:
			m.endIdle()
			m.countMemory()
		case <-m.recount:
			quieted = arm(quiet)
		case <-quieted:
			quieted = nil
			m.countMemory()
		}
	}
}

// countMemory counts the memory of the live sessions a cell ran in since
// their last count, and evicts past the bounds.
func (m *Manager) countMemory() {
	type stale struct {
		s    *entry
		live executor.LiveSession
		gen  uint64
		mem  int64
	}
	var todo []stale
	m.mu.Lock()
	for _, s := range m.sessions {
		if s.stale && s.live != nil {
			s.stale = false
			todo = append(todo, stale{s: s, live: s.live, gen: s.gen})
		}
	}
	m.mu.Unlock()
	for i := range todo {
		todo[i].mem = m.memoryOf(todo[i].live)
	}
	m.mu.Lock()
	for _, t := range todo {
		if t.s.live != nil && t.s.gen == t.gen {
			m.liveBytes += t.mem - t.s.mem
			t.s.mem = t.mem
		}
	}
	victims := m.evictLocked(nil)
	m.mu.Unlock()
	for _, l := range victims {
		closeLive(m.log, l)
	}
}

// endIdle ends the processes of sessions idle for cfg.Idle or longer.
func (m *Manager) endIdle() {
	now := m.now()
	var victims []executor.LiveSession
	m.mu.Lock()
	for e := m.lru.Back(); e != nil; e = e.Prev() {
		s := e.Value.(*entry)
		if now.Sub(s.used) < m.cfg.Idle {
			break
		}
		if s.live != nil && !s.busy {
			victims = append(victims, m.dropLiveLocked(s))
			m.metrics.SessionEvicted("idle")
		}
	}
	m.mu.Unlock()
	for _, l := range victims {
		closeLive(m.log, l)
	}
}

// evictLocked ends the live processes of the least recently used sessions
// (never keep's, nor a busy one's) past the bounds on their number and
// memory, and forgets the records of the least recently used sessions
// without a process past the bounds on records. It returns the processes
// to close.
func (m *Manager) evictLocked(keep *entry) []executor.LiveSession {
	var victims []executor.LiveSession
	for e := m.lru.Back(); e != nil && (m.live > m.cfg.MaxLive || m.liveBytes > m.cfg.MemoryBytes); e = e.Prev() {
		s := e.Value.(*entry)
		if s == keep || s.busy || s.live == nil {
			continue
		}
		reason := "memory"
		if m.live > m.cfg.MaxLive {
			reason = "count"
		}
		victims = append(victims, m.dropLiveLocked(s))
		m.metrics.SessionEvicted(reason)
		m.log.Debug("session: evicted", "session", s.key, "reason", reason)
	}
	for e := m.lru.Back(); e != nil && (len(m.sessions) > m.maxRecords || m.recordBytes > MaxRecordsBytes); {
		prev := e.Prev()
		if s := e.Value.(*entry); s.live == nil && s.refs == 0 {
			m.forgetLocked(s)
		}
		e = prev
	}
	return victims
}

// dropLiveLocked detaches s's live process, if any, and returns it for
// the caller to close outside the lock.
func (m *Manager) dropLiveLocked(s *entry) executor.LiveSession {
	live := s.live
	if live == nil {
		return nil
	}
	s.live = nil
	m.live--
	m.liveBytes -= s.mem
	s.mem = 0
	m.metrics.SessionsLive(m.live)
	return live
}

// forgetLocked removes s, which has no live process, and its record.
func (m *Manager) forgetLocked(s *entry) {
	m.setRecordLocked(s, nil, [32]byte{}, false)
	m.lru.Remove(s.elem)
	delete(m.sessions, s.key)
}

func (m *Manager) setRecordLocked(s *entry, cells []executor.Request, state [32]byte, lost bool) {
	var n int64
	for _, c := range cells {
		n += cellBytes(c)
	}
	if n > MaxRecordBytes {
		cells, n, lost = nil, 0, true
	}
	m.recordBytes += n - s.recordBytes
	s.record = append([]executor.Request(nil), cells...)
	s.recordBytes, s.state, s.lost = n, state, lost
}

// appendLocked adds a successful cell to s's record.
func (m *Manager) appendLocked(s *entry, c executor.Request) {
	s.state = nextState(s.state, c)
	if s.lost {
		return
	}
	n := cellBytes(c)
	if s.recordBytes+n > MaxRecordBytes {
		m.recordBytes -= s.recordBytes
		s.record, s.recordBytes, s.lost = nil, 0, true
		return
	}
	s.record = append(s.record, c)
	s.recordBytes += n
	m.recordBytes += n
}

func cellBytes(c executor.Request) int64 {
	n := int64(len(c.Code) + len(c.Stdin))
	for _, a := range c.Args {
		n += int64(len(a))
	}
	for _, f := range c.Files {
		n += int64(len(f.Path) + len(f.Content))
	}
	return n
}

// stateOf is the state that cells leave, as nextState chains it.
func stateOf(cells []executor.Request) [32]byte {
	var st [32]byte
	for _, c := range cells {
		st = nextState(st, c)
	}
	return st
}

// nextState is the state after c given the state before it: a hash of
// what makes the cell's effect (its code, stdin, arguments and input
// files; not its limits nor its Colour).
func nextState(prev [32]byte, c executor.Request) [32]byte {
	h := sha256.New()
	h.Write(prev[:])
	field(h, c.Code)
	field(h, c.Stdin)
	count(h, len(c.Args))
	for _, a := range c.Args {
		field(h, a)
	}
	count(h, len(c.Files))
	for _, f := range c.Files {
		field(h, f.Path)
		field(h, string(f.Content))
	}
	var st [32]byte
	h.Sum(st[:0])
	return st
}

// field writes s length-prefixed, so that fields cannot run into each other.
func field(h hash.Hash, s string) {
	count(h, len(s))
	h.Write([]byte(s))
}

func count(h hash.Hash, n int) {
	h.Write(binary.LittleEndian.AppendUint64(nil, uint64(n)))
}

func closeLive(log *slog.Logger, live executor.LiveSession) {
	if live == nil {
		return
	}
	if err := live.Close(); err != nil {
		log.Warn("session: ending a live session", "err", err)
	}
}

type nopMetrics struct{}

func (nopMetrics) SessionsLive(int)          {}
func (nopMetrics) SessionCell()              {}
func (nopMetrics) SessionReplay(string, int) {}
func (nopMetrics) SessionEvicted(string)     {}
