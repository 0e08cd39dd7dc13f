package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The commands' tests are in internal/cli; these need the binary's main.

// runMainEnv makes the test binary run main() instead of the tests, for
// tests of the real process: signals, exit status.
const runMainEnv = "GO_TEST_RUN_RUNBLOCK_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		return
	}
	goleak.VerifyTestMain(m)
}

const fence = "```"

func requirePython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not on PATH")
	}
}

// TestSIGTERMFinishesTheRunInFlight runs the real binary (this test binary
// running main) with the console over a pipe, sends SIGTERM while a snippet
// runs, and expects its reply on stdout and exit status 0.
func TestSIGTERMFinishesTheRunInFlight(t *testing.T) {
	requirePython(t)
	cmd := exec.Command(os.Args[0])
	cmd.Dir = t.TempDir() // no .env
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "RUNBLOCK_") && !strings.HasPrefix(k, "SLACK_") && !strings.HasPrefix(k, "DISCORD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, runMainEnv+"=1", "RUNBLOCK_ALLOW_UNISOLATED=1", "RUNBLOCK_POOL=0", "LOG_LEVEL=debug", "LOG_FORMAT=json")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer // read once the process has exited
	cmd.Stdout = &stdout
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	snippet := "import time\ntime.sleep(1)\nprint('survived the signal')\n"
	if _, err := io.WriteString(stdin, fence+"python\n"+snippet+fence+"\n\n"); err != nil {
		t.Fatal(err)
	}
	// Wait for the console to submit the run, then signal.
	var logs bytes.Buffer
	sc := bufio.NewScanner(io.TeeReader(stderr, &logs))
	submitted := false
	for !submitted && sc.Scan() {
		submitted = strings.Contains(sc.Text(), `"msg":"run submitted"`)
	}
	if !submitted {
		t.Fatalf("no run submitted; logs:\n%s", logs.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(stderr)
	logs.Write(rest)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v; logs:\n%s", err, logs.String())
	}
	if !strings.Contains(stdout.String(), "survived the signal") {
		t.Errorf("stdout %q lacks the reply of the run in flight; logs:\n%s", stdout.String(), logs.String())
	}
	if !strings.Contains(logs.String(), "shutting down") {
		t.Errorf("logs do not show the signal being handled:\n%s", logs.String())
	}
}
