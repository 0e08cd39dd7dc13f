package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/runblock/runblock/executor/wire"
)

// The start section: how soon `runblock executor` serves after its start,
// the time a scale-up waits for a new executor. The running binary is
// started as `runblock executor` on a free loopback port, with the
// default settings but the bench's python, StartRuns times one after
// another; each start is timed from the process's start to /readyz
// answering 200 and to the answer of its first run (print('hello')
// through the native API, sent as soon as it is ready), then stopped with
// SIGTERM and waited for before the next.

// StartStats are the start section's figures.
type StartStats struct {
	Runs int `json:"runs"`
	OK   int `json:"ok"`
	// Ready is to /readyz's first 200, FirstRun to the first run's
	// answer, both from the process's start; of the starts that worked.
	ReadyP50MS    float64 `json:"ready_p50_ms"`
	ReadyMaxMS    float64 `json:"ready_max_ms"`
	FirstRunP50MS float64 `json:"first_run_p50_ms"`
	FirstRunMaxMS float64 `json:"first_run_max_ms"`
	// Error is why the first start that failed did.
	Error string `json:"error,omitempty"`
}

// starts measures the start section with python as RUNBLOCK_PYTHON.
func (b *benchmark) starts(ctx context.Context, python string) *StartStats {
	exe := b.opts.Binary
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			b.note("start not measured: %v", err)
			return nil
		}
	}
	b.log.Info("bench: starts", "binary", exe, "runs", b.startRuns)
	s := measureStart(ctx, b.startRuns, executorStart(exe, []string{"RUNBLOCK_PYTHON=" + python}))
	if s.OK < s.Runs {
		b.note("start: %d of %d starts failed: %s", s.Runs-s.OK, s.Runs, s.Error)
	}
	return &s
}

// startTimes are one start's figures.
type startTimes struct {
	ready, firstRun time.Duration
}

// startFunc starts an executor once, times it and stops it.
type startFunc func(ctx context.Context) (startTimes, error)

// measureStart starts n executors one after another with start, and
// sums them up; it stops early when ctx ends.
func measureStart(ctx context.Context, n int, start startFunc) StartStats {
	s := StartStats{Runs: n}
	var ready, first []time.Duration
	for range n {
		if ctx.Err() != nil {
			if s.Error == "" {
				s.Error = ctx.Err().Error()
			}
			break
		}
		t, err := start(ctx)
		if err != nil {
			if s.Error == "" {
				s.Error = err.Error()
			}
			continue
		}
		s.OK++
		ready, first = append(ready, t.ready), append(first, t.firstRun)
	}
	slices.Sort(ready)
	slices.Sort(first)
	if len(ready) > 0 {
		s.ReadyP50MS, s.ReadyMaxMS = ms(percentile(ready, 50)), ms(ready[len(ready)-1])
		s.FirstRunP50MS, s.FirstRunMaxMS = ms(percentile(first, 50)), ms(first[len(first)-1])
	}
	return s
}

// startTimeout bounds one start, from the process's start to its first
// answer.
const startTimeout = time.Minute

// startPoll is how often /readyz is asked while an executor starts: the
// figures' resolution.
const startPoll = 2 * time.Millisecond

// executorStart is a startFunc: the binary exe started as `exe executor`
// with env added to this process's environment.
func executorStart(exe string, env []string) startFunc {
	return func(ctx context.Context) (startTimes, error) {
		ctx, cancel := context.WithTimeout(ctx, startTimeout)
		defer cancel()
		addr, err := freeAddr()
		if err != nil {
			return startTimes{}, err
		}
		var stderr bytes.Buffer
		cmd := exec.Command(exe, "executor")
		cmd.Env = append(append(os.Environ(), env...), "RUNBLOCK_HTTP_ADDR="+addr, "RUNBLOCK_LOG_LEVEL=warn")
		cmd.Stderr = &stderr
		cmd.WaitDelay = 5 * time.Second
		t0 := time.Now()
		if err := cmd.Start(); err != nil {
			return startTimes{}, fmt.Errorf("start %s executor: %w", exe, err)
		}
		var waitErr error
		exited := make(chan struct{})
		go func() {
			waitErr = cmd.Wait()
			close(exited)
		}()
		times, err := timeStart(ctx, "http://"+addr, t0, exited)
		select {
		case <-exited:
			if err == nil {
				err = errors.New("the executor ended after its first run")
			}
			return startTimes{}, fmt.Errorf("%w (%v): %s", err, waitErr, lastLine(stderr.String()))
		default:
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		stop := time.AfterFunc(30*time.Second, func() { _ = cmd.Process.Kill() })
		<-exited
		stop.Stop()
		if err != nil {
			return startTimes{}, fmt.Errorf("%w: %s", err, lastLine(stderr.String()))
		}
		return times, nil
	}
}

// timeStart polls base's /readyz until it answers 200, then runs
// print('hello') through it, timing both from t0; it fails when exited
// is closed (the process ended), or ctx ends.
func timeStart(ctx context.Context, base string, t0 time.Time, exited <-chan struct{}) (startTimes, error) {
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	var times startTimes
	tick := time.NewTicker(startPoll)
	defer tick.Stop()
	for {
		if ok, err := isReady(ctx, client, base); err == nil && ok {
			times.ready = time.Since(t0)
			break
		}
		select {
		case <-exited:
			return times, errors.New("the executor ended before it was ready")
		case <-ctx.Done():
			return times, fmt.Errorf("not ready: %w", ctx.Err())
		case <-tick.C:
		}
	}
	body, err := json.Marshal(wire.RunRequest{Code: helloCode})
	if err != nil {
		return times, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/run", bytes.NewReader(body))
	if err != nil {
		return times, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return times, fmt.Errorf("first run: %w", err)
	}
	defer resp.Body.Close()
	var res wire.RunResponse // or an ErrorResponse, whose error is res.Error
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		return times, fmt.Errorf("first run: %s: %w", resp.Status, err)
	}
	times.firstRun = time.Since(t0)
	if resp.StatusCode != http.StatusOK || !res.Success || res.Stdout != helloOut {
		return times, fmt.Errorf("first run: %s, stdout %q, error %q", resp.Status, res.Stdout, res.Error)
	}
	return times, nil
}

// isReady asks base's /readyz once.
func isReady(ctx context.Context, client *http.Client, base string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
	if err != nil {
		return false, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK, nil
}

// freeAddr is a loopback address with a port free right now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	return addr, l.Close()
}

// lastLine is s's last non-empty line, what a failed start said last.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
