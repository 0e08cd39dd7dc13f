package sandbox

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"testing"

	"go.uber.org/goleak"

	"github.com/runblock/runblock/executor"
)

// helperEnv names what a helper process of this test binary does: "doctor"
// prints the isolation report as JSON; "run" runs the snippet on stdin and
// prints the result as JSON ("run-pooled": in a pooled sandbox).
const helperEnv = "RUNBLOCK_SANDBOX_TEST_HELPER"

// helperColdEnv set: the helper's runs start from scratch, without a fork
// server.
const helperColdEnv = "RUNBLOCK_SANDBOX_TEST_COLD"

// helperUnguardedEnv set: the helper's guard refuses nothing (see
// Config.unguarded).
const helperUnguardedEnv = "RUNBLOCK_SANDBOX_TEST_UNGUARDED"

// TestMain lets this test binary become a helper process standing in for
// the service (started with other descriptors or in another user
// namespace), and checks that no
// test leaves a goroutine behind.
func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helper(mode))
	}
	goleak.VerifyTestMain(m)
}

// helperOutput is what a helper process prints.
type helperOutput struct {
	Report Report          `json:"report"`
	Result executor.Result `json:"result"`
	Err    string          `json:"err,omitempty"`
}

func helper(mode string) int {
	ctx := context.Background()
	var out helperOutput
	defer func() { _ = json.NewEncoder(os.Stdout).Encode(out) }()
	cfg := Config{AllowUnisolated: true, DisableForkServer: os.Getenv(helperColdEnv) != "", unguarded: os.Getenv(helperUnguardedEnv) != ""}
	if mode == "doctor" {
		r, err := Doctor(ctx, cfg)
		out.Report = r
		if err != nil {
			out.Err = err.Error()
		}
		return 0
	}
	code, err := io.ReadAll(os.Stdin)
	if err != nil {
		out.Err = err.Error()
		return 0
	}
	if mode == "run-pooled" {
		cfg.Pool = 1
	}
	if ms, _ := strconv.Atoi(os.Getenv("RUNBLOCK_SANDBOX_TEST_MEMORY_MB")); ms > 0 {
		cfg.MemoryBytes = int64(ms) << 20
	}
	e, err := New(ctx, cfg)
	if err != nil {
		out.Err = err.Error()
		return 0
	}
	defer e.Close()
	out.Report = e.Isolation()
	req := executor.Request{Code: string(code)}
	if mode == "run-pooled" {
		out.Result, err = (<-e.pool.idle).run(ctx, req)
	} else {
		out.Result, err = e.Run(ctx, req)
	}
	if err != nil {
		out.Err = err.Error()
	}
	return 0
}
