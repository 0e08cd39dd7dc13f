// Package remote runs snippets on `runblock executor` services over their
// native API (POST /v1/run): it implements executor.Runner for a bot whose
// sandboxes live elsewhere, such as executor pods behind a headless
// Kubernetes Service.
//
// Each configured URL is one executor, or, when its host is a name, one
// executor per address the name resolves to, re-resolved periodically. A
// run goes to the least-loaded healthy executor (its /readyz load and this
// runner's own runs in flight); a full one (429) or a draining one (503) is
// skipped; one that dies mid-run (the connection lost, or an error that is
// not the executor's own answer) costs one retry on another, which is safe
// as a run has no effect outside its sandbox. An executor that answered,
// with a result or with an error of its own, is never retried elsewhere
// and keeps its place. Otherwise the run fails with
// executor.ErrUnavailable: "executor unavailable, try again".
//
// A run whose context carries an output hook (executor.WithOutput, the
// bots' live output) asks the executor to stream its output (Accept:
// application/x-ndjson, see executor/wire) and hands the output so far to
// the hook as it comes; an executor that answers plain JSON serves it
// without. A run whose executor dies mid-run is retried as any run is,
// streamed output or not: the hook then gets the new attempt's output
// from its start, and the result replaces what it showed.
//
// The cells of a session go to one executor, chosen by rendezvous hashing
// of the session's id over the healthy executors, which keeps the
// session's live process; with each cell goes the session's replay list
// (the bot's record of its earlier successful cells), so that when that
// executor is gone the next one chosen rebuilds the state.
package remote

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/wire"
	"github.com/runblock/runblock/internal/httpserver"
)

// Defaults.
const (
	DefaultRefresh        = 5 * time.Second
	DefaultAttemptTimeout = 2 * time.Minute
	// downFor keeps an executor that failed out of the choice until the next
	// refresh finds it ready, or this long.
	downFor = 10 * time.Second
	// maxHolders bounds the sessions whose executor the runner remembers
	// (see moved); past it one is forgotten, whose stale copy, if it ever
	// has one, ends by its executor's idle limit.
	maxHolders = 1 << 14
)

// Config configures the Runner.
type Config struct {
	// URLs are the executors' base URLs (RUNBLOCK_EXECUTOR_URL), such as
	// http://runblock-executor:8080; an http URL whose host is a name
	// stands for every address it resolves to.
	URLs []string
	// Token is sent as the bearer token (RUNBLOCK_API_TOKEN).
	Token string
	// Resolve looks a host name up; nil is net.DefaultResolver.LookupHost.
	Resolve func(ctx context.Context, host string) ([]string, error)
	// Refresh is how often names are re-resolved and /readyz polled.
	Refresh time.Duration
	// AttemptTimeout bounds one attempt on one executor, queueing included,
	// so that an executor cut off without a reset cannot hang a run.
	AttemptTimeout time.Duration
	// Timeout is the timeout of a run or cell that names none: the bot's
	// own (RUNBLOCK_TIMEOUT), sent with every request, so that the reply
	// says the bot's limit, not the executor's default (which caps it).
	// 0: the executor's default.
	Timeout time.Duration
	Client  *http.Client     // nil: a client of the runner's own
	Now     func() time.Time // nil: time.Now
	Logger  *slog.Logger
}

// Runner sends runs to remote executors. It implements executor.Runner.
type Runner struct {
	cfg    Config
	log    *slog.Logger
	client *http.Client
	now    func() time.Time
	bases  []*url.URL

	mu         sync.Mutex
	endpoints  map[string]*endpoint // by base URL
	rotate     int
	holders    map[string]string // session id → the executor that ran its last cell
	capacity   int               // last reported to onCapacity
	onCapacity func(int)         // see OnCapacity

	stop context.CancelFunc
	wg   sync.WaitGroup
}

// endpoint is one executor.
type endpoint struct {
	base      string
	source    string // the configured URL it came from
	ready     bool
	polled    bool
	load      httpserver.Load
	inflight  int
	downUntil time.Time
}

// New resolves the URLs, polls every executor once, checks that those
// that answer take the token, and starts refreshing them in the
// background. It fails when no URL is valid or an executor refuses the
// token (a *TokenError); executors not yet ready are not an error
// (Capacity tells).
func New(ctx context.Context, cfg Config) (*Runner, error) {
	if len(cfg.URLs) == 0 {
		return nil, errors.New("remote: no executor URL")
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = DefaultRefresh
	}
	if cfg.AttemptTimeout <= 0 {
		cfg.AttemptTimeout = DefaultAttemptTimeout
	}
	if cfg.Resolve == nil {
		cfg.Resolve = net.DefaultResolver.LookupHost
	}
	r := &Runner{cfg: cfg, log: cfg.Logger, client: cfg.Client, now: cfg.Now, endpoints: map[string]*endpoint{}, holders: map[string]string{}}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.client == nil {
		r.client = &http.Client{Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     90 * time.Second,
		}}
	}
	for _, s := range cfg.URLs {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("remote: executor URL %q: give http://host:port", s)
		}
		u.Path = ""
		r.bases = append(r.bases, u)
	}
	r.Refresh(ctx)
	if err := r.checkToken(ctx); err != nil {
		r.client.CloseIdleConnections()
		return nil, err
	}
	loop, stop := context.WithCancel(context.Background())
	r.stop = stop
	r.wg.Go(func() { r.refreshLoop(loop) })
	return r, nil
}

// TokenError is an executor refusing the runner's token: every run would
// fail, so New fails rather than let a bot start "ready".
type TokenError struct {
	URL    string // the executor's base URL
	Status int    // its answer: 401 or 403
	Unset  bool   // the runner has no token
}

func (e *TokenError) Error() string {
	if e.Unset {
		return fmt.Sprintf("executor %s wants a token (answered %d) and RUNBLOCK_API_TOKEN is not set: set it to one of the executors' tokens", e.URL, e.Status)
	}
	return fmt.Sprintf("executor %s refuses RUNBLOCK_API_TOKEN (answered %d): set it to one of the executors' tokens", e.URL, e.Status)
}

// checkToken asks every executor known for its runtimes (GET
// /api/v2/runtimes, which takes the token like a run and runs nothing)
// and returns a *TokenError for the first that refuses the token. An
// executor that does not answer is not yet up: that is not an error.
func (r *Runner) checkToken(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	r.mu.Lock()
	bases := slices.Sorted(maps.Keys(r.endpoints))
	r.mu.Unlock()
	errs := make([]error, len(bases))
	var wg sync.WaitGroup
	for i, base := range bases {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v2/runtimes", nil)
			if err != nil {
				return
			}
			if r.cfg.Token != "" {
				req.Header.Set("Authorization", "Bearer "+r.cfg.Token)
			}
			resp, err := r.client.Do(req)
			if err != nil {
				r.log.Debug("token not checked: executor not answering", "url", base, "err", err)
				return
			}
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
				errs[i] = &TokenError{URL: base, Status: resp.StatusCode, Unset: r.cfg.Token == ""}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Close stops the background refresh. Runs in flight go on until their
// contexts end.
func (r *Runner) Close() {
	r.stop()
	r.wg.Wait()
	r.client.CloseIdleConnections()
}

func (r *Runner) refreshLoop(ctx context.Context) {
	t := time.NewTicker(r.cfg.Refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.Refresh(ctx)
		}
	}
}

// Refresh re-resolves the URLs and polls every executor's /readyz now.
func (r *Runner) Refresh(ctx context.Context) {
	seen := map[string]string{}
	for _, u := range r.bases {
		for _, b := range r.expand(ctx, u) {
			seen[b] = u.String()
		}
	}
	r.mu.Lock()
	for b, src := range seen {
		if r.endpoints[b] == nil {
			r.endpoints[b] = &endpoint{base: b, source: src}
			r.log.Info("executor found", "url", b)
		}
	}
	for b, e := range r.endpoints {
		if _, ok := seen[b]; !ok && e.inflight == 0 {
			delete(r.endpoints, b)
			r.log.Info("executor gone", "url", b)
		}
	}
	bases := make([]string, 0, len(r.endpoints))
	for b := range r.endpoints {
		bases = append(bases, b)
	}
	r.mu.Unlock()

	var wg sync.WaitGroup
	for _, b := range bases {
		wg.Go(func() { r.poll(ctx, b) })
	}
	wg.Wait()
	r.reportCapacity()
}

// OnCapacity makes the runner call f with the ready executors' total
// capacity whenever a refresh finds it changed (and not zero): the bot's
// scheduler runs as many jobs at once as the executors take.
func (r *Runner) OnCapacity(f func(n int)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.onCapacity = f
}

func (r *Runner) reportCapacity() {
	n := r.Capacity()
	r.mu.Lock()
	f, changed := r.onCapacity, n != r.capacity && n > 0
	if changed {
		r.capacity = n
	}
	r.mu.Unlock()
	if f != nil && changed {
		r.log.Info("executors' capacity changed", "capacity", n)
		f(n)
	}
}

// expand returns the executor base URLs u stands for. A name that does not
// resolve keeps the executors it had.
func (r *Runner) expand(ctx context.Context, u *url.URL) []string {
	host, port := u.Hostname(), u.Port()
	if u.Scheme != "http" || net.ParseIP(host) != nil {
		return []string{u.String()}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := r.cfg.Resolve(ctx, host)
	if err != nil || len(addrs) == 0 {
		r.log.Warn("resolving executors failed; keeping the ones known", "host", host, "err", err)
		r.mu.Lock()
		defer r.mu.Unlock()
		var kept []string
		for b, e := range r.endpoints {
			if e.source == u.String() {
				kept = append(kept, b)
			}
		}
		return kept
	}
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		v := *u
		v.Host = a
		if port != "" {
			v.Host = net.JoinHostPort(a, port)
		}
		out = append(out, v.String())
	}
	return out
}

// poll reads one executor's /readyz.
func (r *Runner) poll(ctx context.Context, base string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var rd httpserver.Readiness
	err := func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
		if err != nil {
			return err
		}
		resp, err := r.client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&rd); err != nil {
			return fmt.Errorf("/readyz: %w", err)
		}
		if rd.Load == nil || rd.Load.Capacity <= 0 {
			return fmt.Errorf("/readyz reports no capacity: not a runblock executor?")
		}
		return nil
	}()
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.endpoints[base]
	if e == nil {
		return
	}
	was := e.ready && e.polled
	e.polled = true
	e.ready = err == nil && rd.Ready
	if err == nil {
		e.load = *rd.Load
	}
	if e.ready {
		e.downUntil = time.Time{}
	}
	switch {
	case e.ready && !was:
		r.log.Info("executor ready", "url", base, "capacity", e.load.Capacity)
	case !e.ready && was:
		r.log.Warn("executor not ready", "url", base, "err", err, "draining", rd.Draining)
	}
}

// Capacity is the runs the ready executors take at once.
func (r *Runner) Capacity() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.endpoints {
		if e.ready {
			n += e.load.Capacity
		}
	}
	return n
}

// pick returns the executor for a run, counting the run in its load; nil
// when none is left. A cell of a session (key set) goes to the session's
// executor (pickSession); any other run to the least-loaded executor not
// in tried. Ready executors come first; the others (not polled ready, not
// marked down) are tried after them.
func (r *Runner) pick(tried map[string]bool, key string) *endpoint {
	if key != "" {
		r.mu.Lock()
		defer r.mu.Unlock()
		e := r.pickSessionLocked(tried, key)
		if e != nil {
			e.inflight++
		}
		return e
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	var best *endpoint
	var bestLoad float64
	bestReady := false
	cands := make([]*endpoint, 0, len(r.endpoints))
	for _, e := range r.endpoints {
		cands = append(cands, e)
	}
	slices.SortFunc(cands, func(a, b *endpoint) int { return strings.Compare(a.base, b.base) })
	r.rotate++
	for i := range cands {
		e := cands[(i+r.rotate)%len(cands)]
		if tried[e.base] || now.Before(e.downUntil) {
			continue
		}
		load := float64(e.inflight+e.load.Queued) / float64(max(e.load.Capacity, 1))
		if best == nil || (e.ready && !bestReady) || (e.ready == bestReady && load < bestLoad) {
			best, bestLoad, bestReady = e, load, e.ready
		}
	}
	if best != nil {
		best.inflight++
	}
	return best
}

// pickSessionLocked returns the executor that holds the session key: by
// rendezvous hashing, the ready executor not in tried (nor marked down)
// that scores highest for key, so that a session's cells go to one
// executor while it is there and, when it is gone, to the same other one.
// Executors not polled ready come after the ready ones.
func (r *Runner) pickSessionLocked(tried map[string]bool, key string) *endpoint {
	now := r.now()
	var best *endpoint
	var bestScore uint64
	for _, e := range r.endpoints {
		if tried[e.base] || now.Before(e.downUntil) {
			continue
		}
		score := rendezvous(key, e.base)
		if best == nil || (e.ready && !best.ready) || (e.ready == best.ready && score > bestScore) {
			best, bestScore = e, score
		}
	}
	return best
}

// rendezvous is the score of executor base for session key.
func rendezvous(key, base string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write([]byte(base))
	return h.Sum64()
}

// End ends session id on the executor that holds it (DELETE
// /v1/sessions/{id}): a bot's reset. A session the executor does not know
// is no error.
func (r *Runner) End(ctx context.Context, id string) error {
	r.mu.Lock()
	e := r.pickSessionLocked(nil, id)
	base := ""
	if e != nil {
		base = e.base
	}
	delete(r.holders, id)
	r.mu.Unlock()
	if base == "" {
		return r.unavailable(nil)
	}
	return r.endOn(ctx, base, id)
}

// moved records that base ran the last cell of session id, and returns
// the executor that ran the one before it when that was another: after a
// failover, or a move back to a restarted executor, that one holds a
// stale copy of the session.
func (r *Runner) moved(id, base string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	prev := r.holders[id]
	if prev == "" && len(r.holders) >= maxHolders {
		for k := range r.holders {
			delete(r.holders, k)
			break
		}
	}
	r.holders[id] = base
	if prev == base {
		return ""
	}
	return prev
}

// endOn ends session id on the executor at base (DELETE
// /v1/sessions/{id}); a session it does not know is no error.
func (r *Runner) endOn(ctx context.Context, base, id string) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.AttemptTimeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodDelete, base+"/v1/sessions/"+url.PathEscape(id), nil)
	if err != nil {
		return &executor.Error{Code: executor.ErrInternal, Message: "building the request", Err: err}
	}
	if r.cfg.Token != "" {
		hreq.Header.Set("Authorization", "Bearer "+r.cfg.Token)
	}
	resp, err := r.client.Do(hreq)
	if err != nil {
		return r.unavailable(fmt.Errorf("%s: %w", base, err))
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	switch resp.StatusCode {
	case http.StatusOK, http.StatusNotFound:
		return nil
	}
	var er wire.ErrorResponse
	_ = json.Unmarshal(b, &er)
	return &executor.Error{Code: executor.ErrInternal, Message: fmt.Sprintf("ending session on %s: answered %d: %s", base, resp.StatusCode, cmp.Or(er.Error, http.StatusText(resp.StatusCode)))}
}

// done ends a run's count on e; down takes e out of the choice until a
// poll finds it ready again.
func (r *Runner) done(e *endpoint, down bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e.inflight--
	if down {
		e.ready = false
		e.downUntil = r.now().Add(downFor)
	}
}

// outcome classifies an attempt.
type outcome int

const (
	ran     outcome = iota // the executor answered the run
	skipped                // full, draining or unreachable: nothing ran
	died                   // the executor went away mid-run
	refused                // the executor refused the request itself
)

// Run runs req on an executor, as described in the package comment.
func (r *Runner) Run(ctx context.Context, req executor.Request) (executor.Result, error) {
	if req.Launch != "" {
		// /v1/run takes snippets: a launched program is an execute API
		// front's own, which runs it on the sandbox behind it.
		return executor.Result{}, executor.Errorf(executor.ErrInvalid, "a launched program (%s) cannot go to a remote executor: /v1/run takes snippets", req.Launch)
	}
	rr := r.runRequest(req)
	key := ""
	if req.Session != nil {
		// The executor that holds the session gets its cells; the replay
		// lets another rebuild it when that one is gone.
		key = req.Session.ID
		rr.Session = key
		if req.Session.Replay != nil {
			rr.Replay = make([]wire.RunRequest, 0, len(req.Session.Replay))
		}
		for _, c := range req.Session.Replay {
			rr.Replay = append(rr.Replay, r.runRequest(c))
		}
	}
	body, err := json.Marshal(rr)
	if err != nil {
		return executor.Result{}, &executor.Error{Code: executor.ErrInternal, Message: "encoding the run", Err: err}
	}
	live := executor.OutputOf(ctx)
	tried := map[string]bool{}
	deaths := 0
	var full *executor.Error
	var last error
	for {
		e := r.pick(tried, key)
		if e == nil {
			if full != nil {
				return executor.Result{}, full
			}
			return executor.Result{}, r.unavailable(last)
		}
		tried[e.base] = true
		res, out, err := r.attempt(ctx, e.base, body, live)
		if ctx.Err() != nil {
			// The caller gave up: no word on the executor.
			r.done(e, false)
			return executor.Result{}, &executor.Error{Code: executor.ErrCanceled, Message: "run canceled", Err: ctx.Err()}
		}
		r.done(e, out == skipped && !isBusy(err) || out == died)
		switch out {
		case ran:
			if key == "" {
				return res, nil
			}
			if stale := r.moved(key, e.base); stale != "" {
				// Its copy would live on until its idle end, holding a
				// live process and, on a move back, a state the bot has
				// moved past.
				end, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				err := r.endOn(end, stale, key)
				cancel()
				if err != nil {
					r.log.Warn("ending a stale copy of a session", "url", stale, "err", err)
				}
			}
			return res, nil
		case refused:
			return executor.Result{}, err
		case skipped:
			if isBusy(err) {
				errors.As(err, &full)
			}
			last = err
			r.log.Debug("executor skipped", "url", e.base, "err", err)
		case died:
			last = err
			deaths++
			r.log.Warn("executor failed mid-run", "url", e.base, "err", err, "retrying", deaths == 1)
			if deaths > 1 {
				return executor.Result{}, r.unavailable(err)
			}
		}
	}
}

// runRequest is req in the body of /v1/run, without its session; its
// timeout the runner's where it names none.
func (r *Runner) runRequest(req executor.Request) wire.RunRequest {
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = r.cfg.Timeout
	}
	rr := wire.RunRequest{Code: req.Code, Stdin: req.Stdin, Args: req.Args, Timeout: wire.Duration(timeout), Memory: req.MemoryBytes, Colour: req.Colour, Script: req.Script}
	for _, f := range req.Files {
		rr.Files = append(rr.Files, wire.File{Path: f.Path, Content: base64.StdEncoding.EncodeToString(f.Content), Encoding: "base64"})
	}
	return rr
}

// unavailable is the error of a run no executor could take: worth trying
// again once the next refresh has looked for executors.
func (r *Runner) unavailable(err error) *executor.Error {
	return &executor.Error{Code: executor.ErrUnavailable, Message: "executor unavailable, try again", RetryAfter: r.cfg.Refresh, Err: err}
}

func isBusy(err error) bool { return executor.ErrorCode(err) == executor.ErrBusy }

// attempt posts one run to one executor. With live set it asks for the
// run's output as it comes (an older executor answers without) and hands
// it to live, the output so far of this attempt: a run retried on another
// executor after a death mid-run shows that one's from its start, and its
// result replaces it as any run's does.
func (r *Runner) attempt(ctx context.Context, base string, body []byte, live executor.OutputFunc) (executor.Result, outcome, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.AttemptTimeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/run", bytes.NewReader(body))
	if err != nil {
		return executor.Result{}, refused, &executor.Error{Code: executor.ErrInternal, Message: "building the request", Err: err}
	}
	hreq.Header.Set("Content-Type", "application/json")
	if live != nil {
		hreq.Header.Set("Accept", wire.NDJSON+", application/json;q=0.5")
	}
	if r.cfg.Token != "" {
		hreq.Header.Set("Authorization", "Bearer "+r.cfg.Token)
	}
	resp, err := r.client.Do(hreq)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return executor.Result{}, skipped, fmt.Errorf("%s: %w", base, err)
		}
		return executor.Result{}, died, fmt.Errorf("%s: %w", base, err)
	}
	defer resp.Body.Close()
	status, b := resp.StatusCode, []byte(nil)
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); status == http.StatusOK && mt == wire.NDJSON {
		status, b, err = readStream(resp.Body, live)
	} else {
		b, err = io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	}
	if err != nil {
		return executor.Result{}, died, fmt.Errorf("%s: reading the answer: %w", base, err)
	}
	return r.answer(base, status, resp.Header, b)
}

// maxAnswer caps what an executor's answer, or a stream's output and its
// last line, may hold.
const maxAnswer = 64 << 20

// errStreamCut is a stream that ended before its last line.
var errStreamCut = errors.New("the stream ended before the result")

// readStream reads a streamed answer (see wire.OutputEvent), handing the
// output so far to live at each event, and returns its last line and the
// status it stands for.
func readStream(body io.Reader, live executor.OutputFunc) (status int, last []byte, err error) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), maxAnswer)
	var stdout, stderr strings.Builder
	for sc.Scan() {
		var kind struct {
			Event string `json:"event"`
			Code  string `json:"code"`
		}
		if err := json.Unmarshal(sc.Bytes(), &kind); err != nil {
			return 0, nil, fmt.Errorf("a line of the stream is not JSON: %w", err)
		}
		switch kind.Event {
		case "":
			if kind.Code != "" {
				return wire.ErrorStatus(kind.Code), sc.Bytes(), nil
			}
			return http.StatusOK, sc.Bytes(), nil
		case wire.OutputEventName:
			var ev wire.OutputEvent
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				return 0, nil, fmt.Errorf("an output event is not valid: %w", err)
			}
			if stdout.Len()+stderr.Len()+len(ev.Stdout)+len(ev.Stderr) > maxAnswer {
				return 0, nil, fmt.Errorf("the stream's output is over %d bytes", maxAnswer)
			}
			if ev.Stdout == "" && ev.Stderr == "" {
				continue
			}
			stdout.WriteString(ev.Stdout)
			stderr.WriteString(ev.Stderr)
			if live != nil {
				live(stdout.String(), stderr.String())
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, nil, err
	}
	return 0, nil, errStreamCut
}

// answer reads an executor's answer: its status, headers and body.
func (r *Runner) answer(base string, status int, header http.Header, b []byte) (executor.Result, outcome, error) {
	if status == http.StatusOK {
		var rr wire.RunResponse
		if err := json.Unmarshal(b, &rr); err != nil {
			return executor.Result{}, died, fmt.Errorf("%s: the answer is not a result: %w", base, err)
		}
		res := rr.Result
		res.Duration = time.Duration(res.DurationMS) * time.Millisecond
		res.TimeoutLimit = time.Duration(rr.TimeoutLimitMS) * time.Millisecond
		return res, ran, nil
	}
	var er wire.ErrorResponse
	_ = json.Unmarshal(b, &er)
	msg := er.Error
	if msg == "" {
		msg = http.StatusText(status)
	}
	switch status {
	case http.StatusTooManyRequests:
		e := executor.Errorf(executor.ErrBusy, "every executor is busy")
		if s, err := time.ParseDuration(header.Get("Retry-After") + "s"); err == nil {
			e.RetryAfter = s
		}
		return executor.Result{}, skipped, e
	case http.StatusServiceUnavailable:
		return executor.Result{}, skipped, fmt.Errorf("%s: %s", base, msg)
	case http.StatusRequestEntityTooLarge:
		return executor.Result{}, refused, executor.Errorf(executor.ErrTooLarge, "%s", msg)
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusGatewayTimeout:
		if er.Code != "" {
			// The executor itself answered: it is alive and this run
			// failed there. Another executor would only fail it again
			// (the same snippet), so no retry, and no word on the
			// executor's health.
			r.log.Warn("executor failed the run", "url", base, "status", status, "err", msg)
			return executor.Result{}, refused, &executor.Error{Code: executor.ErrInternal, Message: fmt.Sprintf("executor answered %d: %s", status, msg)}
		}
		// No answer of the executor's own (a proxy's, or one cut short):
		// the executor went away, worth the one retry.
		return executor.Result{}, died, fmt.Errorf("%s: %d %s", base, status, msg)
	}
	r.log.Error("executor refused the run", "url", base, "status", status, "err", msg)
	return executor.Result{}, refused, &executor.Error{Code: executor.ErrInternal, Message: fmt.Sprintf("executor answered %d: %s", status, msg)}
}
