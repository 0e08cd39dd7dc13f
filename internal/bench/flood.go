package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
)

// floodArg0 is the argv[0] under which a binary calling Main becomes the
// flood child: a service process of its own whose peak RSS the parent reads.
const floodArg0 = "runblock-bench-flood"

// floodCode writes to stdout as fast as it can, for the whole timeout.
const floodCode = "import sys\nwhile True: sys.stdout.write('x'*10**6)\n"

// Main runs the flood child and exits when this process was started as one
// (see measureFlood); in any other process it returns at once. The flood
// re-executes the running binary, so a binary that runs the benchmark calls
// Main first thing in main, and so does TestMain.
func Main() {
	if len(os.Args) > 0 && os.Args[0] == floodArg0 {
		os.Exit(floodChild(context.Background(), os.Stdin, os.Stdout, os.Stderr))
	}
}

// floodConfig is what the parent sends the flood child, as one JSON line.
type floodConfig struct {
	Executor sandbox.Config `json:"executor"`
	Code     string         `json:"code"`
}

// floodReply is each line the flood child writes back.
type floodReply struct {
	Ready bool `json:"ready,omitempty"`
	// ForkServer comes with Ready: the executor's fork server.
	ForkServer *sandbox.ForkServerReport `json:"fork_server,omitempty"`
	Result     *executor.Result          `json:"result,omitempty"`
	WallMS     float64                   `json:"wall_ms,omitempty"`
	Error      string                    `json:"error,omitempty"`
}

// floodChild is the child's side: read the config, start an executor, say
// ready, run the snippet when told to, send the result, and exit when stdin
// closes, so the parent can read the peak RSS while the process still lives.
func floodChild(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) int {
	in := bufio.NewReader(stdin)
	enc := json.NewEncoder(stdout)
	fail := func(err error) int {
		_ = enc.Encode(floodReply{Error: err.Error()})
		return 1
	}
	line, err := in.ReadBytes('\n')
	if err != nil {
		return fail(fmt.Errorf("read config: %w", err))
	}
	var cfg floodConfig
	if err := json.Unmarshal(line, &cfg); err != nil {
		return fail(fmt.Errorf("read config: %w", err))
	}
	cfg.Executor.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ex, _, err := newWarmExecutor(ctx, cfg.Executor)
	if err != nil {
		return fail(err)
	}
	defer ex.Close()
	fs := ex.Isolation().ForkServer
	if err := enc.Encode(floodReply{Ready: true, ForkServer: &fs}); err != nil {
		return 1
	}
	if _, err := in.ReadBytes('\n'); err != nil {
		return fail(fmt.Errorf("wait for go: %w", err))
	}
	start := time.Now()
	res, err := ex.Run(ctx, executor.Request{Code: cfg.Code})
	wall := time.Since(start)
	if err != nil {
		return fail(err)
	}
	if err := enc.Encode(floodReply{Result: &res, WallMS: ms(wall)}); err != nil {
		return 1
	}
	_, _ = io.Copy(io.Discard, in)
	return 0
}

// measureFlood starts the flood child with cfg, and reads its VmHWM from
// /proc/<pid>/status before and after the flood.
func measureFlood(ctx context.Context, cfg sandbox.Config, row string) (*Flood, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("flood: find own binary: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout+2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Args = []string{floodArg0}
	cmd.WaitDelay = 5 * time.Second
	stderr := &limitedBuffer{max: 8192}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("flood: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("flood: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("flood: start child: %w", err)
	}
	f, err := floodDialog(cmd.Process.Pid, cfg, stdin, bufio.NewReader(stdout))
	if err != nil {
		cancel()
	}
	stdin.Close()
	waitErr := cmd.Wait()
	if err != nil {
		if msg := strings.TrimSpace(stderr.buf.String()); msg != "" {
			err = fmt.Errorf("%w (child stderr: %s)", err, msg)
		}
		return nil, fmt.Errorf("flood: %w", err)
	}
	if waitErr != nil {
		return nil, fmt.Errorf("flood: child: %w", waitErr)
	}
	f.Row = row
	return f, nil
}

// floodDialog is the parent's side of the protocol of floodChild.
func floodDialog(pid int, cfg sandbox.Config, stdin io.Writer, stdout *bufio.Reader) (*Flood, error) {
	cfg.Logger = nil
	line, err := json.Marshal(floodConfig{Executor: cfg, Code: floodCode})
	if err != nil {
		return nil, fmt.Errorf("encode config: %w", err)
	}
	if _, err := stdin.Write(append(line, '\n')); err != nil {
		return nil, fmt.Errorf("send config: %w", err)
	}
	reply, err := readReply(stdout)
	if err != nil {
		return nil, err
	}
	if !reply.Ready {
		return nil, errors.New("child not ready")
	}
	forkServer := reply.ForkServer
	baseline, err := peakRSS(pid)
	if err != nil {
		return nil, err
	}
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		return nil, fmt.Errorf("send go: %w", err)
	}
	reply, err = readReply(stdout)
	if err != nil {
		return nil, err
	}
	if reply.Result == nil {
		return nil, errors.New("child sent no result")
	}
	peak, err := peakRSS(pid)
	if err != nil {
		return nil, err
	}
	res := reply.Result
	return &Flood{
		Code:           floodCode,
		TimeoutMS:      ms(cfg.Timeout),
		DurationMS:     reply.WallMS,
		Timeout:        res.Timeout,
		OutputLimit:    res.OutputLimit,
		StdoutBytes:    res.StdoutBytes,
		KeptBytes:      len(res.Stdout),
		BaselineRSSMiB: baseline,
		PeakRSSMiB:     peak,
		OvershootMS:    reply.WallMS - ms(cfg.Timeout),
		ForkServer:     forkServer,
	}, nil
}

func readReply(r *bufio.Reader) (floodReply, error) {
	line, err := r.ReadBytes('\n')
	if err != nil {
		return floodReply{}, fmt.Errorf("read child reply: %w", err)
	}
	var reply floodReply
	if err := json.Unmarshal(line, &reply); err != nil {
		return floodReply{}, fmt.Errorf("read child reply %q: %w", line, err)
	}
	if reply.Error != "" {
		return floodReply{}, fmt.Errorf("child: %s", reply.Error)
	}
	return reply, nil
}

// peakRSS reads VmHWM, the peak resident set size, of process pid in MiB.
func peakRSS(pid int) (float64, error) {
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, fmt.Errorf("read peak rss: %w", err)
	}
	return parseVmHWM(string(status))
}

// parseVmHWM reads the VmHWM line of a /proc/<pid>/status text, in MiB.
func parseVmHWM(status string) (float64, error) {
	for line := range strings.Lines(status) {
		rest, ok := strings.CutPrefix(line, "VmHWM:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("read peak rss: odd line %q", strings.TrimSpace(line))
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("read peak rss: %w", err)
		}
		return float64(kb) / 1024, nil
	}
	return 0, errors.New("read peak rss: no VmHWM line")
}
