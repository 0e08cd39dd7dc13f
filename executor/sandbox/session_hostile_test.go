package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
)

// What a hostile session tries, on the fork path and the cold path, each
// with the guard and without it (hostilePaths): it stays within its
// session's limits, leaves nothing behind, and whatever it writes on its
// descriptors neither hangs nor breaks the service nor reaches another
// session.

// cellWithin runs req as s's next cell, failing the test if the service
// takes longer than within to answer: a hung service fails, not hangs.
func cellWithin(t *testing.T, s executor.LiveSession, req executor.Request, within time.Duration) executor.Result {
	t.Helper()
	type answer struct {
		res executor.Result
		err error
	}
	got := make(chan answer, 1)
	go func() {
		res, err := s.Run(context.Background(), req)
		got <- answer{res, err}
	}()
	select {
	case a := <-got:
		if a.err != nil {
			t.Fatalf("cell %.80q: the service failed: %v", req.Code, a.err)
		}
		return a.res
	case <-time.After(within):
		t.Fatalf("cell %.80q: no answer in %s: the service hangs", req.Code, within)
		return executor.Result{}
	}
}

// pidNamespace is the PID namespace a session's cells run in, as the
// host names it ("pid:[4026532...]": namespace ids are the host's).
func pidNamespace(t *testing.T, s executor.LiveSession) string {
	t.Helper()
	res := cellWithin(t, s, executor.Request{Code: "import os\nprint(os.readlink('/proc/self/ns/pid'))"}, 20*time.Second)
	ns := strings.TrimSpace(res.Stdout)
	if !res.Success || !strings.HasPrefix(ns, "pid:[") {
		t.Fatalf("PID namespace: %+v", res)
	}
	return ns
}

// processesIn counts the host's processes in the PID namespace ns.
func processesIn(t *testing.T, ns string) int {
	t.Helper()
	n := 0
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, entry := range entries {
		if _, err := strconv.Atoi(entry.Name()); err != nil {
			continue
		}
		if link, err := os.Readlink(filepath.Join("/proc", entry.Name(), "ns/pid")); err == nil && link == ns {
			n++
		}
	}
	return n
}

// TestSessionMemoryBoundedAcrossCells: memory held from cell to cell
// counts against the session's one limit: the cell that passes it gets
// the memory verdict and ends the session.
func TestSessionMemoryBoundedAcrossCells(t *testing.T) {
	hostilePaths(t, func(t *testing.T, path sandbox.Config) {
		path.MemoryBytes = 128 << 20
		e := newExecutor(t, path)
		requireFull(t, e)
		s := startSession(t, e)
		for i := range 5 {
			res := cellWithin(t, s, executor.Request{Code: fmt.Sprintf("held%d = b'\\x01' * (40 << 20)", i)}, 30*time.Second)
			if i < 2 && !res.Success {
				t.Fatalf("cell %d, %d MiB held: %+v", i+1, 40*(i+1), res)
			}
			if res.MemoryExceeded {
				if res.Success || s.Alive() || res.Error != "MemoryError" {
					t.Fatalf("cell %d past the limit: %+v, alive %v", i+1, res, s.Alive())
				}
				return
			}
		}
		t.Fatal("five cells held 200 MiB in a session of 128 MiB")
	})
}

// TestSessionProcessesBounded: processes a cell leaves running stay in
// the session's limits: a fork bomb meets its task cap, and a background
// process that grows past the memory limit between cells ends the
// session with the memory verdict; Close then leaves nothing behind.
func TestSessionProcessesBounded(t *testing.T) {
	hostilePaths(t, func(t *testing.T, path sandbox.Config) {
		e := newExecutor(t, path)
		requireFull(t, e)
		s := startSession(t, e)
		ns := pidNamespace(t, s)
		res := cellWithin(t, s, executor.Request{Code: `import os, signal, time
pids = []
try:
    while len(pids) < 500:
        pid = os.fork()
        if pid == 0:
            time.sleep(1000)
            os._exit(0)
        pids.append(pid)
except OSError as exc:
    print(len(pids), exc.errno)
for pid in pids:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)`, Timeout: 20 * time.Second}, 60*time.Second)
		forked, _, _ := strings.Cut(strings.TrimSpace(res.Stdout), " ")
		if n, err := strconv.Atoi(forked); !res.Success || err != nil || n >= 64 {
			t.Fatalf("fork bomb: %+v", res)
		}
		res = cellWithin(t, s, executor.Request{Code: `import subprocess, sys
sleepers = [subprocess.Popen(['sleep', '1000'], start_new_session=True) for _ in range(3)]
grower = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(0.3); x = b"1" * (400 << 20); time.sleep(1000)'])
print('left running')`}, 20*time.Second)
		if !res.Success || processesIn(t, ns) < 5 {
			t.Fatalf("cell leaving processes: %+v; %d processes in the session", res, processesIn(t, ns))
		}
		res = cellWithin(t, s, executor.Request{Code: "import time\ntime.sleep(30)", Timeout: 40 * time.Second}, 60*time.Second)
		if !res.MemoryExceeded || res.Timeout || s.Alive() {
			t.Fatalf("a background process past the session's memory: %+v, alive %v", res, s.Alive())
		}
		if n := processesIn(t, ns); n != 0 {
			t.Errorf("%d processes left in the ended session", n)
		}
	})
}

// TestSessionCloseLeavesNothing: Close, and a cell's timeout, end every
// process the session started, daemons in sessions of their own
// included.
func TestSessionCloseLeavesNothing(t *testing.T) {
	hostilePaths(t, func(t *testing.T, path sandbox.Config) {
		e := newExecutor(t, path)
		requireFull(t, e)
		for _, end := range []string{"close", "timeout"} {
			s := startSession(t, e)
			ns := pidNamespace(t, s)
			res := cellWithin(t, s, executor.Request{Code: `import os, subprocess, time
subprocess.Popen(['sleep', '1000'], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(1000)
    os._exit(0)
os.wait()`}, 20*time.Second)
			if !res.Success {
				t.Fatalf("%s: %+v", end, res)
			}
			if n := processesIn(t, ns); n < 4 {
				t.Fatalf("%s: %d processes in the session, want its init, python and two daemons", end, n)
			}
			if end == "close" {
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			} else if res := cellWithin(t, s, executor.Request{Code: "while True: pass", Timeout: 300 * time.Millisecond}, 20*time.Second); !res.Timeout || s.Alive() {
				t.Fatalf("timeout: %+v, alive %v", res, s.Alive())
			}
			if n := processesIn(t, ns); n != 0 {
				t.Errorf("%s: %d processes left behind", end, n)
			}
			if _, err := s.Run(context.Background(), executor.Request{Code: "print(1)"}); err == nil {
				t.Errorf("%s: the ended session ran a cell", end)
			}
		}
	})
}

// TestSessionsNeverMeet: two live sessions see neither each other's
// variables nor files nor processes.
func TestSessionsNeverMeet(t *testing.T) {
	hostilePaths(t, func(t *testing.T, path sandbox.Config) {
		e := newExecutor(t, path)
		requireFull(t, e)
		a, b := startSession(t, e), startSession(t, e)
		cellWithin(t, a, executor.Request{Code: "secret = 'A'\nopen('a.txt', 'w').write('A')\nimport subprocess\nsubprocess.Popen(['sleep', '1000'])"}, 20*time.Second)
		res := cellWithin(t, b, executor.Request{Code: `import os
print('secret' in globals(), os.path.exists('a.txt'), [p for p in os.listdir('/proc') if p.isdigit()] == [str(os.getpid())])
secret = 'B'`}, 20*time.Second)
		if !res.Success || res.Stdout != "False False True\n" {
			t.Errorf("the second session sees the first: %+v", res)
		}
		res = cellWithin(t, a, executor.Request{Code: "print(secret, os.listdir('.') if 'os' in globals() else sorted(__import__('os').listdir('.')))"}, 20*time.Second)
		if !res.Success || !strings.HasPrefix(res.Stdout, "A ") || strings.Contains(res.Stdout, "b.txt") {
			t.Errorf("the first session's state changed: %+v", res)
		}
		if pidNamespace(t, a) == pidNamespace(t, b) {
			t.Error("two sessions share a PID namespace")
		}
	})
}

// TestSessionForgedFramesHarmless: a cell that writes forged ends,
// markers or garbage on its session's descriptors, reads its next cell
// itself, or closes them, gets a result (its session ended, or its own
// output cut where it chose), never a hang or an error of the service;
// and a session beside it runs on untouched.
func TestSessionForgedFramesHarmless(t *testing.T) {
	// nonce is the running cell's nonce, found where a cell can find it:
	// in the guard's frame.
	const nonce = "import os, sys, threading, time\nf = sys._getframe(1)\nwhile 'nonce' not in f.f_locals:\n    f = f.f_back\nnonce = f.f_locals['nonce']\n"
	for _, c := range []struct {
		name, code, next string
		// alive: the session lives on after the hostile cell and the next;
		// either: it may or may not (a race the cell sets up itself).
		alive, either bool
	}{
		{name: "garbage on the status pipe", code: "import os\nos.write(4, b'garbage\\n')"},
		{name: "a line without end", code: "import os\nos.write(4, b'x' * 100000)"},
		{name: "absurd counts", code: nonce + "os.write(4, nonce + b' ok 999999999 0 0\\n')"},
		{name: "a file out of the work dir", code: nonce + "os.write(4, nonce + b' ok 1 0 0\\n16 1\\n../../etc/passwdX')"},
		{name: "a display past its bounds", code: nonce + "os.write(4, nonce + b' ok 0 0 1\\n1 0 0\\n10 99999999999\\ntext/plain')"},
		{name: "an unknown reason", code: nonce + "os.write(4, nonce + b' ok 0 1 0\\n3 0 because\\nabc')"},
		{name: "another cell's nonce", code: "import os\nos.write(4, b'0123456789abcdef0123456789abcdef ok 0 0 0\\n')"},
		{name: "a false exit", code: nonce + "os.write(4, nonce + b' exit 0 0 0\\n')"},
		{name: "a forged marker", code: nonce + "sys.stdout.write('cut here\\x00runblock-cell-end ' + nonce.decode() + '\\x00')\nprint('after')",
			next: "print('next')", alive: true},
		// The thread and the guard both read the request pipe: the next
		// cell, or part of it, goes to either.
		{name: "the next cell stolen", code: "import os, threading\nthreading.Thread(target=lambda: [os.read(3, 1 << 20) for _ in iter(int, 1)], daemon=True).start()",
			next: "print('next')", either: true},
		{name: "garbage between cells", code: "import os, threading, time\nthreading.Thread(target=lambda: (time.sleep(0.2), os.write(4, b'between\\n')), daemon=True).start()",
			next: "import time\ntime.sleep(5)"},
		{name: "pipes closed", code: "import os\nos.close(4)\nos.close(3)"},
		{name: "stdout closed", code: "import os\nos.close(1)\nos.close(2)", next: "print('next')"},
	} {
		t.Run(c.name, func(t *testing.T) {
			hostilePaths(t, func(t *testing.T, path sandbox.Config) {
				path.Timeout = 2 * time.Second
				e := newExecutor(t, path)
				requireFull(t, e)
				bystander, s := startSession(t, e), startSession(t, e)
				cellWithin(t, bystander, executor.Request{Code: "n = 1"}, 20*time.Second)
				cellWithin(t, s, executor.Request{Code: "x = 1"}, 20*time.Second)
				res := cellWithin(t, s, executor.Request{Code: c.code}, 20*time.Second)
				if c.next != "" && s.Alive() {
					res = cellWithin(t, s, executor.Request{Code: c.next}, 20*time.Second)
				}
				if !c.either && (s.Alive() != c.alive || (!c.alive && res.Success)) {
					t.Errorf("hostile cell: %+v, alive %v, want alive %v", res, s.Alive(), c.alive)
				}
				if c.either && s.Alive() != (res.Success && res.Stdout == "next\n") {
					t.Errorf("the cell after a stolen one: %+v, alive %v", res, s.Alive())
				}
				if c.alive && (!res.Success || !strings.Contains(res.Stdout, "after") || !strings.HasSuffix(res.Stdout, "next\n")) {
					t.Errorf("the cell after a forged marker: %+v", res)
				}
				res = cellWithin(t, bystander, executor.Request{Code: "n += 1\nprint(n)"}, 20*time.Second)
				if !res.Success || res.Stdout != "2\n" || !bystander.Alive() {
					t.Errorf("the session beside it: %+v", res)
				}
			})
		})
	}
}
