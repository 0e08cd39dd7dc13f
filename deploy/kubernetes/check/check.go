// Package check validates runblock's Kubernetes manifests offline: each
// resource of the kustomization, or of an overlay on it (a directory among
// its resources, and strategic-merge patches), is decoded strictly into its
// Kubernetes API type (an unknown or misspelt field is an error), then held
// to runblock's deployment rules. It is its own module, to keep the
// Kubernetes modules out of runblock's. Run:
// go -C deploy/kubernetes/check test ./...
package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/yaml"
)

// Kustomization is the part of kustomize's Kustomization that runblock
// uses; anything else in the file is an error, so that a typo cannot go
// unnoticed.
type Kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Labels     []struct {
		Pairs            map[string]string `json:"pairs"`
		IncludeSelectors bool              `json:"includeSelectors,omitempty"`
	} `json:"labels,omitempty"`
	Images          []KustomizeImage  `json:"images,omitempty"`
	Namespace       string            `json:"namespace,omitempty"`
	SecretGenerator []SecretGenerator `json:"secretGenerator,omitempty"`
	// Patches are strategic-merge patches, each a file naming the
	// resource it changes, or deletes with "$patch: delete".
	Patches []struct {
		Path string `json:"path"`
	} `json:"patches,omitempty"`
}

// KustomizeImage is an images: override.
type KustomizeImage struct {
	Name    string `json:"name"`
	NewName string `json:"newName,omitempty"`
	NewTag  string `json:"newTag,omitempty"`
	Digest  string `json:"digest,omitempty"`
}

// SecretGenerator is a kustomize secretGenerator: a Secret made from env
// files (or literals) when the kustomization is built.
type SecretGenerator struct {
	Name      string   `json:"name"`
	Namespace string   `json:"namespace,omitempty"`
	Envs      []string `json:"envs,omitempty"` // Load makes them relative to the loaded directory
	Files     []string `json:"files,omitempty"`
	Literals  []string `json:"literals,omitempty"`
	Type      string   `json:"type,omitempty"`
}

// Manifests are the decoded resources of a kustomization.
type Manifests struct {
	Namespaces   []*corev1.Namespace
	Deployments  []*appsv1.Deployment
	Services     []*corev1.Service
	Secrets      []*corev1.Secret
	Budgets      []*policyv1.PodDisruptionBudget
	Autoscalers  []*autoscalingv2.HorizontalPodAutoscaler
	Policies     []*networkingv1.NetworkPolicy
	Claims       []*corev1.PersistentVolumeClaim
	Kustomize    Kustomization     // an overlay's with its bases' generators and images
	resourceByID map[string]string // kind/name -> file
}

// Load reads dir's kustomization.yaml and decodes every resource strictly:
// a directory among its resources is a base, loaded the same way, and its
// patches are applied as kustomize applies them.
func Load(dir string) (*Manifests, error) {
	m := &Manifests{resourceByID: map[string]string{}}
	if err := decodeFile(filepath.Join(dir, "kustomization.yaml"), &m.Kustomize); err != nil {
		return nil, err
	}
	if m.Kustomize.APIVersion != "kustomize.config.k8s.io/v1beta1" || m.Kustomize.Kind != "Kustomization" {
		return nil, fmt.Errorf("kustomization.yaml: apiVersion/kind %s/%s, want kustomize.config.k8s.io/v1beta1 Kustomization", m.Kustomize.APIVersion, m.Kustomize.Kind)
	}
	for _, r := range m.Kustomize.Resources {
		path := filepath.Join(dir, r)
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			if err := m.loadBase(path, r); err != nil {
				return nil, err
			}
			continue
		}
		if err := m.load(path); err != nil {
			return nil, err
		}
	}
	for _, p := range m.Kustomize.Patches {
		if err := m.patch(filepath.Join(dir, p.Path)); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// loadBase adds the resources of the base at path (rel from the overlay),
// its secret generators (their files made relative to the overlay) and its
// images.
func (m *Manifests) loadBase(path, rel string) error {
	base, err := Load(path)
	if err != nil {
		return err
	}
	for id, file := range base.resourceByID {
		if prev, ok := m.resourceByID[id]; ok {
			return fmt.Errorf("%s: %s is also defined in %s", file, id, prev)
		}
		m.resourceByID[id] = file
	}
	m.Namespaces = append(m.Namespaces, base.Namespaces...)
	m.Deployments = append(m.Deployments, base.Deployments...)
	m.Services = append(m.Services, base.Services...)
	m.Secrets = append(m.Secrets, base.Secrets...)
	m.Budgets = append(m.Budgets, base.Budgets...)
	m.Autoscalers = append(m.Autoscalers, base.Autoscalers...)
	m.Policies = append(m.Policies, base.Policies...)
	m.Claims = append(m.Claims, base.Claims...)
	for _, g := range base.Kustomize.SecretGenerator {
		for i, f := range g.Envs {
			g.Envs[i] = filepath.Join(rel, f)
		}
		m.Kustomize.SecretGenerator = append(m.Kustomize.SecretGenerator, g)
	}
	m.Kustomize.Images = append(m.Kustomize.Images, base.Kustomize.Images...)
	return nil
}

// patch applies the strategic-merge patch at path to the resource it
// names, or removes that resource when the patch says "$patch: delete".
func (m *Manifests) patch(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var head struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata"`
		Patch             string `json:"$patch"`
	}
	if err := yaml.Unmarshal(b, &head); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	id := head.Kind + "/" + head.Name
	obj, remove := m.find(head.APIVersion+" "+head.Kind, head.Name)
	if obj == nil {
		return fmt.Errorf("%s: patches %s %s, which the kustomization does not define", path, head.APIVersion, id)
	}
	if head.Patch == "delete" {
		remove()
		delete(m.resourceByID, id)
		return nil
	}
	orig, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	patch, err := yaml.YAMLToJSON(b)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	merged, err := strategicpatch.StrategicMergePatch(orig, patch, obj)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := yaml.UnmarshalStrict(merged, obj); err != nil {
		return fmt.Errorf("%s, applied: %w", path, err)
	}
	return nil
}

// find returns the resource of the kind ("apiVersion Kind") named name,
// and a function that removes it; nil when there is none.
func (m *Manifests) find(kind, name string) (any, func()) {
	switch kind {
	case "v1 Namespace":
		return findIn(&m.Namespaces, name)
	case "apps/v1 Deployment":
		return findIn(&m.Deployments, name)
	case "v1 Service":
		return findIn(&m.Services, name)
	case "v1 Secret":
		return findIn(&m.Secrets, name)
	case "policy/v1 PodDisruptionBudget":
		return findIn(&m.Budgets, name)
	case "autoscaling/v2 HorizontalPodAutoscaler":
		return findIn(&m.Autoscalers, name)
	case "networking.k8s.io/v1 NetworkPolicy":
		return findIn(&m.Policies, name)
	case "v1 PersistentVolumeClaim":
		return findIn(&m.Claims, name)
	}
	return nil, nil
}

// findIn returns the object of list named name and a function that
// removes it from list; nil when there is none.
func findIn[T any, PT interface {
	*T
	GetName() string
}](list *[]PT, name string) (any, func()) {
	i := slices.IndexFunc(*list, func(o PT) bool { return o.GetName() == name })
	if i < 0 {
		return nil, nil
	}
	return (*list)[i], func() { *list = slices.Delete(*list, i, i+1) }
}

func (m *Manifests) load(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for i, doc := range bytes.Split(b, []byte("\n---")) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return fmt.Errorf("%s (document %d): %w", path, i+1, err)
		}
		var obj interface{ GetName() string }
		switch tm.APIVersion + " " + tm.Kind {
		case "v1 Namespace":
			obj = appendNew(&m.Namespaces)
		case "apps/v1 Deployment":
			obj = appendNew(&m.Deployments)
		case "v1 Service":
			obj = appendNew(&m.Services)
		case "v1 Secret":
			obj = appendNew(&m.Secrets)
		case "policy/v1 PodDisruptionBudget":
			obj = appendNew(&m.Budgets)
		case "autoscaling/v2 HorizontalPodAutoscaler":
			obj = appendNew(&m.Autoscalers)
		case "networking.k8s.io/v1 NetworkPolicy":
			obj = appendNew(&m.Policies)
		case "v1 PersistentVolumeClaim":
			obj = appendNew(&m.Claims)
		default:
			return fmt.Errorf("%s (document %d): %s %s is not a kind runblock deploys", path, i+1, tm.APIVersion, tm.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return fmt.Errorf("%s (document %d): %w", path, i+1, err)
		}
		id := tm.Kind + "/" + obj.GetName()
		if prev, ok := m.resourceByID[id]; ok {
			return fmt.Errorf("%s: %s is also defined in %s", path, id, prev)
		}
		m.resourceByID[id] = path
	}
	return nil
}

func decodeFile(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.UnmarshalStrict(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Namespace returns the Namespace named name, or nil.
func (m *Manifests) Namespace(name string) *corev1.Namespace {
	i := slices.IndexFunc(m.Namespaces, func(n *corev1.Namespace) bool { return n.Name == name })
	if i < 0 {
		return nil
	}
	return m.Namespaces[i]
}

// Deployment returns the Deployment named name, or nil.
func (m *Manifests) Deployment(name string) *appsv1.Deployment {
	i := slices.IndexFunc(m.Deployments, func(d *appsv1.Deployment) bool { return d.Name == name })
	if i < 0 {
		return nil
	}
	return m.Deployments[i]
}

// appendNew appends a new zero T to list, for the document to fill in.
func appendNew[T any](list *[]*T) *T {
	v := new(T)
	*list = append(*list, v)
	return v
}
