package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/elastic/go-seccomp-bpf"
	"golang.org/x/sys/unix"

	"github.com/runblock/runblock/bots/discord"
	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/executor/session"
	"github.com/runblock/runblock/internal/config"
	"github.com/runblock/runblock/internal/fakediscord"
)

func TestDoctorCommand(t *testing.T) {
	requirePython(t)
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"doctor", "--json"}, config.Env{"RUNBLOCK_ALLOW_UNISOLATED": "1"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var rep sandbox.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("%q: %v", stdout.String(), err)
	}
	if rep.Tier == "" || rep.Python == "" || len(rep.Layers) == 0 {
		t.Errorf("report %+v", rep)
	}
	if !strings.Contains(stdout.String(), `"fork_server":{"active":`) {
		t.Errorf("the JSON report lacks the fork server: %s", stdout.String())
	}

	stdout.Reset()
	off := config.Env{"RUNBLOCK_ALLOW_UNISOLATED": "1", "RUNBLOCK_FORKSERVER": "off"}
	if code := run(context.Background(), []string{"doctor"}, off, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "\nfork server: off (RUNBLOCK_FORKSERVER=off)") {
		t.Errorf("doctor with RUNBLOCK_FORKSERVER=off says:\n%s", stdout.String())
	}
}

func TestDoctorSaysHowSessionsWork(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  session.Config
		want []string
	}{
		{"off", session.Config{Disabled: true}, []string{"sessions: off (RUNBLOCK_SESSIONS=off)"}},
		{"defaults", session.Config{}, []string{
			"sessions: on", "256 MiB for a whole session", "at most 256 live", "1 GiB together",
			"counts at what its sandbox holds", "170 idle fit", "counts at its 256 MiB limit, so 1 GiB holds at least 4", "after 15m without a cell", "no CPU while idle, before its first cell and between cells", "processes are stopped (SIGSTOP; continued with the next cell)", "replays the earlier successful cells",
		}},
		{"set", session.Config{Idle: 90 * time.Second, MaxLive: 3, MemoryBytes: 4 << 30}, []string{"at most 3 live", "4 GiB together", "3 idle fit", "4 GiB holds at least 3", "after 1m30s without"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := sessionsText(tc.cfg, 256<<20)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("doctor's sessions text lacks %q:\n%s", w, got)
				}
			}
		})
	}
}

func TestForkServerLine(t *testing.T) {
	tests := []struct {
		name     string
		rep      sandbox.ForkServerReport
		disabled bool
		want     string
	}{
		{"active", sandbox.ForkServerReport{Active: true}, false, "fork server: on (each run is a fork of it)"},
		{"active with detail", sandbox.ForkServerReport{Active: true, Detail: "each run is a fork; preloaded: numpy"}, false, "fork server: on (each run is a fork; preloaded: numpy)"},
		{"turned off", sandbox.ForkServerReport{Detail: "off (RUNBLOCK_FORKSERVER=off): each run starts python from scratch"}, true, "fork server: off (RUNBLOCK_FORKSERVER=off): each run starts python from scratch"},
		{"failed", sandbox.ForkServerReport{Detail: "unavailable, each run starts python from scratch: no user namespaces"}, false, "fork server: unavailable, each run starts python from scratch: no user namespaces"},
		{"turned off, unexplained", sandbox.ForkServerReport{}, true, "fork server: off (RUNBLOCK_FORKSERVER=off): each run starts a sandbox from scratch"},
		{"unexplained", sandbox.ForkServerReport{}, false, "fork server: unavailable, each run starts a sandbox from scratch"},
	}
	for _, tt := range tests {
		if got := forkServerLine(tt.rep, tt.disabled); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

// withoutLandlockEnv makes this test binary run `runblock doctor` on a
// kernel that seems to lack Landlock: see doctorWithoutLandlock.
const withoutLandlockEnv = "GO_TEST_RUNBLOCK_DOCTOR_WITHOUT_LANDLOCK"

// doctorWithoutLandlock runs `runblock doctor` under a seccomp filter that
// answers Landlock's system calls with ENOSYS, as a kernel built without
// Landlock (or a container runtime's profile that does not know them)
// does, and returns its exit status.
func doctorWithoutLandlock() int {
	f := seccomp.Filter{
		NoNewPrivs: true,
		Flag:       seccomp.FilterFlagTSync,
		Policy: seccomp.Policy{
			DefaultAction: seccomp.ActionAllow,
			Syscalls: []seccomp.SyscallGroup{{
				Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS),
				Names:  []string{"landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self"},
			}},
		},
	}
	if err := seccomp.LoadFilter(f); err != nil {
		fmt.Fprintf(os.Stderr, "loading the seccomp filter: %v\n", err)
		return 3
	}
	return Run(context.Background(), "dev", []string{"doctor"}, config.Env{}, nil, nil, os.Stdout, os.Stderr)
}

// TestDoctorSaysWhyATierFailed: on a machine where the full tier does not
// work, doctor says why it failed, not only which layer is off (the reason
// used to be in the debug log only).
func TestDoctorSaysWhyATierFailed(t *testing.T) {
	requirePython(t)
	cmd := exec.Command(os.Args[0])
	cmd.Dir = t.TempDir() // no .env
	cmd.Env = append(os.Environ(), withoutLandlockEnv+"=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("doctor without Landlock: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	out := stdout.String()
	if !strings.Contains(out, "\ntier:   reduced\n") || !strings.Contains(out, "\n  landlock             off") {
		t.Errorf("doctor without Landlock, want the reduced tier with landlock off:\n%s", out)
	}
	_, why, ok := strings.Cut(out, "\nstronger tiers tried first, and why they do not work here:\n  landlock+namespaces+seccomp: ")
	if why, _, _ = strings.Cut(why, "\n"); !ok || !strings.Contains(why, "the kernel has no Landlock (its version query fails with ENOSYS)") {
		t.Errorf("doctor does not say why the full tier failed:\n%s", out)
	}
	t.Logf("doctor without Landlock:\n%s", out)
}

func TestWriteReportSaysWhyATierFailed(t *testing.T) {
	rep := sandbox.Report{Python: "/usr/bin/python3 (Python 3.11.2)", Tier: sandbox.TierReduced,
		Layers:      []sandbox.Layer{{Name: "landlock"}},
		FailedTiers: []sandbox.FailedTier{{Layers: "landlock+namespaces+seccomp", Reason: "setup: operation not permitted"}}}
	var b bytes.Buffer
	writeReport(&b, rep, false)
	want := "python: /usr/bin/python3 (Python 3.11.2)\ntier:   reduced\n  landlock             off\n" +
		"stronger tiers tried first, and why they do not work here:\n  landlock+namespaces+seccomp: setup: operation not permitted\n" +
		"fork server: unavailable, each run starts a sandbox from scratch\n"
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestDoctorSaysWhichDiscordTriggersAreOff: with a Discord token, doctor
// asks Discord for the application's flags and says which triggers the
// missing Message Content intent turns off.
func TestDoctorSaysWhichDiscordTriggersAreOff(t *testing.T) {
	requirePython(t)
	fd := fakediscord.New(fakediscord.Options{})
	t.Cleanup(fd.Close)
	for _, granted := range []bool{false, true} {
		fbot := fd.NewBot("doctor")
		if !granted {
			fbot.DenyMessageContent()
		}
		env := config.Env{"RUNBLOCK_ALLOW_UNISOLATED": "1", "DISCORD_BOT_TOKEN": fbot.Token, "DISCORD_API_URL": fd.URL(), "DISCORD_PREFIX": "?py"}
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{"doctor"}, env, nil, &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		want := "\ndiscord: Message Content intent granted (the application's flags: GATEWAY_MESSAGE_CONTENT): every trigger is on\n"
		if !granted {
			want = "\ndiscord: Message Content intent not granted (the application's flags lack GATEWAY_MESSAGE_CONTENT), so these triggers are off: prefix messages (?py);"
		}
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("granted %v: doctor says\n%s\nwant %q", granted, stdout.String(), want)
		}
		if strings.Contains(stdout.String()+stderr.String(), fbot.Token) {
			t.Error("the token is in the output")
		}
	}
}

func TestDiscordLineOnError(t *testing.T) {
	got := discordLine(discord.Access{}, discord.ErrBadToken, "!run")
	if !strings.HasPrefix(got, "discord: cannot tell whether the Message Content intent is granted: discord did not accept DISCORD_BOT_TOKEN") {
		t.Fatalf("line %q", got)
	}
}

// TestDoctorNamesAMissingScientificStack: doctor says when runblock's
// python cannot import numpy, pandas or matplotlib, and what to do;
// Debian's python3 with them installed (CI's) gets no such line, a venv
// made from it without its site packages does.
func TestDoctorNamesAMissingScientificStack(t *testing.T) {
	const debian = "/usr/bin/python3"
	venv := filepath.Join(t.TempDir(), "venv")
	if out, err := exec.Command(debian, "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
		t.Fatalf("making a venv without packages: %v\n%s", err, out)
	}
	for _, tt := range []struct {
		name, python string
		missing      bool
	}{
		{"debian's python3", debian, false},
		{"a bare venv", filepath.Join(venv, "bin", "python3"), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			env := config.Env{"RUNBLOCK_PYTHON": tt.python, "RUNBLOCK_FORKSERVER": "off", "RUNBLOCK_ALLOW_UNISOLATED": "1"}
			if code := run(context.Background(), []string{"doctor"}, env, nil, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			line := "scientific stack: this python cannot import numpy, pandas, matplotlib, so snippets that use them (plots, tables) fail with ModuleNotFoundError"
			if got := strings.Contains(stdout.String(), line); got != tt.missing {
				t.Errorf("doctor names the missing stack: %v, want %v:\n%s", got, tt.missing, stdout.String())
			}
			if tt.missing && (!strings.Contains(stdout.String(), "apt-get install python3-numpy") || !strings.Contains(stdout.String(), "RUNBLOCK_PYTHON")) {
				t.Errorf("doctor does not say how to fix it:\n%s", stdout.String())
			}
		})
	}
}
