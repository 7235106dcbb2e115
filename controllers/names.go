package controllers

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
)

// Labels and annotations the operator puts on what it creates.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelComponent = "app.kubernetes.io/component"
	LabelPartOf    = "app.kubernetes.io/part-of"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelCluster   = "aaa.openaaa.io/cluster"
	LabelDC        = "aaa.openaaa.io/datacenter"

	// AnnotationSpecHash on every object holds the hash of the desired object: an object whose
	// hash is unchanged is not written again (a reconcile of an unchanged AAACluster is quiet).
	AnnotationSpecHash = "aaa.openaaa.io/spec-hash"
	// AnnotationConfigHash on the pod template holds the hash of the configuration and of the
	// referenced Secrets: a change rolls the pods.
	AnnotationConfigHash = "aaa.openaaa.io/config-hash"

	managedBy = "openaaa-operator"
	partOf    = "openaaa"

	componentRadius    = "radius"
	componentAdmin     = "admin"
	componentMigration = "schema-migration"
	componentConfig    = "config"
	componentDashboard = "dashboard"
)

// Paths inside the policing container.
const (
	configDir          = "/etc/openaaa"
	configFile         = configDir + "/policing.yaml"
	configKey          = "policing.yaml"
	clientsDir         = configDir + "/clients"
	clientsKey         = "clients.yaml"
	cassandraCredsDir  = configDir + "/cassandra"
	tlsDir             = configDir + "/tls"
	diameterTLSDir     = configDir + "/diameter-tls"
	eapTLSDir          = configDir + "/eap-tls"
	eapCADir           = configDir + "/eap-ca"
	eapCRLDir          = configDir + "/eap-crl"
	ldapDir            = configDir + "/ldap"
	ldapProfilesDir    = configDir + "/ldap-profiles"
	subscribersDir     = configDir + "/subscribers"
	policyDir          = configDir + "/policy"
	accountingProxyDir = configDir + "/accounting-proxy"
	stateDir           = "/var/lib/openaaa"
)

func configMapName(c *aaav1.AAACluster, dc string) string     { return c.Name + "-" + dc + "-policing" }
func deploymentName(c *aaav1.AAACluster, dc string) string    { return c.Name + "-" + dc }
func radiusServiceName(c *aaav1.AAACluster, dc string) string { return c.Name + "-" + dc + "-radius" }
func radsecServiceName(c *aaav1.AAACluster, dc string) string { return c.Name + "-" + dc + "-radsec" }
func adminServiceName(c *aaav1.AAACluster, dc string) string  { return c.Name + "-" + dc + "-admin" }
func pdbName(c *aaav1.AAACluster, dc string) string           { return c.Name + "-" + dc }
func hpaName(c *aaav1.AAACluster, dc string) string           { return c.Name + "-" + dc }
func k8ssandraName(c *aaav1.AAACluster) string                { return c.Name }
func superuserSecretName(c *aaav1.AAACluster) string          { return k8ssandraName(c) + "-superuser" }
func certificateName(c *aaav1.AAACluster) string              { return c.Name + "-radsec" }
func certificateSecretName(c *aaav1.AAACluster) string        { return c.Name + "-radsec-tls" }
func diameterCertificateName(c *aaav1.AAACluster) string      { return c.Name + "-diameter" }
func diameterCertificateSecretName(c *aaav1.AAACluster) string {
	return c.Name + "-diameter-tls"
}
func eapCertificateName(c *aaav1.AAACluster) string       { return c.Name + "-eap" }
func eapCertificateSecretName(c *aaav1.AAACluster) string { return c.Name + "-eap-tls" }
func serviceMonitorName(c *aaav1.AAACluster) string       { return c.Name }
func prometheusRuleName(c *aaav1.AAACluster) string       { return c.Name }
func dashboardConfigMapName(c *aaav1.AAACluster) string   { return c.Name + "-dashboard" }

func diameterServiceName(c *aaav1.AAACluster, dc string) string {
	return c.Name + "-" + dc + "-diameter"
}

// cassandraServiceName is the Service cass-operator creates for a datacenter:
// <cluster>-<datacenter>-service, where the cluster is the K8ssandraCluster's name.
func cassandraServiceName(c *aaav1.AAACluster, dc string) string {
	return k8ssandraName(c) + "-" + dc + "-service"
}

// clusterLabels are on everything the operator creates for an AAACluster.
func clusterLabels(c *aaav1.AAACluster, component string) map[string]string {
	return map[string]string{
		LabelName:      "policing",
		LabelInstance:  c.Name,
		LabelComponent: component,
		LabelPartOf:    partOf,
		LabelManagedBy: managedBy,
		LabelCluster:   c.Name,
	}
}

// dcLabels are on the objects of one data center.
func dcLabels(c *aaav1.AAACluster, dc, component string) map[string]string {
	l := clusterLabels(c, component)
	l[LabelInstance] = c.Name + "-" + dc
	l[LabelDC] = dc
	return l
}

// podSelector selects the policing pods of one data center (immutable in a Deployment).
func podSelector(c *aaav1.AAACluster, dc string) map[string]string {
	return map[string]string{
		LabelName:     "policing",
		LabelInstance: c.Name + "-" + dc,
	}
}

func mergeLabels(base map[string]string, extra ...map[string]string) map[string]string {
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	for _, e := range extra {
		maps.Copy(out, e)
	}
	return out
}

// hashOf is a short stable hash of any JSON-serializable value.
func hashOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only called with plain data
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}
