package deploy

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/runblock/runblock/internal/config"
)

// loadCompose loads compose.yaml, copied into a directory of its own with
// dotEnv as its .env ("" for none), the way `docker compose` does: with
// Compose's own loader, interpolating from env (and the .env file) alone,
// so nothing of this process's environment or of a developer's .env leaks
// in.
func loadCompose(t *testing.T, env []string, dotEnv string, profiles ...string) (*types.Project, error) {
	t.Helper()
	dir := t.TempDir()
	src, err := os.ReadFile("../compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "compose.yaml"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if dotEnv != "" {
		if err := os.WriteFile(filepath.Join(dir, ".env"), []byte(dotEnv), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	opts, err := cli.NewProjectOptions([]string{filepath.Join(dir, "compose.yaml")},
		cli.WithWorkingDirectory(dir), cli.WithName("runblock"), cli.WithEnv(env),
		cli.WithDotEnv, cli.WithProfiles(profiles))
	if err != nil {
		t.Fatal(err)
	}
	return opts.LoadProject(context.Background())
}

// filledEnv is .env.example with the tokens filled in, as the README tells
// an operator to make it.
func filledEnv(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../.env.example")
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\nSLACK_BOT_TOKEN=xoxb-test\nSLACK_APP_TOKEN=xapp-test\nRUNBLOCK_API_TOKEN=0123456789abcdef0123456789abcdef\n"
}

// TestComposeLoads: every way an operator runs compose.yaml loads with
// Compose's own loader, whatever the shell's environment holds. Compose
// interpolates every service, even those of profiles it does not start, so
// a ${VAR:?} anywhere stops `docker compose up`, `ps` and `stop` of the
// default service.
func TestComposeLoads(t *testing.T) {
	for _, tc := range []struct {
		name     string
		dotEnv   bool
		profiles []string
		services []string
	}{
		{"default, no .env", false, nil, []string{"runblock"}},
		{"default, .env from .env.example", true, nil, []string{"runblock"}},
		{"scaled, no .env", false, []string{"scaled"}, []string{"bot", "executor", "runblock"}},
		{"scaled, .env from .env.example", true, []string{"scaled"}, []string{"bot", "executor", "runblock"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dotEnv := ""
			if tc.dotEnv {
				dotEnv = filledEnv(t)
			}
			// No token in the environment, only PATH.
			p, err := loadCompose(t, []string{"PATH=/usr/bin:/bin"}, dotEnv, tc.profiles...)
			if err != nil {
				t.Fatalf("docker compose would fail: %v", err)
			}
			if got := p.ServiceNames(); !slices.Equal(got, tc.services) {
				t.Errorf("services %v, want %v", got, tc.services)
			}
		})
	}
}

// TestComposeScaledTokens: the scaled services take their token from .env,
// never from an interpolation that empties it.
func TestComposeScaledTokens(t *testing.T) {
	p, err := loadCompose(t, []string{"PATH=/usr/bin:/bin"}, filledEnv(t), "scaled")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"bot", "executor"} {
		s, err := p.GetService(name)
		if err != nil {
			t.Fatal(err)
		}
		if tok := s.Environment["RUNBLOCK_API_TOKEN"]; tok == nil || *tok != "0123456789abcdef0123456789abcdef" {
			t.Errorf("%s does not get RUNBLOCK_API_TOKEN from .env", name)
		}
	}
}

func service(t *testing.T, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	s, err := p.GetService(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestComposeRunblock: `docker compose up` starts one runblock with the
// security options deploy/README.md explains, .env, a health check and a
// stop grace period that outlasts the drain.
func TestComposeRunblock(t *testing.T) {
	p, err := loadCompose(t, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	s := service(t, p, "runblock")
	for _, opt := range []string{"seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined", "no-new-privileges:true"} {
		if !slices.Contains(s.SecurityOpt, opt) {
			t.Errorf("security_opt lacks %s", opt)
		}
	}
	if s.Privileged {
		t.Error("runblock is privileged")
	}
	if len(s.Profiles) > 0 {
		t.Errorf("profiles %v: docker compose up would not start it", s.Profiles)
	}
	if len(s.EnvFiles) != 1 || filepath.Base(s.EnvFiles[0].Path) != ".env" || s.EnvFiles[0].Required {
		t.Errorf("env_file %+v, want an optional .env", s.EnvFiles)
	}
}

// TestComposeStoreSurvives: the services that keep the store (runblock,
// and the scaled profile's bot) have the image's working directory, where
// the default sqlite:runblock.db goes, on a named volume: installations
// outlive the container (`docker compose up --build` replaces it), also on
// the bot's read-only root. A named volume starts as a copy of the image's
// directory, so it is the runblock user's to write.
func TestComposeStoreSurvives(t *testing.T) {
	dockerfile, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var workdir string
	for line := range strings.Lines(string(dockerfile)) {
		if dir, ok := strings.CutPrefix(strings.TrimSpace(line), "WORKDIR "); ok {
			workdir = strings.TrimSpace(dir)
		}
	}
	p, err := loadCompose(t, nil, "", "scaled")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"runblock", "bot"} {
		s := service(t, p, name)
		i := slices.IndexFunc(s.Volumes, func(v types.ServiceVolumeConfig) bool { return v.Target == workdir })
		if i < 0 {
			t.Errorf("%s: no volume at the working directory %s: %+v", name, workdir, s.Volumes)
			continue
		}
		v := s.Volumes[i]
		if _, declared := p.Volumes[v.Source]; v.Type != types.VolumeTypeVolume || !declared || v.ReadOnly {
			t.Errorf("%s: %+v, want a named volume of the project, writable", name, v)
		}
	}
}

// TestComposeExecutorCapabilities: the executor gets exactly the
// capabilities the sandbox needs (executor/sandbox/capabilities.go):
// SETUID and SETGID alone start no isolation tier.
func TestComposeExecutorCapabilities(t *testing.T) {
	p, err := loadCompose(t, nil, "", "scaled")
	if err != nil {
		t.Fatal(err)
	}
	s := service(t, p, "executor")
	if !slices.Equal(s.CapDrop, []string{"ALL"}) {
		t.Errorf("cap_drop %v, want [ALL]", s.CapDrop)
	}
	got := slices.Sorted(slices.Values(s.CapAdd))
	if want := []string{"CHOWN", "DAC_OVERRIDE", "SETFCAP", "SETGID", "SETUID"}; !slices.Equal(got, want) {
		t.Errorf("cap_add %v, want %v", got, want)
	}
	if s.User != "0" {
		t.Errorf("user %q, want 0: the snippet's uid is mapped by root in the container", s.User)
	}
	if s.Privileged {
		t.Error("the executor is privileged")
	}
}

// TestComposeHealth: every service's health check asks its own /readyz
// (runblock health) and is checked often while starting; the bot listens
// on an HTTP address so that it has one.
func TestComposeHealth(t *testing.T) {
	p, err := loadCompose(t, nil, filledEnv(t), "scaled")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"runblock", "executor", "bot"} {
		t.Run(name, func(t *testing.T) {
			s := service(t, p, name)
			hc := s.HealthCheck
			if hc == nil || hc.Disable {
				t.Fatal("no health check")
			}
			if !slices.Equal([]string(hc.Test), []string{"CMD", "runblock", "health"}) {
				t.Errorf("health check %q, want [CMD runblock health]", hc.Test)
			}
			if hc.StartPeriod == nil || hc.StartInterval == nil || time.Duration(*hc.StartInterval) > 5*time.Second {
				t.Errorf("health check without a start period checked at most every 5 s: %+v", hc)
			}
			if hc.Timeout == nil || hc.Interval == nil || *hc.Timeout >= *hc.Interval {
				t.Errorf("health check timeout %v not under its interval %v", hc.Timeout, hc.Interval)
			}
			addr := s.Environment["RUNBLOCK_HTTP_ADDR"]
			if name != "runblock" && (addr == nil || !strings.HasPrefix(*addr, ":")) {
				t.Errorf("RUNBLOCK_HTTP_ADDR %v: runblock health has nothing to ask", addr)
			}
			if s.StopGracePeriod == nil || time.Duration(*s.StopGracePeriod) <= config.DefaultDrainTimeout {
				t.Errorf("stop_grace_period %v does not outlast the drain (%v)", s.StopGracePeriod, config.DefaultDrainTimeout)
			}
			if s.StopSignal != "SIGTERM" {
				t.Errorf("stop_signal %q, want SIGTERM (drains)", s.StopSignal)
			}
		})
	}
	bot := service(t, p, "bot")
	if dep, ok := bot.DependsOn["executor"]; !ok || dep.Condition != types.ServiceConditionHealthy {
		t.Errorf("the bot does not wait for healthy executors: %+v", bot.DependsOn)
	}
	if u := bot.Environment["RUNBLOCK_EXECUTOR_URL"]; u == nil || *u != "http://executor:8080" {
		t.Errorf("the bot's RUNBLOCK_EXECUTOR_URL %v, want http://executor:8080", u)
	}
}
