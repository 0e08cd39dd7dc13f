package executor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// DefaultQueueSize is the queue bound when Config.QueueSize is not set.
const DefaultQueueSize = 100

// The service's default per-user limits: 5 runs a minute after a burst of
// 5, one job at a time. The scheduler itself takes a zero rate as unlimited.
const (
	DefaultUserRate   = 5.0 / 60
	DefaultUserBurst  = 5
	DefaultMaxPerUser = 1
)

// minLimiterSweep is the number of per-user rate limiters kept before the
// first sweep for idle (full) buckets.
const minLimiterSweep = 64

// Runner is what the Scheduler needs of the executor.
type Runner interface {
	Run(ctx context.Context, req Request) (Result, error)
}

// Config bounds the scheduler.
type Config struct {
	Concurrency int     // RUNBLOCK_CONCURRENCY, default NumCPU
	QueueSize   int     // RUNBLOCK_QUEUE, default DefaultQueueSize
	UserRate    float64 // runs per second per user (RUNBLOCK_USER_RATE "5/min" -> 5/60); <= 0 is unlimited
	UserBurst   int     // RUNBLOCK_USER_BURST, at least 1 when UserRate is set
	MaxPerUser  int     // queued-or-running jobs per user, default 1
	// MaxQueuedPerUser is a user's share of the queue: the jobs it may
	// have waiting (not running), so that one user (an API client) cannot
	// fill the queue and turn everyone else away. 0: half the queue, at
	// least 1.
	MaxQueuedPerUser int
	// RunTimeout is the longest a run lasts unless its Request sets a
	// Timeout (the executor's timeout); a user refused for MaxPerUser is
	// told to retry when their first job will have ended. 0: estimated
	// from the runs measured.
	RunTimeout time.Duration
	Clock      func() time.Time // nil = time.Now
	Logger     *slog.Logger     // nil = discard
	Metrics    Metrics          // nil = none
}

// Metrics receives the scheduler's observations. QueueDepth is called
// with the scheduler's lock held, so that the gauge never goes stale: it must
// not block or call back into the Scheduler.
type Metrics interface {
	RunFinished(outcome string, d time.Duration) // outcome: Result.Outcome() or "rejected"
	QueueDepth(n int)
	RateLimited()
}

// Stats is a snapshot of the scheduler's state.
type Stats struct {
	Running int // jobs in the Runner
	Queued  int // jobs waiting for a slot
	// Users counts the users the fairness order tracks: those with queued or
	// running jobs, and those served in the current round.
	Users int
	// Limiters counts the per-user rate limiters kept; buckets that have
	// refilled are dropped, since a fresh one is the same.
	Limiters int
}

// Scheduler is the shared, fair, rate-limited front of the executor.
//
// Jobs run on their submitter's goroutine once the scheduler grants them a
// slot, so the Scheduler owns no goroutines of its own.
//
// Order is round-robin in rounds: each user gets one job per round, a user's
// jobs run in the order they were submitted, and within a round jobs run in
// the order they arrived. A user who submits while others are queued joins
// the current round, so a user flooding the queue delays another user's
// snippet by at most one run (per flooding user).
type Scheduler struct {
	runner      Runner
	concurrency int
	queueSize   int
	maxPerUser  int
	maxQueued   int // per user
	runTimeout  time.Duration
	userRate    rate.Limit
	userBurst   int
	now         func() time.Time
	log         *slog.Logger
	metrics     Metrics

	// kill ends at Close's deadline: it cancels the runs in flight and
	// sends queued jobs away.
	kill    context.Context
	killAll context.CancelFunc
	drained chan struct{} // closed once closed and idle

	mu           sync.Mutex
	closed       bool
	drainedShut  bool
	queue        []*task // by (round, seq)
	running      int
	round        uint64 // round of the last job started
	seq          uint64
	users        map[string]*user
	limiters     map[string]*rate.Limiter
	sweepAt      int
	avgRun       time.Duration // moving average of run durations
	runsMeasured int
}

// user is a user's place in the fairness order.
type user struct {
	key     string
	queued  int
	running int
	next    uint64  // the earliest round of the user's next job
	tasks   []*task // the user's queued and running jobs
}

func (u *user) idle() bool { return u.queued == 0 && u.running == 0 }

// drop forgets t, which has left the scheduler.
func (u *user) drop(t *task) {
	if i := slices.Index(u.tasks, t); i >= 0 {
		u.tasks = slices.Delete(u.tasks, i, i+1)
	}
}

// task is one submitted job.
type task struct {
	job      Job
	user     *user
	round    uint64
	seq      uint64
	queuedAt time.Time

	// guarded by Scheduler.mu
	ahead   int // index in the queue, -1 before the first placement
	started bool
	begin   time.Time // when it got its slot

	start chan struct{} // closed when the job gets its slot
	moved chan struct{} // signalled (never blocking) when ahead changes
}

// NewScheduler returns a scheduler in front of r.
func NewScheduler(r Runner, cfg Config) *Scheduler {
	s := &Scheduler{
		runner:      r,
		concurrency: cfg.Concurrency,
		queueSize:   cfg.QueueSize,
		maxPerUser:  cfg.MaxPerUser,
		maxQueued:   cfg.MaxQueuedPerUser,
		runTimeout:  cfg.RunTimeout,
		userRate:    rate.Limit(cfg.UserRate),
		userBurst:   cfg.UserBurst,
		now:         cfg.Clock,
		log:         cfg.Logger,
		metrics:     cfg.Metrics,
		drained:     make(chan struct{}),
		users:       make(map[string]*user),
		limiters:    make(map[string]*rate.Limiter),
		sweepAt:     minLimiterSweep,
	}
	if s.concurrency <= 0 {
		s.concurrency = runtime.NumCPU()
	}
	if s.queueSize <= 0 {
		s.queueSize = DefaultQueueSize
	}
	if s.maxPerUser <= 0 {
		s.maxPerUser = 1
	}
	if s.maxQueued <= 0 {
		s.maxQueued = max(s.queueSize/2, 1)
	}
	if s.userBurst <= 0 {
		s.userBurst = 1
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.metrics == nil {
		s.metrics = nopMetrics{}
	}
	s.kill, s.killAll = context.WithCancel(context.Background())
	return s
}

// Submit queues job and waits for its result. Rejections are *Error with
// ErrBusy (RetryAfter estimated when runs have been measured), ErrRateLimited
// (RetryAfter set: for the rate, or for the per-user job limit when the
// user's first job will have ended and a rate token is there), ErrShutdown or
// ErrCanceled (wrapping ctx.Err()). Cancelling ctx takes a queued job out of
// the queue and cancels a running job's Runner context. The Runner's result
// and error are returned unchanged.
func (s *Scheduler) Submit(ctx context.Context, job Job) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, canceled(err)
	}
	t, err := s.admit(job)
	if err != nil {
		s.rejected(job.User, err)
		return Result{}, err
	}
	if err := s.await(ctx, t); err != nil {
		return Result{}, err
	}
	return s.run(ctx, t)
}

// Stats returns a snapshot of the scheduler's state.
func (s *Scheduler) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Running: s.running, Queued: len(s.queue), Users: len(s.users), Limiters: len(s.limiters)}
}

// Close stops accepting jobs, lets queued and running ones finish until ctx
// ends, then cancels the rest: queued jobs get ErrShutdown and running ones
// have their Runner context cancelled. Close returns once every job has left
// the scheduler, so the Runner must return promptly when its context ends.
func (s *Scheduler) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.checkDrainedLocked()
	s.mu.Unlock()

	select {
	case <-s.drained:
		return nil
	default:
	}
	select {
	case <-s.drained:
		return nil
	case <-ctx.Done():
	}

	s.mu.Lock()
	queued, running := len(s.queue), s.running
	s.mu.Unlock()
	if queued+running == 0 {
		<-s.drained
		return nil
	}
	s.log.Warn("shutdown deadline passed, cancelling jobs", "queued", queued, "running", running)
	s.killAll()
	<-s.drained
	return fmt.Errorf("cancelled %d queued and %d running jobs: %w", queued, running, ctx.Err())
}

// admit checks job against the limits and queues it, or starts it at once
// when a slot is free. The per-user limits come first, as their wait is the
// one worth telling; only an admitted job takes a rate token.
func (s *Scheduler) admit(job Job) (*task, error) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errShutdown()
	}
	u := s.users[job.User]
	if u != nil && u.queued+u.running >= s.maxPerUser {
		var e *Error
		if s.maxPerUser == 1 {
			e = Errorf(ErrRateLimited, "you already have a snippet queued or running")
		} else {
			e = Errorf(ErrRateLimited, "you already have %d snippets queued or running", s.maxPerUser)
		}
		e.RetryAfter = s.userFreeLocked(u, now)
		return nil, e
	}
	// A user with a job waiting would queue this one too.
	if u != nil && u.queued >= s.maxQueued {
		e := Errorf(ErrRateLimited, "you already have %d snippets waiting, your share of the queue", u.queued)
		e.RetryAfter = s.userFreeLocked(u, now)
		return nil, e
	}
	tok, err := s.reserveLocked(job.User, now)
	if err != nil {
		return nil, err
	}
	if s.running >= s.concurrency && len(s.queue) >= s.queueSize {
		tok.giveBack(now)
		e := Errorf(ErrBusy, "the queue is full (%d waiting)", len(s.queue))
		rounds := (len(s.queue) + s.concurrency - 1) / s.concurrency
		e.RetryAfter = s.avgRun * time.Duration(rounds)
		return nil, e
	}
	s.keepLocked(tok, now)

	if u == nil {
		u = &user{key: job.User}
		s.users[job.User] = u
	}
	t := &task{
		job:      job,
		user:     u,
		round:    max(s.round, u.next),
		seq:      s.seq,
		queuedAt: now,
		ahead:    -1,
		start:    make(chan struct{}),
		moved:    make(chan struct{}, 1),
	}
	s.seq++
	u.next = t.round + 1
	u.queued++
	u.tasks = append(u.tasks, t)
	i, _ := slices.BinarySearchFunc(s.queue, t, func(a, b *task) int {
		return cmp.Or(cmp.Compare(a.round, b.round), cmp.Compare(a.seq, b.seq))
	})
	s.queue = slices.Insert(s.queue, i, t)
	s.dispatchLocked()
	return t, nil
}

// userFreeLocked estimates how long until u may submit again: until the
// first of its jobs ends (a running one at its time limit, a queued one
// after the runs ahead of it and its own), and then until a rate token is
// there. It is at least a second.
func (s *Scheduler) userFreeLocked(u *user, now time.Time) time.Duration {
	wait := time.Duration(-1)
	for _, t := range u.tasks {
		var d time.Duration
		if t.started {
			d = t.begin.Add(s.runLimit(t)).Sub(now)
		} else {
			run := s.runLimit(t)
			if s.runsMeasured > 0 {
				run = s.avgRun
			}
			d = time.Duration(t.ahead/s.concurrency+1)*run + s.runLimit(t)
		}
		if wait < 0 || d < wait {
			wait = d
		}
	}
	wait = max(wait, time.Second)
	if lim, ok := s.limiters[u.key]; ok && s.userRate > 0 {
		if tokens := lim.TokensAt(now.Add(wait)); tokens < 1 {
			wait += time.Duration((1 - tokens) / float64(s.userRate) * float64(time.Second))
		}
	}
	return wait
}

// runLimit is the longest t's run should last.
func (s *Scheduler) runLimit(t *task) time.Duration {
	switch {
	case t.job.Request.Timeout > 0:
		return t.job.Request.Timeout
	case s.runTimeout > 0:
		return s.runTimeout
	default:
		return s.avgRun
	}
}

// token is a rate token reserved for a submission.
type token struct {
	key   string
	lim   *rate.Limiter
	res   *rate.Reservation
	fresh bool // lim is new and not kept yet
}

// reserveLocked reserves one of key's rate tokens at now, or says how long
// to wait for one. A refused reservation is cancelled, so it costs nothing.
// The token is nil when rates are unlimited.
func (s *Scheduler) reserveLocked(key string, now time.Time) (*token, error) {
	if s.userRate <= 0 {
		return nil, nil
	}
	lim, ok := s.limiters[key]
	if !ok {
		lim = rate.NewLimiter(s.userRate, s.userBurst)
	}
	r := lim.ReserveN(now, 1)
	if wait := r.DelayFrom(now); wait > 0 {
		r.CancelAt(now)
		e := Errorf(ErrRateLimited, "too many snippets, try again in %s", wait.Round(time.Second))
		e.RetryAfter = wait
		return nil, e
	}
	return &token{key: key, lim: lim, res: r, fresh: !ok}, nil
}

// giveBack returns a token whose submission was refused after all.
func (t *token) giveBack(now time.Time) {
	if t != nil && !t.fresh {
		t.res.CancelAt(now)
	}
}

// keepLocked makes the token count: a new limiter is kept from now on.
func (s *Scheduler) keepLocked(t *token, now time.Time) {
	if t == nil || !t.fresh {
		return
	}
	s.limiters[t.key] = t.lim
	if len(s.limiters) >= s.sweepAt {
		s.sweepLimitersLocked(now)
	}
}

// sweepLimitersLocked drops the limiters whose bucket is full again: they
// behave like fresh ones. Sweeps are spaced so their cost stays amortised
// constant per new user.
func (s *Scheduler) sweepLimitersLocked(now time.Time) {
	for key, lim := range s.limiters {
		if lim.TokensAt(now) >= float64(s.userBurst) {
			delete(s.limiters, key)
		}
	}
	s.sweepAt = max(minLimiterSweep, 2*len(s.limiters))
}

// dispatchLocked starts queued jobs while slots are free, then tells the
// jobs still queued where they now stand.
func (s *Scheduler) dispatchLocked() {
	for s.running < s.concurrency && len(s.queue) > 0 && s.kill.Err() == nil {
		t := s.queue[0]
		s.queue = slices.Delete(s.queue, 0, 1)
		t.started = true
		t.begin = s.now()
		t.user.queued--
		t.user.running++
		s.running++
		if t.round > s.round {
			s.setRoundLocked(t.round)
		}
		close(t.start)
	}
	s.placeLocked()
}

// placeLocked updates the queued jobs' positions, signals those that moved
// and reports the queue depth.
func (s *Scheduler) placeLocked() {
	for i, t := range s.queue {
		if t.ahead != i {
			t.ahead = i
			select {
			case t.moved <- struct{}{}:
			default:
			}
		}
	}
	s.metrics.QueueDepth(len(s.queue))
}

// setRoundLocked moves to round r and forgets idle users: none of them was
// served in r, so a fresh entry orders them the same.
func (s *Scheduler) setRoundLocked(r uint64) {
	s.round = r
	for key, u := range s.users {
		if u.idle() {
			delete(s.users, key)
		}
	}
}

// releaseLocked forgets u once it no longer affects the order. When nothing
// is queued or running, or when too many served users linger, a new round
// begins, which forgets every idle user.
func (s *Scheduler) releaseLocked(u *user) {
	if !u.idle() {
		return
	}
	if u.next <= s.round {
		delete(s.users, u.key)
	}
	if len(s.queue) == 0 && s.running == 0 && len(s.users) > 0 ||
		len(s.users) > 2*(s.queueSize+s.concurrency) {
		s.setRoundLocked(s.round + 1)
	}
}

// await waits for t's slot, reporting t's queue position on the way. It
// returns an error when t left the queue instead.
func (s *Scheduler) await(ctx context.Context, t *task) error {
	reported := -1
	for {
		select {
		case <-t.start:
			return nil
		case <-t.moved:
			s.mu.Lock()
			ahead, started := t.ahead, t.started
			s.mu.Unlock()
			if !started && ahead != reported && t.job.Progress != nil {
				reported = ahead
				t.job.Progress(Progress{State: StateQueued, Ahead: ahead, Wait: s.now().Sub(t.queuedAt)})
			}
		case <-ctx.Done():
			if s.leave(t) {
				return canceled(ctx.Err())
			}
			return nil
		case <-s.kill.Done():
			if s.leave(t) {
				return errShutdown()
			}
			return nil
		}
	}
}

// leave takes t out of the queue, unless it has started.
func (s *Scheduler) leave(t *task) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.started {
		return false
	}
	if i := slices.Index(s.queue, t); i >= 0 {
		s.queue = slices.Delete(s.queue, i, i+1)
	}
	t.user.queued--
	t.user.drop(t)
	s.releaseLocked(t.user)
	s.placeLocked()
	s.checkDrainedLocked()
	return true
}

// run runs a started task and frees its slot.
func (s *Scheduler) run(ctx context.Context, t *task) (res Result, err error) {
	var d time.Duration
	ran := false
	defer func() { s.finish(t, d, ran) }()
	if err := ctx.Err(); err != nil {
		return Result{}, canceled(err)
	}
	if s.kill.Err() != nil {
		return Result{}, errShutdown()
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.kill, cancel)
	defer stop()

	begin := s.now()
	if t.job.Progress != nil {
		t.job.Progress(Progress{State: StateRunning, Wait: begin.Sub(t.queuedAt)})
	}
	ran = true
	res, err = s.runner.Run(runCtx, t.job.Request)
	d = s.now().Sub(begin)
	s.metrics.RunFinished(runOutcome(res, err), d)
	return res, err
}

// finish frees t's slot and hands it on.
func (s *Scheduler) finish(t *task, d time.Duration, ran bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ran {
		s.runsMeasured++
		if s.runsMeasured == 1 {
			s.avgRun = d
		} else {
			s.avgRun += (d - s.avgRun) / 5
		}
	}
	t.user.running--
	t.user.drop(t)
	s.running--
	s.releaseLocked(t.user)
	s.dispatchLocked()
	s.checkDrainedLocked()
}

func (s *Scheduler) checkDrainedLocked() {
	if s.closed && !s.drainedShut && len(s.queue) == 0 && s.running == 0 {
		s.drainedShut = true
		close(s.drained)
	}
}

// rejected logs and counts a refused submission.
func (s *Scheduler) rejected(key string, err error) {
	s.metrics.RunFinished("rejected", 0)
	var e *Error
	if !errors.As(err, &e) {
		s.log.Debug("submission refused", "user", key, "err", err)
		return
	}
	switch e.Code {
	case ErrRateLimited:
		s.metrics.RateLimited()
		s.log.Debug("submission rate limited", "user", key, "retry_after", e.RetryAfter, "reason", e.Message)
	case ErrBusy:
		s.log.Info("submission refused: queue full", "user", key, "retry_after", e.RetryAfter)
	default:
		s.log.Debug("submission refused", "user", key, "err", err)
	}
}

// runOutcome labels a run for metrics: the Result's outcome, "rejected" when
// the Runner refused the request, "error" for any other Runner error.
func runOutcome(res Result, err error) string {
	switch ErrorCode(err) {
	case "":
		return res.Outcome()
	case ErrTooLarge, ErrUnavailable, ErrBusy, ErrRateLimited, ErrShutdown:
		return "rejected"
	default:
		return "error"
	}
}

func canceled(err error) *Error {
	return &Error{Code: ErrCanceled, Message: "the request was cancelled before it ran", Err: err}
}

func errShutdown() *Error {
	return Errorf(ErrShutdown, "the service is shutting down")
}

type nopMetrics struct{}

func (nopMetrics) RunFinished(string, time.Duration) {}
func (nopMetrics) QueueDepth(int)                    {}
func (nopMetrics) RateLimited()                      {}

// SetConcurrency changes how many jobs run at once (n > 0), as when the
// remote executors behind the Runner come and go; queued jobs start at once
// in slots that opened, and running ones past a lowered limit finish.
func (s *Scheduler) SetConcurrency(n int) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.concurrency = n
	s.dispatchLocked()
}
