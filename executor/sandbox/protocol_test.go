package sandbox

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
)

// pythonProtocol is what the Python side must agree on with protocol.go:
// the values guard.py's protocol lines give each Go name (as Python
// literals), and the keys of protocol.ForkServerConf.
func pythonProtocol() (lines map[string]string, confKeys []string) {
	lines = map[string]string{
		"FDRequest": strconv.Itoa(protocol.FDRequest), "FDStatus": strconv.Itoa(protocol.FDStatus), "FDGate": strconv.Itoa(protocol.FDGate),
		"GuardArgConfig": strconv.Itoa(protocol.GuardArgConfig), "GuardArgMode": strconv.Itoa(protocol.GuardArgMode),
		"GuardArgFontCache": strconv.Itoa(protocol.GuardArgFontCache), "GuardArgPreload": strconv.Itoa(protocol.GuardArgPreload),
		"GuardArgSite":  strconv.Itoa(protocol.GuardArgSite),
		"StatusReady":   "b" + strconv.Quote(protocol.StatusReady),
		"StatusStarted": "b" + strconv.Quote(protocol.StatusStarted+"\n"),
		"RequestColour": strconv.Itoa(protocol.RequestColour), "RequestCell": strconv.Itoa(protocol.RequestCell),
		"RequestLaunch":  strconv.Itoa(protocol.RequestLaunch),
		"DisplayTextMax": strconv.Itoa(protocol.DisplayTextMax), "DisplayEntryMax": strconv.Itoa(protocol.DisplayEntryMax),
		"DisplayRunMax": strconv.Itoa(protocol.DisplayRunMax), "DisplayCountMax": strconv.Itoa(protocol.DisplayCountMax),
		"DisplayTableRows": strconv.Itoa(protocol.DisplayTableRows), "DisplayTableColumns": strconv.Itoa(protocol.DisplayTableColumns),
		"ResultsFile": "b" + strconv.Quote(protocol.ResultsFile),
		"StepRlimits": "b" + strconv.Quote(protocol.StepRlimits),
	}
	// Sessions: the start, the end marker, the outcomes and the reasons a
	// file does not come back.
	for name, value := range map[string]string{
		"SessionStart": protocol.SessionStart, "SessionMarkOpen": protocol.SessionMarkOpen, "SessionMarkClose": protocol.SessionMarkClose,
		"CellOK": protocol.CellOK, "CellRaised": protocol.CellRaised, "CellExited": protocol.CellExited,
		"OmitSymlink": protocol.OmitSymlink, "OmitNotRegular": protocol.OmitNotRegular, "OmitHardLink": protocol.OmitHardLink, "OmitUnreadable": protocol.OmitUnreadable,
		"OmitTooDeep": protocol.OmitTooDeep, "OmitCount": protocol.OmitCount, "OmitSize": protocol.OmitSize, "OmitNotNamed": protocol.OmitNotNamed,
	} {
		lines[name] = "b" + strconv.Quote(value)
	}
	t := reflect.TypeFor[protocol.ForkServerConf]()
	for i := range t.NumField() {
		confKeys = append(confKeys, strings.Split(t.Field(i).Tag.Get("json"), ",")[0])
	}
	return lines, confKeys
}

var (
	// A protocol line: `NAME, ... = value, ...  # protocol: goName ...`.
	protocolLine = regexp.MustCompile(`(?m)^\s*([A-Z_][A-Z_, ]*?)\s*=\s*(.+?)\s*# protocol: (.+)$`)
	confKey      = regexp.MustCompile(`conf\[["']([a-z_]+)["']\]`)
	// A descriptor or argv slot written as a bare number.
	bareGuard      = regexp.MustCompile(`\b(read|write|close|closerange|set_inheritable)\(\d|argv\[\d`)
	bareForkServer = regexp.MustCompile(`\bposix\.(read|write|close)\(\d|fileno=\d|fds\[:?\d`)
)

// protocolErrors lists where guard and forkserver (the sources of guard.py
// and forkserver.py) disagree with the protocol (see pythonProtocol).
func protocolErrors(guard, forkserver string, lines map[string]string, confKeys []string) []string {
	var errs []string
	seen := map[string]bool{}
	for _, m := range protocolLine.FindAllStringSubmatch(guard, -1) {
		names, values, goNames := strings.Split(m[1], ","), strings.Split(m[2], ","), strings.Fields(m[3])
		if len(names) != len(values) || len(names) != len(goNames) {
			errs = append(errs, fmt.Sprintf("guard.py: %q: %d names, %d values, %d Go names", m[0], len(names), len(values), len(goNames)))
			continue
		}
		for i, goName := range goNames {
			name, value := strings.TrimSpace(names[i]), strings.TrimSpace(values[i])
			want, ok := lines[goName]
			switch {
			case !ok:
				errs = append(errs, fmt.Sprintf("guard.py: %s stands for %s, which protocol.go does not declare", name, goName))
			case value != want:
				errs = append(errs, fmt.Sprintf("guard.py: %s = %s, protocol.go's %s is %s", name, value, goName, want))
			case len(regexp.MustCompile(`\b`+name+`\b`).FindAllString(guard, 2)) < 2:
				errs = append(errs, fmt.Sprintf("guard.py: %s is declared and never used", name))
			}
			seen[goName] = true
		}
	}
	for _, goName := range slices.Sorted(maps.Keys(lines)) {
		if !seen[goName] {
			errs = append(errs, fmt.Sprintf("guard.py: no protocol line names %s", goName))
		}
	}
	if bare := bareGuard.FindAllString(guard, -1); bare != nil {
		errs = append(errs, fmt.Sprintf("guard.py: bare descriptors or argv slots: %q", bare))
	}
	read := map[string]bool{}
	for _, m := range confKey.FindAllStringSubmatch(forkserver, -1) {
		read[m[1]] = true
		if !slices.Contains(confKeys, m[1]) {
			errs = append(errs, fmt.Sprintf("forkserver.py reads conf[%q], which protocol.ForkServerConf does not have", m[1]))
		}
	}
	for _, k := range confKeys {
		if !read[k] {
			errs = append(errs, fmt.Sprintf("protocol.ForkServerConf's %q is never read by forkserver.py", k))
		}
	}
	if bare := bareForkServer.FindAllString(forkserver, -1); bare != nil {
		errs = append(errs, fmt.Sprintf("forkserver.py: bare descriptors: %q", bare))
	}
	return errs
}

// TestPythonProtocol holds guard.py and forkserver.py to protocol.go: the
// guard's protocol lines to the Go declarations, the keys the fork server
// reads of its configuration to protocol.ForkServerConf's (both ways), and neither
// file writes a descriptor or argv slot as a bare number. Each case
// changes one side alone, and must be caught.
func TestPythonProtocol(t *testing.T) {
	lines, confKeys := pythonProtocol()
	if errs := protocolErrors(guardSource, forkserverSource, lines, confKeys); errs != nil {
		t.Fatalf("guard.py or forkserver.py disagree with protocol.go:\n%s", strings.Join(errs, "\n"))
	}
	if got := protocol.GuardArgv("c", "m", "f", "p", []string{"s1", "s2"}); !slices.Equal(got, []string{"c", "m", "f", "p", "s1", "s2"}) ||
		got[protocol.GuardArgSite-protocol.GuardArgConfig] != "s1" {
		t.Errorf("protocol.GuardArgv puts its arguments at %q, not at their slots", got)
	}

	changed := func(m map[string]string, k, v string) map[string]string {
		m = maps.Clone(m)
		m[k] = v
		return m
	}
	replace := func(s, old, new string) string {
		if !strings.Contains(s, old) {
			t.Fatalf("the case's %q is not in the source", old)
		}
		return strings.Replace(s, old, new, 1)
	}
	for _, c := range []struct {
		name              string
		guard, forkserver string
		lines             map[string]string
		confKeys          []string
		want              string
	}{
		{name: "Go's descriptor changed", lines: changed(lines, "FDStatus", "7"), want: "STATUS = 4, protocol.go's FDStatus is 7"},
		{name: "Go's argv slot changed", lines: changed(lines, "GuardArgSite", "6"), want: "SITE = 5, protocol.go's GuardArgSite is 6"},
		{name: "Go's status line changed", lines: changed(lines, "StatusReady", `b"go"`), want: `READY = b"ready"`},
		{name: "Go declares a new number", lines: changed(lines, "FDNew", "9"), want: "no protocol line names FDNew"},
		{name: "guard.py's descriptor changed", guard: replace(guardSource, "= 3, 4, 5", "= 3, 6, 5"), want: "STATUS = 6, protocol.go's FDStatus is 4"},
		{name: "guard.py's line dropped", guard: replace(guardSource, "  # protocol: StatusReady StatusStarted", ""), want: "no protocol line names StatusReady"},
		{name: "Go's session marker changed", lines: changed(lines, "SessionMarkOpen", `b"\x00end "`), want: `MARK_OPEN = b"\x00runblock-cell-end ", protocol.go's SessionMarkOpen`},
		{name: "guard.py's omitted reason changed", guard: replace(guardSource, `b"hard-link"`, `b"hardlink"`), want: `HARD_LINK = b"hardlink", protocol.go's OmitHardLink is b"hard-link"`},
		{name: "guard.py writes a bare descriptor", guard: replace(guardSource, "write(STATUS, STARTED)", "write(4, STARTED)"), want: `bare descriptors or argv slots: ["write(4"]`},
		{name: "guard.py reads a bare argv slot", guard: replace(guardSource, "sys.argv[FONTCACHE]", "sys.argv[3]"), want: `"argv[3"`},
		{name: "forkserver.py reads a key Go does not send", forkserver: replace(forkserverSource, `conf["hello_max"]`, `conf["hello_size"]`), want: `conf["hello_size"], which protocol.ForkServerConf does not have`},
		{name: "Go sends a key forkserver.py does not read", confKeys: append(slices.Clone(confKeys), "new_key"), want: `"new_key" is never read`},
		{name: "forkserver.py uses a bare descriptor", forkserver: replace(forkserverSource, `fds[conf["run_init"]]`, "fds[6]"), want: `bare descriptors: ["fds[6"]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.lines == nil {
				c.lines = lines
			}
			if c.confKeys == nil {
				c.confKeys = confKeys
			}
			errs := protocolErrors(cmp.Or(c.guard, guardSource), cmp.Or(c.forkserver, forkserverSource), c.lines, c.confKeys)
			if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, c.want) }) {
				t.Errorf("the change is not caught: want an error with %q, got %q", c.want, errs)
			}
		})
	}
}

// TestForkErrorFitsTheHello: the error a forked run's python sends on its
// back channel fits in one datagram of protocol.ForkHelloMax bytes and reads back,
// whatever characters it holds (a character outside the BMP took 12 bytes
// of JSON, and 600 of them a cut, unreadable hello).
func TestForkErrorFitsTheHello(t *testing.T) {
	py, err := findPython(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	const send = `import json, sys
_runblock_fork_failed(json.loads(sys.argv[1]), 1, Exception(json.loads(sys.argv[2])))`
	conf, err := json.Marshal(protocol.ForkServerConf{ErrorMax: protocol.ForkErrorMax})
	if err != nil {
		t.Fatal(err)
	}
	quoted := func(s string) string {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	// The messages in JSON, which can hold a lone surrogate for python.
	for _, c := range []struct{ name, message string }{
		{"ascii", quoted(strings.Repeat("x", 10000))},
		{"outside the BMP", quoted(strings.Repeat("\U0001F600", 1000))},
		{"control characters", quoted(strings.Repeat("\x01", 1000))},
		{"quotes and backslashes", quoted(strings.Repeat(`"\`, 1000))},
		{"lone surrogates", `"` + strings.Repeat(`\ud800`, 1000) + `"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := exec.Command(py.Real, "-I", "-S", "-c", forkserverSource+"\n"+send, string(conf), c.message).Output()
			if err != nil {
				t.Fatal(err)
			}
			if len(out) > protocol.ForkHelloMax {
				t.Errorf("the error takes %d bytes, over protocol.ForkHelloMax (%d)", len(out), protocol.ForkHelloMax)
			}
			var hello protocol.ForkHello
			if err := json.Unmarshal(out, &hello); err != nil || !strings.HasPrefix(hello.Error, "fork server: ") {
				t.Errorf("the error does not read back: %v, %.80q", err, out)
			}
		})
	}
}

// TestGuardFitsAnArgument: the fork server's init gets the compiled guard
// within its stage spec, one argument of at most 128 KiB (the kernel's
// MAX_ARG_STRLEN): past it the fork server cannot start ("argument list
// too long"), which the guard's session mode took it to when the guard
// went as hex with its docstrings. The guard leaves 32 KiB for the rest
// of the spec (the seccomp filter, the configuration, the binds).
func TestGuardFitsAnArgument(t *testing.T) {
	py, err := findPython(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(py.Guard); n > 96<<10 {
		t.Errorf("the compiled guard takes %d bytes of the fork server's spec, over 96 KiB", n)
	}
	t.Logf("compiled guard: %d bytes on the command line", len(py.Guard))
}
