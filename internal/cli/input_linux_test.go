package cli

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/runblock/runblock/internal/config"
)

// openPTY returns both ends of a new pseudo-terminal: a real terminal
// for serve's standard input.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { master.Close() })
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	return master, tty
}

func TestClassifyInput(t *testing.T) {
	_, tty := openPTY(t)
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	path := filepath.Join(t.TempDir(), "messages")
	if err := os.WriteFile(path, []byte(pipedExample), 0o600); err != nil {
		t.Fatal(err)
	}
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	dir, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	sock, peer := os.NewFile(uintptr(fds[0]), "socket"), os.NewFile(uintptr(fds[1]), "peer")
	defer sock.Close()
	defer peer.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	tests := []struct {
		name string
		r    io.Reader
		want input
	}{
		{"terminal", tty, inputTerminal},
		{"/dev/null", devNull, inputNone},
		{"pipe", pr, inputStream},
		{"regular file", file, inputStream},
		{"socket", sock, inputStream},
		{"directory", dir, inputNone},
		{"not a file", strings.NewReader(pipedExample), inputStream},
	}
	for _, tt := range tests {
		if got := classify(tt.r); got != tt.want {
			t.Errorf("%s: classify = %d, want %d", tt.name, got, tt.want)
		}
	}
}

// TestServeRefusesAnInputThatIsNothing: with no chat token and /dev/null
// as standard input (a container started without -i), serve exits
// non-zero with one line naming the token settings, instead of printing
// the console's banner and exiting 0 into a restart loop.
func TestServeRefusesAnInputThatIsNothing(t *testing.T) {
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	for _, args := range [][]string{nil, {"serve"}} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, config.Env{"RUNBLOCK_ALLOW_UNISOLATED": "1"}, devNull, &stdout, &stderr)
		if code == 0 {
			t.Errorf("%v: exit 0, want non-zero", args)
		}
		line := stderr.String()
		if strings.Count(strings.TrimRight(line, "\n"), "\n") != 0 {
			t.Errorf("%v: stderr is more than one line: %q", args, line)
		}
		for _, want := range []string{"SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "DISCORD_BOT_TOKEN"} {
			if !strings.Contains(line, want) {
				t.Errorf("%v: stderr %q does not name %s", args, line, want)
			}
		}
		if stdout.Len() != 0 {
			t.Errorf("%v: stdout %q, want nothing (no banner)", args, stdout.String())
		}
	}
}

// TestConsoleOnRealInputs runs serve's console, with the real executor, on
// standard inputs that are files of each kind it reads: a pipe, a regular
// file and a terminal (whose console greets and prompts).
func TestConsoleOnRealInputs(t *testing.T) {
	requirePython(t)
	env := config.Env{"RUNBLOCK_ALLOW_UNISOLATED": "1", "RUNBLOCK_POOL": "0"}
	serve := func(t *testing.T, stdin *os.File) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), nil, env, stdin, &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
		}
		if !strings.Contains(stdout.String(), "\n2\n") {
			t.Errorf("stdout %q lacks the reply 2; stderr:\n%s", stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	t.Run("pipe", func(t *testing.T) {
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer pr.Close()
		go func() {
			defer pw.Close()
			_, _ = io.WriteString(pw, pipedExample)
		}()
		serve(t, pr)
	})
	t.Run("regular file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "messages")
		if err := os.WriteFile(path, []byte(pipedExample), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		serve(t, f)
	})
	t.Run("terminal", func(t *testing.T) {
		master, tty := openPTY(t)
		// The terminal echoes what is typed: drain it so that it never
		// fills. The reader ends when the test closes master.
		echoed := make(chan struct{})
		go func() {
			defer close(echoed)
			_, _ = io.Copy(io.Discard, master)
		}()
		// A message, a blank line, then Ctrl-D: the end of the input.
		if _, err := io.WriteString(master, pipedExample+"\n\x04"); err != nil {
			t.Fatal(err)
		}
		out := serve(t, tty)
		if !strings.Contains(out, "runblock console") {
			t.Errorf("stdout %q lacks the console's banner", out)
		}
		tty.Close()
		master.Close()
		<-echoed
	})
}
