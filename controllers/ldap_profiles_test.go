package controllers

import (
	"slices"
	"testing"

	"sigs.k8s.io/yaml"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
)

// spec.subscribers.ldap.profiles: the ConfigMap is mounted, policing's profilesFile and
// attributes.profileName name it and the attribute, and a change of it rolls the pods (it is
// read at start) and reconciles the cluster (watched).
func TestLDAPProfiles(t *testing.T) {
	c, _ := sampleForBuilders(t)
	c.Spec.Subscribers.LDAP.Profiles = &aaav1.LDAPProfilesSpec{
		ConfigMap: aaav1.ConfigMapKeyRef{Name: "service-classes"}, Attribute: "openaaaClass"}
	spec := withDefaults(c.Spec, Options{Version: "v1.2.3"})
	rendered := renderPolicingConfig(c, spec, "dc1")
	golden(t, "policing-ldap-profiles-dc1.yaml", []byte(rendered))
	var cfg struct {
		Subscribers struct {
			LDAP struct {
				ProfilesFile string `json:"profilesFile"`
				Attributes   struct {
					ProfileName string `json:"profileName"`
				} `json:"attributes"`
			} `json:"ldap"`
		} `json:"subscribers"`
	}
	if err := yaml.Unmarshal([]byte(rendered), &cfg); err != nil {
		t.Fatal(err)
	}
	if l := cfg.Subscribers.LDAP; l.ProfilesFile != "/etc/openaaa/ldap-profiles/profiles.yaml" || l.Attributes.ProfileName != "openaaaClass" {
		t.Errorf("policing's LDAP section %+v", l)
	}
	dep := buildDeployment(c, spec, spec.Datacenters[0], "h")
	mounted := false
	for _, v := range dep.Spec.Template.Spec.Volumes {
		mounted = mounted || (v.ConfigMap != nil && v.ConfigMap.Name == "service-classes" && v.ConfigMap.Items[0].Key == "profiles.yaml")
	}
	if !mounted {
		t.Errorf("the profiles ConfigMap is not mounted: %+v", dep.Spec.Template.Spec.Volumes)
	}
	if !slices.Contains(rollingConfigMaps(spec), "service-classes") || !slices.Contains(referencedObjects(c), "ConfigMap/service-classes") {
		t.Errorf("the profiles ConfigMap neither rolls the pods (%v) nor is watched (%v)", rollingConfigMaps(spec), referencedObjects(c))
	}
}
