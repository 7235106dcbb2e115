package controllers

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
)

// TestLuaPolicyConfigMap: spec.policy.lua mounts the script's ConfigMap as a directory and
// names the file in policing.yaml; a change of the script rolls no pod (policing reloads
// it), while a change of the Lua settings in the spec does.
func TestLuaPolicyConfigMap(t *testing.T) {
	te := sharedEnv(t)
	ns := te.newNamespace(t, "lua")
	script := &corev1.ConfigMap{ObjectMeta: objKey(ns, "policy"), Data: map[string]string{"policy.lua": "x = 1\n"}}
	if err := te.c.Create(bg, script); err != nil {
		t.Fatal(err)
	}
	te.migratedCluster(t, ns, "lua", func(c *aaav1.AAACluster) {
		c.Spec.Policy = &aaav1.PolicySpec{Lua: &aaav1.LuaPolicySpec{ConfigMap: aaav1.ConfigMapKeyRef{Name: "policy"}, FailMode: "open"}}
	})

	dep := func() *appsv1.Deployment {
		d := &appsv1.Deployment{}
		eventually(t, wait, "Deployment lua-dc1", func() error { return te.c.Get(bg, client.ObjectKey{Namespace: ns, Name: "lua-dc1"}, d) })
		return d
	}
	d := dep()
	var vol *corev1.Volume
	for i := range d.Spec.Template.Spec.Volumes {
		if v := &d.Spec.Template.Spec.Volumes[i]; v.Name == "policy" {
			vol = v
		}
	}
	if vol == nil || vol.ConfigMap == nil || vol.ConfigMap.Name != "policy" || vol.ConfigMap.Items[0].Key != "policy.lua" {
		t.Fatalf("policy volume: %+v", vol)
	}
	for _, m := range d.Spec.Template.Spec.Containers[0].VolumeMounts {
		if m.Name == "policy" && (m.MountPath != policyDir || m.SubPath != "") {
			t.Errorf("policy mount %+v: a directory is needed for updates to reach the pod", m)
		}
	}
	cm := &corev1.ConfigMap{}
	if err := te.c.Get(bg, client.ObjectKey{Namespace: ns, Name: "lua-dc1-policing"}, cm); err != nil {
		t.Fatal(err)
	}
	if cfg := cm.Data[configKey]; !strings.Contains(cfg, "file: "+policyDir+"/policy.lua") || !strings.Contains(cfg, "failMode: open") {
		t.Errorf("policing.yaml lacks the Lua policy:\n%s", cfg)
	}

	before := d.Spec.Template.Annotations[AnnotationConfigHash]
	hash := func() error {
		if h := dep().Spec.Template.Annotations[AnnotationConfigHash]; h != before {
			return fmt.Errorf("config hash changed")
		}
		return nil
	}
	script.Data["policy.lua"] = "x = 2\n"
	if err := te.c.Update(bg, script); err != nil {
		t.Fatal(err)
	}
	consistently(t, 2*time.Second, "a script change does not roll pods", hash)

	te.updateCluster(t, ns, "lua", func(c *aaav1.AAACluster) {
		c.Spec.Policy.Lua.Budget = &metav1.Duration{Duration: 20 * time.Millisecond}
	})
	eventually(t, wait, "a Lua setting change rolls pods", func() error {
		if hash() == nil {
			return fmt.Errorf("config hash unchanged")
		}
		return nil
	})
}
