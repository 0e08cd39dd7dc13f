package check

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Pod Security Standards levels, loosest last.
const (
	Restricted = "restricted"
	Baseline   = "baseline"
	Privileged = "privileged"
)

// baselineCapabilities are the capabilities the baseline level lets a
// container add.
var baselineCapabilities = []corev1.Capability{"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
	"NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}

// PodSecurityLevel is the strictest Pod Security Standards level that
// admits a pod of spec: the rules of
// https://kubernetes.io/docs/concepts/security/pod-security-standards/
// that runblock's pods touch (host namespaces and ports, privileged,
// capabilities, hostPath, /proc mount, seccomp and AppArmor profiles,
// non-root, privilege escalation, volume types).
func PodSecurityLevel(spec corev1.PodSpec) string {
	if !baseline(spec) {
		return Privileged
	}
	if !restricted(spec) {
		return Baseline
	}
	return Restricted
}

func baseline(spec corev1.PodSpec) bool {
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		return false
	}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			return false
		}
	}
	psc := spec.SecurityContext
	if psc != nil && (psc.SeccompProfile != nil && psc.SeccompProfile.Type == corev1.SeccompProfileTypeUnconfined ||
		psc.AppArmorProfile != nil && psc.AppArmorProfile.Type == corev1.AppArmorProfileTypeUnconfined) {
		return false
	}
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				return false
			}
		}
		sc := c.SecurityContext
		if sc == nil {
			continue
		}
		if sc.Privileged != nil && *sc.Privileged ||
			sc.ProcMount != nil && *sc.ProcMount != corev1.DefaultProcMount ||
			sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeUnconfined ||
			sc.AppArmorProfile != nil && sc.AppArmorProfile.Type == corev1.AppArmorProfileTypeUnconfined {
			return false
		}
		if sc.Capabilities != nil {
			for _, add := range sc.Capabilities.Add {
				if !slices.Contains(baselineCapabilities, add) {
					return false
				}
			}
		}
	}
	return true
}

func restricted(spec corev1.PodSpec) bool {
	for _, v := range spec.Volumes {
		if v.ConfigMap == nil && v.CSI == nil && v.DownwardAPI == nil && v.EmptyDir == nil && v.Ephemeral == nil &&
			v.PersistentVolumeClaim == nil && v.Projected == nil && v.Secret == nil {
			return false
		}
	}
	psc := spec.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		sc := c.SecurityContext
		if sc == nil {
			return false
		}
		nonRoot := sc.RunAsNonRoot != nil && *sc.RunAsNonRoot || sc.RunAsNonRoot == nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot
		root := sc.RunAsUser != nil && *sc.RunAsUser == 0 || sc.RunAsUser == nil && psc.RunAsUser != nil && *psc.RunAsUser == 0
		seccomp := sc.SeccompProfile
		if seccomp == nil {
			seccomp = psc.SeccompProfile
		}
		if !nonRoot || root || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			seccomp == nil || (seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault && seccomp.Type != corev1.SeccompProfileTypeLocalhost) ||
			sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			return false
		}
		for _, add := range sc.Capabilities.Add {
			if add != "NET_BIND_SERVICE" {
				return false
			}
		}
	}
	return true
}
