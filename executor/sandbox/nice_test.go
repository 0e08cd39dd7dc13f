package sandbox_test

import (
	"testing"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
)

// TestSnippetYieldsToItsSupervisor: a snippet and its children run at
// nice 10, below the supervisor that counts their memory, and can neither
// lower it nor take a real-time policy, on both paths.
func TestSnippetYieldsToItsSupervisor(t *testing.T) {
	bothPaths(t, func(t *testing.T, cold bool) {
		e := newExecutor(t, sandbox.Config{DisableForkServer: cold})
		requireFull(t, e)
		res := run(t, e, executor.Request{Code: `import os, subprocess, sys
print(os.getpriority(os.PRIO_PROCESS, 0))
print(subprocess.run([sys.executable, "-c", "import os; print(os.getpriority(os.PRIO_PROCESS, 0))"], capture_output=True, text=True).stdout.strip())
for what, call in (("lower", lambda: os.setpriority(os.PRIO_PROCESS, 0, 0)),
                   ("fifo", lambda: os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1)))):
    try:
        call()
        print(what, "allowed")
    except PermissionError:
        print(what, "denied")`})
		if want := "10\n10\nlower denied\nfifo denied\n"; res.Stdout != want {
			t.Fatalf("stdout %q, want %q (stderr %s)", res.Stdout, want, res.Stderr)
		}
	})
}
