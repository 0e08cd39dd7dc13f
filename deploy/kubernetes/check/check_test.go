package check

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func load(t *testing.T) *Manifests {
	t.Helper()
	m, err := Load("..")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestStrictDecodingRejectsUnknownFields(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../executor-deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	typo := strings.Replace(string(src), "  replicas: 2", "  replica: 2", 1)
	if typo == string(src) {
		t.Fatal("the executor Deployment has no replicas line to misspell")
	}
	os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [d.yaml]\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "d.yaml"), []byte(typo), 0o644)
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "replica") {
		t.Fatalf("Load = %v, want an unknown field error naming replica", err)
	}
	os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresource: [d.yaml]\n"), 0o644)
	if _, err := Load(dir); err == nil {
		t.Fatal("a misspelt kustomization field was accepted")
	}
}

func container(t *testing.T, d *appsv1.Deployment) corev1.Container {
	t.Helper()
	if len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("%s: %d containers, want 1", d.Name, len(d.Spec.Template.Spec.Containers))
	}
	return d.Spec.Template.Spec.Containers[0]
}

func env(c corev1.Container, name string) (corev1.EnvVar, bool) {
	i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
	if i < 0 {
		return corev1.EnvVar{}, false
	}
	return c.Env[i], true
}

func TestNothingPrivileged(t *testing.T) {
	m := load(t)
	for _, d := range m.Deployments {
		ps := d.Spec.Template.Spec
		if ps.HostNetwork || ps.HostPID || ps.HostIPC {
			t.Errorf("%s shares a host namespace", d.Name)
		}
		for _, c := range ps.Containers {
			sc := c.SecurityContext
			if sc == nil || sc.Privileged == nil || *sc.Privileged {
				t.Errorf("%s/%s: privileged must be set to false", d.Name, c.Name)
				continue
			}
			if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				t.Errorf("%s/%s: allowPrivilegeEscalation must be false", d.Name, c.Name)
			}
			if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
				t.Errorf("%s/%s: capabilities must drop ALL", d.Name, c.Name)
			}
			for _, add := range sc.Capabilities.Add {
				if add != "SETUID" && add != "SETGID" {
					t.Errorf("%s/%s adds capability %s", d.Name, c.Name, add)
				}
			}
		}
	}
}

func TestExecutor(t *testing.T) {
	m := load(t)
	d := m.Deployment("runblock-executor")
	if d == nil {
		t.Fatal("no runblock-executor Deployment")
	}
	c := container(t, d)
	if !slices.Equal(c.Args, []string{"executor"}) {
		t.Errorf("args %q, want [executor]", c.Args)
	}
	ps := d.Spec.Template.Spec
	if ps.HostUsers == nil || *ps.HostUsers {
		t.Error("hostUsers must be false: the container's root is then no root on the node")
	}
	sc := ps.SecurityContext
	if sc == nil || sc.SeccompProfile == nil || (sc.SeccompProfile.Type != corev1.SeccompProfileTypeUnconfined && sc.SeccompProfile.Type != corev1.SeccompProfileTypeLocalhost) {
		t.Error("the executor needs a seccomp profile allowing user namespaces: Unconfined or Localhost")
	}
	if sc == nil || sc.AppArmorProfile == nil {
		t.Error("the executor sets no AppArmor profile")
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Error("readiness must be on /readyz (the canary and the drain)")
	}
	if c.Resources.Limits.Memory().IsZero() || c.Resources.Requests.Cpu().IsZero() {
		t.Error("the executor needs a memory limit and a CPU request")
	}
	tok, ok := env(c, "RUNBLOCK_API_TOKEN")
	if !ok || tok.ValueFrom == nil || tok.ValueFrom.SecretKeyRef == nil {
		t.Error("RUNBLOCK_API_TOKEN must come from the Secret")
	}
	if addr, _ := env(c, "RUNBLOCK_HTTP_ADDR"); addr.Value != ":8080" {
		t.Errorf("RUNBLOCK_HTTP_ADDR %q, want :8080", addr.Value)
	}

	sel := labels.SelectorFromSet(d.Spec.Selector.MatchLabels)
	if !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Error("the executor's selector does not match its pods")
	}
	var svc *corev1.Service
	for _, s := range m.Services {
		if s.Name == "runblock-executor" {
			svc = s
		}
	}
	if svc == nil || svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Fatal("no headless runblock-executor Service")
	}
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Error("the Service does not select the executor pods")
	}
	if len(m.Budgets) != 1 || m.Budgets[0].Spec.Selector == nil || !labels.SelectorFromSet(m.Budgets[0].Spec.Selector.MatchLabels).Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Error("no PodDisruptionBudget covering the executors")
	}
	if len(m.Autoscalers) != 1 || m.Autoscalers[0].Spec.ScaleTargetRef.Name != d.Name || m.Autoscalers[0].Spec.ScaleTargetRef.Kind != "Deployment" {
		t.Error("no HorizontalPodAutoscaler scaling the executor Deployment")
	}
}

func TestBot(t *testing.T) {
	m := load(t)
	d := m.Deployment("runblock-bot")
	if d == nil {
		t.Fatal("no runblock-bot Deployment")
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Error("the bot must be one replica with the Recreate strategy")
	}
	c := container(t, d)
	u, ok := env(c, "RUNBLOCK_EXECUTOR_URL")
	if !ok || u.Value != "http://runblock-executor:8080" {
		t.Errorf("RUNBLOCK_EXECUTOR_URL %q, want the executor Service", u.Value)
	}
	secrets := map[string]*corev1.Secret{}
	for _, s := range m.Secrets {
		secrets[s.Name] = s
	}
	for _, from := range c.EnvFrom {
		if from.SecretRef == nil || secrets[from.SecretRef.Name] == nil {
			t.Errorf("the bot reads a Secret the kustomization does not define: %+v", from)
		}
	}
	s := secrets["runblock"]
	if s == nil {
		t.Fatal("no runblock Secret")
	}
	for _, key := range []string{"RUNBLOCK_API_TOKEN", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "DISCORD_BOT_TOKEN"} {
		if _, ok := s.StringData[key]; !ok {
			t.Errorf("the Secret lacks %s", key)
		}
	}
}
