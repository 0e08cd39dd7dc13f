package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/runblock/runblock/internal/config"
)

// composeServices splits compose.yaml's services into their lines, keyed by
// service name: a light structural reading (two-space indented names under
// services:), enough to check what the README promises.
func composeServices(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	services := map[string][]string{}
	in, name := false, ""
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#"):
		case !strings.HasPrefix(line, " "):
			in = line == "services:"
			name = ""
		case in && strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   "):
			name = strings.TrimSuffix(strings.TrimSpace(line), ":")
			services[name] = nil
		case in && name != "":
			services[name] = append(services[name], strings.TrimSpace(line))
		}
	}
	return services
}

// TestCompose: `docker compose up` starts one runblock with the README's
// security options, .env, a health check and a stop grace period that
// outlasts the drain.
func TestCompose(t *testing.T) {
	services := composeServices(t)
	lines, ok := services["runblock"]
	if !ok {
		t.Fatalf("compose.yaml has no runblock service: %v", services)
	}
	has := func(want string) bool {
		for _, l := range lines {
			if l == want {
				return true
			}
		}
		return false
	}
	for _, want := range []string{
		"- seccomp=unconfined", "- apparmor=unconfined", "- systempaths=unconfined",
		"- path: .env", `test: ["CMD", "runblock", "doctor"]`, "stop_signal: SIGTERM",
	} {
		if !has(want) {
			t.Errorf("the runblock service lacks %q", want)
		}
	}
	grace := false
	for _, l := range lines {
		if strings.HasPrefix(l, "profiles:") {
			t.Errorf("the runblock service has %q: docker compose up would not start it", l)
		}
		if strings.Contains(l, "privileged: true") {
			t.Errorf("the runblock service is privileged")
		}
		if v, ok := strings.CutPrefix(l, "stop_grace_period:"); ok {
			grace = true
			d, err := time.ParseDuration(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("stop_grace_period %q: %v", v, err)
			}
			if d <= config.DefaultDrainTimeout {
				t.Errorf("stop_grace_period %v does not outlast the drain (%v)", d, config.DefaultDrainTimeout)
			}
		}
	}
	if !grace {
		t.Error("the runblock service has no stop_grace_period: Docker kills after 10s, before the drain ends")
	}
	stop := false
	for _, in := range parseDockerfile(t, "Dockerfile") {
		stop = stop || in.cmd == "STOPSIGNAL" && in.args == "SIGTERM"
	}
	if !stop {
		t.Error("the Dockerfile does not set STOPSIGNAL SIGTERM, the signal that drains")
	}
}
