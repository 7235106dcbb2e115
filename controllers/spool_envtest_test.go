package controllers

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
)

// TestSpoolPersistence: spec.spool.persistence runs the data center as a StatefulSet with a
// claim per pod instead of a Deployment; turning it off brings the Deployment back and prunes
// the StatefulSet. A new claim size leaves the immutable claim template as it was (no
// rejected update: the reconcile does not fail).
func TestSpoolPersistence(t *testing.T) {
	te := sharedEnv(t)
	ns := te.newNamespace(t, "spool")
	te.migratedCluster(t, ns, "sp", func(c *aaav1.AAACluster) { c.Spec.Spool.Persistence = &aaav1.SpoolPersistence{} })
	key := client.ObjectKey{Namespace: ns, Name: "sp-dc1"}
	ss := &appsv1.StatefulSet{}
	eventually(t, wait, "StatefulSet sp-dc1", func() error { return te.c.Get(bg, key, ss) })
	if len(ss.Spec.VolumeClaimTemplates) != 1 || ss.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String() != DefaultSpoolVolumeSize {
		t.Fatalf("claim templates: %+v", ss.Spec.VolumeClaimTemplates)
	}
	if ok, err := te.exists(&appsv1.Deployment{ObjectMeta: objKey(ns, "sp-dc1")}); ok || err != nil {
		t.Fatalf("a Deployment beside the StatefulSet (%v)", err)
	}

	te.updateCluster(t, ns, "sp", func(c *aaav1.AAACluster) {
		q := resource.MustParse("5Gi")
		c.Spec.Spool.Persistence.Size = &q
		c.Spec.LogLevel = "debug" // and a change that must still reach the pods
	})
	eventually(t, wait, "the StatefulSet updated, its claim template kept", func() error {
		if err := te.c.Get(bg, key, ss); err != nil {
			return err
		}
		if s := ss.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String(); s != DefaultSpoolVolumeSize {
			return fmt.Errorf("claim template size %s", s)
		}
		if ss.Generation < 2 {
			return fmt.Errorf("generation %d: not updated", ss.Generation)
		}
		return nil
	})

	te.updateCluster(t, ns, "sp", func(c *aaav1.AAACluster) { c.Spec.Spool.Persistence = nil })
	eventually(t, wait, "back to a Deployment, the StatefulSet pruned", func() error {
		if ok, err := te.exists(&appsv1.Deployment{ObjectMeta: objKey(ns, "sp-dc1")}); !ok || err != nil {
			return fmt.Errorf("no Deployment (%v)", err)
		}
		if ok, err := te.exists(&appsv1.StatefulSet{ObjectMeta: objKey(ns, "sp-dc1")}); ok || err != nil {
			return fmt.Errorf("StatefulSet still there (%v)", err)
		}
		return nil
	})
}
