package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/runblock/runblock/internal/syncbuf"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/remote"
	"github.com/runblock/runblock/internal/config"
	"github.com/runblock/runblock/internal/eventually"
	"github.com/runblock/runblock/internal/fakeslack"
	"github.com/runblock/runblock/internal/httpserver"
)

// runblockBinary builds runblock (main and its signal handling, which
// this package's test binary lacks) without -race, so that the executors'
// sandboxes start as fast as in production.
func runblockBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "runblock")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/runblock/runblock").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// executorProcess is a `runblock executor` process.
type executorProcess struct {
	cmd  *exec.Cmd
	url  string
	logs *syncbuf.Buffer
}

// startExecutor starts `runblock executor` from bin on a free port of
// 127.0.0.1 and returns once it serves; it is killed at cleanup.
func startExecutor(t *testing.T, ctx context.Context, bin string, env ...string) *executorProcess {
	t.Helper()
	cmd := exec.Command(bin, "executor")
	cmd.Dir = t.TempDir() // no .env
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "RUNBLOCK_") && !strings.HasPrefix(k, "SLACK_") && !strings.HasPrefix(k, "DISCORD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "RUNBLOCK_HTTP_ADDR=127.0.0.1:0", "RUNBLOCK_ALLOW_UNISOLATED=1", "LOG_FORMAT=json")
	cmd.Env = append(cmd.Env, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &executorProcess{cmd: cmd, logs: &syncbuf.Buffer{}}
	exited := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	addr := make(chan string, 1)
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			_, _ = p.logs.Write(append(sc.Bytes(), '\n'))
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "executor service ready" {
				addr <- line.Addr
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = cmd.Wait()
	}()
	select {
	case a := <-addr:
		p.url = "http://" + a
	case <-exited:
		t.Fatalf("executor exited before serving:\n%s", p.logs.String())
	case <-ctx.Done():
		t.Fatalf("executor not serving in time:\n%s", p.logs.String())
	}
	return p
}

// recorder notes the order in which the scheduler dispatches runs, and
// holds them until hold is closed.
type recorder struct {
	executor.Runner
	hold chan struct{}
	mu   sync.Mutex
	runs []string // the runs' code
}

func (r *recorder) Run(ctx context.Context, req executor.Request) (executor.Result, error) {
	r.mu.Lock()
	r.runs = append(r.runs, req.Code)
	r.mu.Unlock()
	select {
	case <-r.hold:
	case <-ctx.Done():
		return executor.Result{}, ctx.Err()
	}
	return r.Runner.Run(ctx, req)
}

// TestFailoverAcrossExecutors is the proof on one machine: three `runblock
// executor` processes on 127.0.0.1 and a bot against them through the fake
// Slack. 300 messages from 30 users, each user's ten sent in a burst, all
// get exactly one reply with their output although one executor is killed
// mid-flood, and the bot's scheduler hands the runs out in fair rounds.
func TestFailoverAcrossExecutors(t *testing.T) {
	requirePython(t)
	if testing.Short() {
		t.Skip("starts three executor processes and runs 300 snippets")
	}
	const users, perUser = 30, 10
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	const token = "0123456789abcdef-test-token"
	bin := runblockBinary(t)
	var urls []string
	var executors []*executorProcess
	for range 3 {
		p := startExecutor(t, ctx, bin, "RUNBLOCK_CONCURRENCY=2", "RUNBLOCK_POOL=2", "RUNBLOCK_API_TOKEN="+token)
		executors = append(executors, p)
		urls = append(urls, p.url)
	}
	env := config.Env{
		"RUNBLOCK_EXECUTOR_URL":  strings.Join(urls, ","),
		"RUNBLOCK_API_TOKEN":     token,
		"RUNBLOCK_USER_RATE":     "off",
		"RUNBLOCK_USER_MAX_JOBS": strconv.Itoa(perUser),
		"RUNBLOCK_QUEUE":         strconv.Itoa(users * perUser),
	}

	// Main wires RUNBLOCK_EXECUTOR_URL: runs go to the executors, and as
	// many at once as they take together.
	console := &Main{Config: defaultConfig(t, env), Logger: testLogger(t), Stdin: strings.NewReader("```python\nprint(6*7)\n```\n"), Stdout: &syncbuf.Buffer{}}
	if err := console.Run(ctx); err != nil {
		t.Fatal(err)
	}
	<-console.Done()
	if rd := console.readiness(); rd.Load == nil || rd.Load.Capacity != 6 || rd.Isolation != "remote" {
		t.Errorf("the bot's readiness %+v does not report the executors' capacity", rd)
	}
	if err := console.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if out := console.Stdout.(*syncbuf.Buffer).String(); !strings.Contains(out, "42") || console.isolation != "remote" || console.remote.Capacity() != 6 {
		t.Fatalf("console through the executors: output %q, isolation %q, capacity %d", out, console.isolation, console.remote.Capacity())
	}

	fake := fakeslack.New(fakeslack.Options{PingInterval: time.Second})
	t.Cleanup(fake.Close)
	env["SLACK_BOT_TOKEN"], env["SLACK_APP_TOKEN"] = fakeslack.BotToken, fakeslack.AppToken
	cfg := defaultConfig(t, env)
	cfg.Slack.APIURL = fake.APIURL()
	cfg.Scheduler.Concurrency = 6
	logs := &syncbuf.Buffer{}
	rr, err := remote.New(ctx, remote.Config{URLs: urls, Token: token, Refresh: 500 * time.Millisecond, Logger: config.NewLogger(logs, cfg)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rr.Close)
	rec := &recorder{Runner: rr, hold: make(chan struct{})}
	m := &Main{Config: cfg, Logger: config.NewLogger(logs, cfg), Runner: rec}
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(context.Background()); err != nil {
			t.Error(err)
		}
		if strings.Contains(logs.String(), token) {
			t.Error("the bot's log shows the API token")
		}
		if t.Failed() {
			t.Logf("bot log:\n%s", logs.String())
		}
	})
	if err := fake.WaitConnections(ctx, 1); err != nil {
		t.Fatal(err)
	}

	channel := fake.NewID("C")
	type sent struct {
		ts, user, code string
		k              int
	}
	var msgs []sent
	for range users {
		user := fake.NewID("U")
		for k := range perUser {
			code := fmt.Sprintf("print('run %s-%d')", user, k)
			msg := fake.PutMessage(fakeslack.Message{Channel: channel, User: user,
				Text: "<@" + fakeslack.BotUserID + "> ```python\n" + code + "\n```"})
			fake.SendEvent(map[string]any{"type": "app_mention", "channel": channel, "user": user, "text": msg.Text, "ts": msg.TS, "event_ts": msg.TS})
			msgs = append(msgs, sent{msg.TS, user, code, k})
		}
	}
	// The first runs wait until every message is in: from then on the
	// order is the scheduler's alone, whatever the pace of the events.
	var st executor.Stats
	if !eventually.Poll(ctx, func() bool { st = m.scheduler.Stats(); return st.Queued+st.Running >= len(msgs) }) {
		t.Fatalf("only %d of %d messages reached the scheduler", st.Queued+st.Running, len(msgs))
	}
	close(rec.hold)

	for i, s := range msgs {
		if i == len(msgs)/3 {
			// Mid-flood: one executor dies with runs in flight and queued.
			if err := executors[1].cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
		}
		want := fmt.Sprintf("run %s-%d\n", s.user, s.k)
		r, err := fake.WaitMessage(ctx, channel, func(x fakeslack.Message) bool {
			return x.ThreadTS == s.ts && (strings.Contains(x.Text, want) || strings.Contains(x.Text, "unavailable"))
		})
		if err != nil {
			t.Fatalf("message %d (%s-%d) got no reply: %v; replies: %+v", i, s.user, s.k, err, fake.BotReplies(channel, s.ts))
		}
		if !strings.Contains(r.Text, want) {
			t.Errorf("message %d (%s-%d) got %q", i, s.user, s.k, r.Text)
		}
	}
	t.Logf("%d runs retried on another executor after the kill", strings.Count(logs.String(), "executor failed mid-run"))
	for _, s := range msgs {
		if n := len(fake.BotReplies(channel, s.ts)); n != 1 {
			t.Errorf("message %s-%d has %d replies, want exactly 1", s.user, s.k, n)
		}
	}

	// Fairness: the runs that took the free slots at once aside, each user
	// gets one run per round: a user's j-th run (in dispatch order; the
	// adapter handles a burst's messages concurrently) is dispatched among
	// the first j+1 rounds. In arrival order the last user's first run would
	// come after every run of the users before it. The recorder sees the
	// runs as their goroutines, woken by the dispatch, reach it, not in
	// the dispatch's order: at most slots runs hold a slot, so a run is
	// recorded at most slots-1 places late, unless its goroutine waits
	// for the CPU through a whole later run (a loaded machine saw 2).
	rec.mu.Lock()
	runs := rec.runs
	rec.mu.Unlock()
	if len(runs) != users*perUser {
		t.Fatalf("%d runs dispatched, want %d", len(runs), users*perUser)
	}
	userOf := map[string]string{}
	for _, s := range msgs {
		userOf[s.code] = s.user
	}
	const slots = 6
	dispatched := map[string]int{}
	for i, code := range runs {
		u := userOf[code]
		if limit := (dispatched[u]+1)*users + slots + slots - 1; i >= limit {
			t.Errorf("%s's run %d was dispatched %dth, past %d: not fair rounds", u, dispatched[u], i+1, limit)
		}
		dispatched[u]++
	}
}

func TestExecutorRefusesAPublicAddressWithoutToken(t *testing.T) {
	var stdout, stderr syncbuf.Buffer
	code := run(context.Background(), []string{"executor"}, config.Env{"RUNBLOCK_HTTP_ADDR": ":0"}, strings.NewReader(""), &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "RUNBLOCK_API_TOKEN") {
		t.Fatalf("exit %d, stderr %q: want 2 and a word on RUNBLOCK_API_TOKEN", code, stderr.String())
	}
}

// TestExecutorDrainsOnSIGTERM: a stopping executor finishes the run it
// accepted, while /readyz and new runs answer 503 so that bots go
// elsewhere.
func TestExecutorDrainsOnSIGTERM(t *testing.T) {
	requirePython(t)
	bin := runblockBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := startExecutor(t, ctx, bin, "RUNBLOCK_CONCURRENCY=1", "RUNBLOCK_POOL=0", "RUNBLOCK_DRAIN_TIMEOUT=30s")
	type answer struct {
		status int
		body   string
		err    error
	}
	post := func(code string) answer {
		resp, err := http.Post(p.url+"/v1/run", "application/json", strings.NewReader(`{"code":`+strconv.Quote(code)+`}`))
		if err != nil {
			return answer{err: err}
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return answer{resp.StatusCode, string(b), err}
	}
	first := make(chan answer, 1)
	go func() {
		first <- post("import sys, time\nprint('started', flush=True)\nsys.stdin.read()\ntime.sleep(1)\nprint('finished')")
	}()
	// Wait until the run holds the only slot.
	readyz := func() (int, int) {
		resp, err := http.Get(p.url + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var rd struct{ Load struct{ Running int } }
		_ = json.NewDecoder(resp.Body).Decode(&rd)
		return resp.StatusCode, rd.Load.Running
	}
	if !eventually.Poll(ctx, func() bool { _, running := readyz(); return running == 1 }) {
		t.Fatal("the run never started")
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if !eventually.Poll(ctx, func() bool { code, _ := readyz(); return code == http.StatusServiceUnavailable }) {
		t.Fatal("/readyz stayed ready after SIGTERM")
	}
	if a := post("print(1)"); a.err != nil || a.status != http.StatusServiceUnavailable {
		t.Errorf("a run while draining: %d %q %v, want 503", a.status, a.body, a.err)
	}
	a := <-first
	if a.err != nil || a.status != http.StatusOK || !strings.Contains(a.body, `finished`) {
		t.Fatalf("the accepted run: %d %q %v; logs:\n%s", a.status, a.body, a.err, p.logs.String())
	}
}

// TestExecutorMainDrains runs `runblock executor`'s parts in this process:
// Close drains (/readyz and new runs answer 503) and lets the run it
// accepted finish and be answered before it returns.
func TestExecutorMainDrains(t *testing.T) {
	requirePython(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := &ExecutorMain{
		Config: defaultConfig(t, config.Env{"RUNBLOCK_HTTP_ADDR": "127.0.0.1:0", "RUNBLOCK_CONCURRENCY": "1", "RUNBLOCK_POOL": "0"}),
		Logger: testLogger(t),
	}
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	base := "http://" + m.Addr()
	type answer struct {
		status int
		body   string
		err    error
	}
	post := func(code string) answer {
		resp, err := http.Post(base+"/v1/run", "application/json", strings.NewReader(`{"code":`+strconv.Quote(code)+`}`))
		if err != nil {
			return answer{err: err}
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return answer{resp.StatusCode, string(b), err}
	}
	readyz := func() (int, httpserver.Readiness) {
		t.Helper()
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var rd httpserver.Readiness
		if err := json.NewDecoder(resp.Body).Decode(&rd); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, rd
	}
	if code, rd := readyz(); code != http.StatusOK || !rd.Ready || rd.Load == nil || rd.Load.Capacity != 1 {
		t.Fatalf("/readyz = %d %+v, want ready with capacity 1", code, rd)
	}
	// The run outlasts the start of the drain (checked below): a sandbox
	// has no channel to the test to wait on.
	first := make(chan answer, 1)
	go func() {
		first <- post("import time\ntime.sleep(2)\nprint('finished')")
	}()
	if !eventually.Poll(ctx, func() bool { _, rd := readyz(); return rd.Load.Running > 0 }) {
		t.Fatal("the run never started")
	}
	closed := make(chan error, 1)
	go func() { closed <- m.Close(ctx) }()
	var rd httpserver.Readiness
	if !eventually.Poll(ctx, func() bool {
		var code int
		code, rd = readyz()
		return code == http.StatusServiceUnavailable
	}) {
		t.Fatal("/readyz stayed ready while closing")
	}
	if !rd.Draining || rd.Load.Running != 1 {
		t.Fatalf("/readyz while closing: %+v, want draining with the run in flight", rd)
	}
	if a := post("print(1)"); a.err != nil || a.status != http.StatusServiceUnavailable {
		t.Errorf("a run while draining: %d %q %v, want 503", a.status, a.body, a.err)
	}
	if a := <-first; a.err != nil || a.status != http.StatusOK || !strings.Contains(a.body, "finished") {
		t.Errorf("the accepted run: %d %q %v", a.status, a.body, a.err)
	}
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
}

// TestServeRefusesATokenTheExecutorsRefuse: a bot whose RUNBLOCK_API_TOKEN
// its executor refuses does not start "ready" and answer every message
// with an internal error; it exits 1 with one line naming the setting.
func TestServeRefusesATokenTheExecutorsRefuse(t *testing.T) {
	requirePython(t)
	const right, wrong = "right-token-0123456789", "wrong-token-0123456789"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ex := &ExecutorMain{
		Config: defaultConfig(t, config.Env{"RUNBLOCK_HTTP_ADDR": "127.0.0.1:0", "RUNBLOCK_API_TOKEN": right, "RUNBLOCK_POOL": "0"}),
		Logger: testLogger(t),
	}
	if err := ex.Run(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ex.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	for _, token := range []string{wrong, right} {
		var stdout, stderr bytes.Buffer
		env := config.Env{"RUNBLOCK_EXECUTOR_URL": "http://" + ex.Addr(), "RUNBLOCK_API_TOKEN": token}
		code := run(ctx, nil, env, strings.NewReader(pipedExample), &stdout, &stderr)
		out := stdout.String() + stderr.String()
		if strings.Contains(out, wrong) || strings.Contains(out, right) {
			t.Errorf("the output shows a token:\n%s", out)
		}
		if token == right {
			if code != 0 || !strings.Contains(stdout.String(), "\n2\n") {
				t.Errorf("with the right token: exit %d, stdout %q, stderr %q; want 0 and the reply", code, stdout.String(), stderr.String())
			}
			continue
		}
		// The log's start-up lines, then the one error line.
		lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
		last := lines[len(lines)-1]
		if code != 1 || !strings.Contains(last, "level=ERROR") || !strings.Contains(last, "refuses RUNBLOCK_API_TOKEN") || strings.Count(stderr.String(), "RUNBLOCK_API_TOKEN") != 1 {
			t.Errorf("with a refused token: exit %d, stderr %q; want 1 and one error line naming RUNBLOCK_API_TOKEN", code, stderr.String())
		}
		if stdout.Len() != 0 {
			t.Errorf("with a refused token: stdout %q, want nothing", stdout.String())
		}
	}
}

// TestExecutorBusyPort: an executor whose port is taken fails to start
// with an error naming RUNBLOCK_HTTP_ADDR, and closes the sandbox it
// started.
func TestExecutorBusyPort(t *testing.T) {
	requirePython(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	m := &ExecutorMain{
		Config: defaultConfig(t, config.Env{"RUNBLOCK_HTTP_ADDR": ln.Addr().String(), "RUNBLOCK_POOL": "0"}),
		Logger: testLogger(t),
	}
	err = m.Run(context.Background())
	if err == nil {
		_ = m.Close(context.Background())
		t.Fatal("Run on a busy port succeeded")
	}
	if !strings.Contains(err.Error(), "RUNBLOCK_HTTP_ADDR="+ln.Addr().String()) || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("Run = %v, want a listen error naming RUNBLOCK_HTTP_ADDR and the address", err)
	}
}
