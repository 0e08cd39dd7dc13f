package check

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func load(t *testing.T) *Manifests {
	t.Helper()
	return loadDir(t, "..")
}

func loadDir(t *testing.T, dir string) *Manifests {
	t.Helper()
	m, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// kustomizations are the base and the overlays an operator applies: the
// rules every deployment keeps hold for each.
var kustomizations = []string{"..", "../../kubernetes-postgres"}

// eachKustomization runs f on each of kustomizations, loaded.
func eachKustomization(t *testing.T, f func(t *testing.T, dir string, m *Manifests)) {
	for _, dir := range kustomizations {
		t.Run(filepath.Base(filepath.Clean(dir)), func(t *testing.T) { f(t, dir, loadDir(t, dir)) })
	}
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

// sandboxCapabilities are what a root executor needs, sorted
// (executor/sandbox/capabilities.go): SETUID, SETGID and SETFCAP for the
// namespace tiers (a uid map with uid 0 needs SETFCAP since Linux 5.12),
// CHOWN and DAC_OVERRIDE for the reduced tiers. SETUID and SETGID alone
// start no tier at all.
var sandboxCapabilities = []corev1.Capability{"CHOWN", "DAC_OVERRIDE", "SETFCAP", "SETGID", "SETUID"}

func TestNothingPrivileged(t *testing.T) {
	eachKustomization(t, nothingPrivileged)
}

func nothingPrivileged(t *testing.T, _ string, m *Manifests) {
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
			var want []corev1.Capability // the bot: none
			if d.Name == "runblock-executor" {
				want = sandboxCapabilities
			}
			if got := slices.Sorted(slices.Values(sc.Capabilities.Add)); !slices.Equal(got, want) {
				t.Errorf("%s/%s adds capabilities %v, want %v", d.Name, c.Name, got, want)
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
	u, _ := env(c, "RUNBLOCK_EXECUTOR_URL")
	ns := m.Deployment("runblock-executor").Namespace
	if want := "http://runblock-executor." + ns + ".svc:8080"; u.Value != want {
		t.Errorf("RUNBLOCK_EXECUTOR_URL %q, want the executor Service in its namespace, %s", u.Value, want)
	}
}

// TestNamespaces: every resource is in a Namespace of the kustomization
// whose Pod Security label enforces exactly the level its pods need: the
// bot restricted, the executors what their securityContext needs.
func TestNamespaces(t *testing.T) {
	eachKustomization(t, namespaces)
}

func namespaces(t *testing.T, _ string, m *Manifests) {
	for _, d := range m.Deployments {
		n := m.Namespace(d.Namespace)
		if n == nil {
			t.Errorf("%s is in namespace %q, which the kustomization does not define", d.Name, d.Namespace)
			continue
		}
		need := PodSecurityLevel(d.Spec.Template.Spec)
		if got := n.Labels["pod-security.kubernetes.io/enforce"]; got != need {
			t.Errorf("namespace %s enforces Pod Security %q, its %s pods need %q", n.Name, got, d.Name, need)
		}
	}
	if d := m.Deployment("runblock-bot"); d == nil || PodSecurityLevel(d.Spec.Template.Spec) != Restricted {
		t.Error("the bot must meet the restricted level")
	}
	if bot, ex := m.Deployment("runblock-bot"), m.Deployment("runblock-executor"); bot != nil && ex != nil && bot.Namespace == ex.Namespace {
		t.Error("the bot and the executors need namespaces of their own: the executors' must be privileged")
	}
	ex := m.Deployment("runblock-executor")
	for _, obj := range []metav1.Object{firstService(m), m.Budgets[0], m.Autoscalers[0]} {
		if ex != nil && obj.GetNamespace() != ex.Namespace {
			t.Errorf("%s is in namespace %q, not the executors' %q", obj.GetName(), obj.GetNamespace(), ex.Namespace)
		}
	}
}

func firstService(m *Manifests) *corev1.Service {
	if len(m.Services) == 0 {
		return &corev1.Service{}
	}
	return m.Services[0]
}

// TestPodSecurityLevel holds the level function to the standard's
// examples, so that TestNamespaces cannot pass by a level function that
// always agrees.
func TestPodSecurityLevel(t *testing.T) {
	yes, no := true, false
	unmasked := corev1.UnmaskedProcMount
	restrictedPod := func() corev1.PodSpec {
		return corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: &no, Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}},
		}
	}
	for _, tc := range []struct {
		name   string
		change func(*corev1.PodSpec)
		want   string
	}{
		{"restricted", func(*corev1.PodSpec) {}, Restricted},
		{"adds NET_BIND_SERVICE", func(p *corev1.PodSpec) {
			p.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"NET_BIND_SERVICE"}
		}, Restricted},
		{"adds SETUID", func(p *corev1.PodSpec) {
			p.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"SETUID"}
		}, Baseline},
		{"may escalate", func(p *corev1.PodSpec) { p.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil }, Baseline},
		{"root", func(p *corev1.PodSpec) { p.SecurityContext.RunAsNonRoot = nil }, Baseline},
		{"adds SYS_ADMIN", func(p *corev1.PodSpec) {
			p.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"}
		}, Privileged},
		{"unconfined seccomp", func(p *corev1.PodSpec) {
			p.SecurityContext.SeccompProfile.Type = corev1.SeccompProfileTypeUnconfined
		}, Privileged},
		{"unmasked /proc", func(p *corev1.PodSpec) { p.Containers[0].SecurityContext.ProcMount = &unmasked }, Privileged},
		{"host PID", func(p *corev1.PodSpec) { p.HostPID = true }, Privileged},
		{"privileged", func(p *corev1.PodSpec) { p.Containers[0].SecurityContext.Privileged = &yes }, Privileged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := restrictedPod()
			tc.change(&p)
			if got := PodSecurityLevel(p); got != tc.want {
				t.Errorf("level %q, want %q", got, tc.want)
			}
		})
	}
}

// TestSecrets: the tokens come from files the operator writes (git ignores
// them), generated per namespace; no Secret in the kustomization carries
// an empty value that `kubectl apply` would write over the operator's.
func TestSecrets(t *testing.T) {
	eachKustomization(t, secrets)
}

func secrets(t *testing.T, dir string, m *Manifests) {
	for _, s := range m.Secrets {
		for k, v := range s.StringData {
			if v == "" {
				t.Errorf("Secret %s has an empty %s: applying it overwrites the operator's token", s.Name, k)
			}
		}
		for k, v := range s.Data {
			if len(v) == 0 {
				t.Errorf("Secret %s has an empty %s: applying it overwrites the operator's token", s.Name, k)
			}
		}
	}
	generated := map[string]SecretGenerator{} // namespace/name
	for _, g := range m.Kustomize.SecretGenerator {
		generated[g.Namespace+"/"+g.Name] = g
		for _, lit := range g.Literals {
			if k, v, _ := strings.Cut(lit, "="); v == "" {
				t.Errorf("secretGenerator %s has an empty literal %s", g.Name, k)
			}
		}
		for _, f := range slices.Concat(g.Envs, g.Files) {
			ignore, err := os.ReadFile(filepath.Join(dir, filepath.Dir(f), ".gitignore"))
			if err != nil {
				t.Errorf("no .gitignore beside %s to keep the token files out of git: %v", f, err)
			}
			if ok, _ := filepath.Match("*.env", filepath.Base(f)); !ok || !slices.Contains(strings.Split(string(ignore), "\n"), "*.env") {
				t.Errorf("secretGenerator %s reads %s, which .gitignore does not keep out of git", g.Name, f)
			}
		}
	}
	keys := func(g SecretGenerator) []string {
		var out []string
		for _, f := range g.Envs {
			b, err := os.ReadFile(filepath.Join(dir, f+".example"))
			if err != nil {
				t.Errorf("secretGenerator %s reads %s with no %s.example beside it to show the operator what to write: %v", g.Name, f, f, err)
				continue
			}
			for _, line := range strings.Split(string(b), "\n") {
				if k, _, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(k, "#") {
					out = append(out, k)
				}
			}
		}
		return out
	}
	for _, d := range m.Deployments {
		c := container(t, d)
		for _, from := range c.EnvFrom {
			if from.SecretRef == nil {
				continue
			}
			if _, ok := generated[d.Namespace+"/"+from.SecretRef.Name]; !ok {
				t.Errorf("%s reads Secret %s, which no secretGenerator makes in namespace %s", d.Name, from.SecretRef.Name, d.Namespace)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				continue
			}
			g, ok := generated[d.Namespace+"/"+e.ValueFrom.SecretKeyRef.Name]
			if !ok {
				t.Errorf("%s reads Secret %s, which no secretGenerator makes in namespace %s", d.Name, e.ValueFrom.SecretKeyRef.Name, d.Namespace)
				continue
			}
			if !slices.Contains(keys(g), e.ValueFrom.SecretKeyRef.Key) {
				t.Errorf("%s reads %s from Secret %s, whose files %v do not hold it", d.Name, e.ValueFrom.SecretKeyRef.Key, g.Name, g.Envs)
			}
		}
	}
	bot := m.Deployment("runblock-bot")
	if bot == nil {
		t.Fatal("no bot")
	}
	g := generated[bot.Namespace+"/runblock"]
	for _, key := range []string{"RUNBLOCK_API_TOKEN", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "DISCORD_BOT_TOKEN"} {
		if !slices.Contains(keys(g), key) {
			t.Errorf("the bot's Secret does not carry %s", key)
		}
	}
}

// TestImage: every container runs the image the kustomization's images
// override names, which the operator builds and pushes: runblock
// publishes none, so the override must not point at a public name as if
// it did.
func TestImage(t *testing.T) {
	eachKustomization(t, image)
}

func image(t *testing.T, _ string, m *Manifests) {
	i := slices.IndexFunc(m.Kustomize.Images, func(i KustomizeImage) bool { return i.Name == "runblock" })
	if i < 0 {
		t.Fatal("no images: override for runblock")
	}
	img := m.Kustomize.Images[i]
	if img.NewName == "" || strings.HasPrefix(img.NewName, "ghcr.io/runblock/") || strings.HasPrefix(img.NewName, "docker.io/") {
		t.Errorf("images: newName %q: want the operator's registry (a placeholder until set)", img.NewName)
	}
	if img.Digest == "" && (img.NewTag == "" || img.NewTag == "latest") {
		t.Errorf("images: newTag %q: want a fixed tag or a digest", img.NewTag)
	}
	for _, d := range m.Deployments {
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Image != img.Name {
				t.Errorf("%s/%s runs %q, which the images override does not rewrite", d.Name, c.Name, c.Image)
			}
		}
	}
}

// TestExecutorMemoryAddsUp: the executor's memory limit holds its runs,
// its live sessions and the service (ExecutorMemory); a Deployment whose
// settings outgrow its limit is refused.
func TestExecutorMemoryAddsUp(t *testing.T) {
	d := load(t).Deployment("runblock-executor")
	if err := ExecutorMemory(d); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("../executor-deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, from, to, want string
	}{
		{"the old 1Gi limit", "memory: 1536Mi", "memory: 1Gi", "memory limit 1024 MiB is below RUNBLOCK_CONCURRENCY 2 x RUNBLOCK_MEMORY 256 MiB + RUNBLOCK_SESSION_MEMORY 768 MiB + the service 256 MiB = 1536 MiB"},
		{"more runs at once", `value: "2"` + "\n            - name: RUNBLOCK_POOL", `value: "4"` + "\n            - name: RUNBLOCK_POOL", "RUNBLOCK_CONCURRENCY 4"},
		{"the default session memory", "- name: RUNBLOCK_SESSION_MEMORY\n              value: \"768MiB\"", "- name: RUNBLOCK_SESSIONS\n              value: \"on\"", "RUNBLOCK_SESSION_MEMORY 1024 MiB"},
		{"concurrency unset", "- name: RUNBLOCK_CONCURRENCY\n              value: \"2\"", "- name: RUNBLOCK_PRELOAD\n              value: auto", "RUNBLOCK_CONCURRENCY is unset"},
		{"a size it cannot read", `value: "256MiB"`, `value: "lots"`, `RUNBLOCK_MEMORY="lots"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bad := strings.Replace(string(src), tt.from, tt.to, 1)
			if bad == string(src) {
				t.Fatalf("the executor Deployment has no %q to change", tt.from)
			}
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [d.yaml]\n"), 0o644)
			os.WriteFile(filepath.Join(dir, "d.yaml"), []byte(bad), 0o644)
			m, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := ExecutorMemory(m.Deployment("runblock-executor")); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ExecutorMemory = %v, want an error saying %q", err, tt.want)
			}
		})
	}
	sessionsOff := strings.Replace(string(src), "memory: 1536Mi", "memory: 768Mi", 1)
	sessionsOff = strings.Replace(sessionsOff, "- name: RUNBLOCK_SESSION_MEMORY\n              value: \"768MiB\"", "- name: RUNBLOCK_SESSIONS\n              value: \"off\"", 1)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [d.yaml]\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "d.yaml"), []byte(sessionsOff), 0o644)
	m, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := ExecutorMemory(m.Deployment("runblock-executor")); err != nil {
		t.Errorf("with sessions off, 2 x 256 MiB + 256 MiB fits 768Mi: %v", err)
	}
}

// TestBotStore: the bot's store, the default sqlite:runblock.db in the
// image's working directory, is on a volume the bot can write, claimed in
// its namespace; one replica writes it.
func TestBotStore(t *testing.T) {
	m := load(t)
	d := m.Deployment("runblock-bot")
	c := container(t, d)
	if _, set := env(c, "RUNBLOCK_STORE"); set {
		t.Error("the base sets RUNBLOCK_STORE: it keeps the default in the working directory, on the volume")
	}
	workdir := imageWorkdir(t)
	i := slices.IndexFunc(c.VolumeMounts, func(v corev1.VolumeMount) bool { return v.MountPath == workdir })
	if i < 0 {
		t.Fatalf("no volume at the image's working directory %s, where sqlite:runblock.db is written", workdir)
	}
	vi := slices.IndexFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == c.VolumeMounts[i].Name })
	if vi < 0 || d.Spec.Template.Spec.Volumes[vi].PersistentVolumeClaim == nil {
		t.Fatalf("the volume at %s is no PersistentVolumeClaim: the store would go with the pod", workdir)
	}
	claim := d.Spec.Template.Spec.Volumes[vi].PersistentVolumeClaim.ClaimName
	if j := slices.IndexFunc(m.Claims, func(p *corev1.PersistentVolumeClaim) bool { return p.Name == claim && p.Namespace == d.Namespace }); j < 0 {
		t.Errorf("no PersistentVolumeClaim %s in namespace %s", claim, d.Namespace)
	}
	sc := d.Spec.Template.Spec.SecurityContext
	if sc == nil || sc.FSGroup == nil || sc.RunAsGroup == nil || *sc.FSGroup != *sc.RunAsGroup {
		t.Error("the bot's fsGroup must be its group, or it cannot write the volume")
	}
}

// imageWorkdir is the Dockerfile's last WORKDIR: the image's working
// directory.
func imageWorkdir(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	dir := ""
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "WORKDIR "); ok {
			dir = strings.TrimSpace(rest)
		}
	}
	if dir == "" {
		t.Fatal("the Dockerfile has no WORKDIR")
	}
	return dir
}

// TestPostgresOverlay: the overlay for several bot replicas puts the
// store on PostgreSQL, its URL from a Secret it generates, and drops the
// SQLite volume and its claim.
func TestPostgresOverlay(t *testing.T) {
	m := loadDir(t, "../../kubernetes-postgres")
	d := m.Deployment("runblock-bot")
	if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 || d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		t.Error("the overlay's bot must be several replicas that roll")
	}
	c := container(t, d)
	store, _ := env(c, "RUNBLOCK_STORE")
	if store.ValueFrom == nil || store.ValueFrom.SecretKeyRef == nil || store.ValueFrom.SecretKeyRef.Name != "runblock-store" {
		t.Errorf("RUNBLOCK_STORE %+v, want it from the Secret runblock-store", store)
	}
	if len(m.Claims) != 0 || len(d.Spec.Template.Spec.Volumes) != 0 || len(c.VolumeMounts) != 0 {
		t.Errorf("the overlay keeps the SQLite volume: claims %d, volumes %v, mounts %v", len(m.Claims), d.Spec.Template.Spec.Volumes, c.VolumeMounts)
	}
	b, err := os.ReadFile("../../kubernetes-postgres/store.env.example")
	if err != nil || !strings.Contains(string(b), "RUNBLOCK_STORE=postgres://") {
		t.Errorf("store.env.example does not show a PostgreSQL RUNBLOCK_STORE: %v", err)
	}
}

// TestPatchesApply: Load applies an overlay's patches as kustomize does,
// and refuses one that names no resource, so that TestPostgresOverlay
// checks what kubectl applies.
func TestPatchesApply(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	abs, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	base, err := filepath.Rel(dir, abs)
	if err != nil {
		t.Fatal(err)
	}
	write("kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: ["+base+"]\npatches:\n  - path: p.yaml\n")
	write("p.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: runblock-executor\n  namespace: runblock-executor\nspec:\n  replicas: 5\n")
	m := loadDir(t, dir)
	if d := m.Deployment("runblock-executor"); *d.Spec.Replicas != 5 || len(d.Spec.Template.Spec.Containers) != 1 {
		t.Errorf("patched executor: %d replicas, %d containers; want 5 and its container kept", *d.Spec.Replicas, len(d.Spec.Template.Spec.Containers))
	}
	write("p.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: runblock-nothing\nspec:\n  replicas: 5\n")
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "runblock-nothing") {
		t.Errorf("Load = %v, want an error naming the missing resource", err)
	}
	write("p.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: runblock-executor\nspec:\n  replica: 5\n")
	if _, err := Load(dir); err == nil {
		t.Error("a patch with a misspelt field was accepted")
	}
}

// TestOnlyTheBotReachesTheExecutors: one NetworkPolicy selects the
// executor pods and admits, on their HTTP port, the bot's pods in the
// bot's namespace and nothing else.
func TestOnlyTheBotReachesTheExecutors(t *testing.T) {
	m := load(t)
	ex, bot := m.Deployment("runblock-executor"), m.Deployment("runblock-bot")
	var np *networkingv1.NetworkPolicy
	for _, p := range m.Policies {
		if p.Namespace == ex.Namespace && labels.SelectorFromSet(p.Spec.PodSelector.MatchLabels).Matches(labels.Set(ex.Spec.Template.Labels)) {
			np = p
		}
	}
	if np == nil {
		t.Fatal("no NetworkPolicy selects the executor pods")
	}
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) || len(np.Spec.Ingress) != 1 {
		t.Fatalf("policy types %v, %d ingress rules: want Ingress and one rule", np.Spec.PolicyTypes, len(np.Spec.Ingress))
	}
	rule := np.Spec.Ingress[0]
	if len(rule.From) != 1 {
		t.Fatalf("%d peers, want the bot alone", len(rule.From))
	}
	peer := rule.From[0]
	if peer.NamespaceSelector == nil || peer.PodSelector == nil || peer.IPBlock != nil {
		t.Fatal("the peer must select both the bot's namespace and its pods")
	}
	botNS := labels.Set{"kubernetes.io/metadata.name": bot.Namespace}
	if !labels.SelectorFromSet(peer.NamespaceSelector.MatchLabels).Matches(botNS) || labels.SelectorFromSet(peer.NamespaceSelector.MatchLabels).Matches(labels.Set{"kubernetes.io/metadata.name": "default"}) {
		t.Error("the namespace selector must match the bot's namespace alone")
	}
	if !labels.SelectorFromSet(peer.PodSelector.MatchLabels).Matches(labels.Set(bot.Spec.Template.Labels)) || len(peer.PodSelector.MatchLabels) == 0 {
		t.Error("the pod selector must match the bot's pods")
	}
	if len(rule.Ports) != 1 || rule.Ports[0].Port == nil || rule.Ports[0].Port.String() != container(t, ex).Ports[0].Name {
		t.Errorf("ports %v, want the executor's HTTP port alone", rule.Ports)
	}
}
