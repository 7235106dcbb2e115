package argocd

import (
	"sigs.k8s.io/yaml"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
)

func strictAAACluster(raw []byte) error {
	var c aaav1.AAACluster
	return yaml.UnmarshalStrict(raw, &c)
}
