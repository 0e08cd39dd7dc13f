// Package check validates runblock's Kubernetes manifests offline: each
// resource of the kustomization is decoded strictly into its Kubernetes API
// type (an unknown or misspelt field is an error), then held to runblock's
// deployment rules. It is its own module, to keep the Kubernetes modules
// out of runblock's. Run: go -C deploy/kubernetes/check test ./...
package check

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	Envs      []string `json:"envs,omitempty"`
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
	Kustomize    Kustomization
	resourceByID map[string]string // kind/name -> file
}

// Load reads dir's kustomization.yaml and decodes every resource strictly.
func Load(dir string) (*Manifests, error) {
	m := &Manifests{resourceByID: map[string]string{}}
	if err := decodeFile(filepath.Join(dir, "kustomization.yaml"), &m.Kustomize); err != nil {
		return nil, err
	}
	if m.Kustomize.APIVersion != "kustomize.config.k8s.io/v1beta1" || m.Kustomize.Kind != "Kustomization" {
		return nil, fmt.Errorf("kustomization.yaml: apiVersion/kind %s/%s, want kustomize.config.k8s.io/v1beta1 Kustomization", m.Kustomize.APIVersion, m.Kustomize.Kind)
	}
	for _, r := range m.Kustomize.Resources {
		if err := m.load(filepath.Join(dir, r)); err != nil {
			return nil, err
		}
	}
	return m, nil
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
