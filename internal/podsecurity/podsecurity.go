// Package podsecurity checks a pod spec against what every OpenAAA pod must keep
// (docs/security.md): non-root, read-only root filesystem, no privilege escalation, seccomp
// RuntimeDefault, every capability dropped. The operator's builders and the charts' rendered
// templates are tested with it, so a new pod cannot quietly lose one.
package podsecurity

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Check returns one line per container setting that falls short; none when the pod is fine.
// A pod-level runAsNonRoot or seccompProfile counts for containers that do not override it.
func Check(spec corev1.PodSpec) []string {
	var out []string
	pod := spec.SecurityContext
	if pod == nil {
		pod = &corev1.PodSecurityContext{}
	}
	containers := append(slices.Clone(spec.InitContainers), spec.Containers...)
	if len(containers) == 0 {
		return []string{"no containers"}
	}
	for _, c := range containers {
		sc := c.SecurityContext
		if sc == nil {
			sc = &corev1.SecurityContext{}
		}
		bad := func(format string, a ...any) { out = append(out, c.Name+": "+fmt.Sprintf(format, a...)) }
		nonRoot := pod.RunAsNonRoot
		if sc.RunAsNonRoot != nil {
			nonRoot = sc.RunAsNonRoot
		}
		if nonRoot == nil || !*nonRoot {
			bad("runAsNonRoot is not true")
		}
		if uid := firstSet(sc.RunAsUser, pod.RunAsUser); uid != nil && *uid == 0 {
			bad("runs as uid 0")
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			bad("readOnlyRootFilesystem is not true")
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			bad("allowPrivilegeEscalation is not false")
		}
		if sc.Privileged != nil && *sc.Privileged {
			bad("privileged")
		}
		seccomp := pod.SeccompProfile
		if sc.SeccompProfile != nil {
			seccomp = sc.SeccompProfile
		}
		if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
			bad("seccompProfile is not RuntimeDefault")
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			bad("capabilities do not drop ALL")
		} else if len(sc.Capabilities.Add) > 0 {
			bad("capabilities add %v", sc.Capabilities.Add)
		}
	}
	return out
}

func firstSet(v ...*int64) *int64 {
	for _, x := range v {
		if x != nil {
			return x
		}
	}
	return nil
}
