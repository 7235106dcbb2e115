package controllers

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
)

func minimalCluster(ns, name string) *aaav1.AAACluster {
	return &aaav1.AAACluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: aaav1.AAAClusterSpec{
			Datacenters: []aaav1.Datacenter{{Name: "dc1"}, {Name: "dc2"}},
			Radius:      aaav1.RadiusSpec{ClientsSecret: corev1.LocalObjectReference{Name: "clients"}},
			Subscribers: &aaav1.SubscribersSpec{File: &aaav1.SubscriberFileSpec{ConfigMap: &aaav1.ConfigMapKeyRef{Name: "subscribers"}}},
		},
	}
}

// TestValidation: the API server rejects invalid AAAClusters with messages naming the field.
func TestValidation(t *testing.T) {
	te := sharedEnv(t)
	ns := te.newNamespace(t, "validation")

	create := []struct {
		name   string
		mutate func(*aaav1.AAACluster)
		want   []string // all in the error
	}{
		{"no datacenter", func(c *aaav1.AAACluster) { c.Spec.Datacenters = nil }, []string{"spec.datacenters"}},
		{"duplicate datacenter names", func(c *aaav1.AAACluster) { c.Spec.Datacenters[1].Name = "dc1" },
			[]string{"spec.datacenters[1]", "Duplicate value"}},
		{"invalid datacenter name", func(c *aaav1.AAACluster) { c.Spec.Datacenters[0].Name = "DC_1" },
			[]string{"spec.datacenters[0].name"}},
		{"negative row cache", func(c *aaav1.AAACluster) { c.Spec.Cassandra.RowCacheSize = ptr.To[int32](-1) },
			[]string{"spec.cassandra.rowCacheSize"}},
		{"replication factor above size", func(c *aaav1.AAACluster) {
			c.Spec.Datacenters[1].Cassandra = aaav1.DatacenterCassandraSpec{Size: ptr.To[int32](2), ReplicationFactor: ptr.To[int32](3)}
		}, []string{"spec.datacenters[1].cassandra.replicationFactor", "must not exceed size"}},
		{"replication factor above the default size", func(c *aaav1.AAACluster) {
			c.Spec.Datacenters[0].Cassandra = aaav1.DatacenterCassandraSpec{ReplicationFactor: ptr.To[int32](4)}
		}, []string{"spec.datacenters[0].cassandra.replicationFactor"}},
		{"autoscaling min above max", func(c *aaav1.AAACluster) {
			c.Spec.Datacenters[0].Autoscaling = &aaav1.AutoscalingSpec{MinReplicas: 5, MaxReplicas: 3}
		}, []string{"spec.datacenters[0].autoscaling.maxReplicas", "greater than or equal to minReplicas"}},
		{"scale-down stabilization above an hour", func(c *aaav1.AAACluster) {
			c.Spec.Datacenters[0].Autoscaling = &aaav1.AutoscalingSpec{MinReplicas: 1, MaxReplicas: 3, ScaleDownStabilizationSeconds: ptr.To[int32](3601)}
		}, []string{"spec.datacenters[0].autoscaling.scaleDownStabilizationSeconds"}},
		{"negative scale-down stabilization", func(c *aaav1.AAACluster) {
			c.Spec.Datacenters[0].Autoscaling = &aaav1.AutoscalingSpec{MinReplicas: 1, MaxReplicas: 3, ScaleDownStabilizationSeconds: ptr.To[int32](-1)}
		}, []string{"spec.datacenters[0].autoscaling.scaleDownStabilizationSeconds"}},
		{"policingDownFor not a duration", func(c *aaav1.AAACluster) {
			c.Spec.Monitoring.PrometheusRule = &aaav1.PrometheusRuleSpec{Enabled: true, PolicingDownFor: "5 minutes"}
		}, []string{"spec.monitoring.prometheusRule.policingDownFor"}},
		{"replicas and autoscaling", func(c *aaav1.AAACluster) {
			c.Spec.Datacenters[0].Replicas = ptr.To[int32](2)
			c.Spec.Datacenters[0].Autoscaling = &aaav1.AutoscalingSpec{MinReplicas: 2, MaxReplicas: 3}
		}, []string{"spec.datacenters[0].replicas", "mutually exclusive"}},
		{"externalTrafficPolicy on ClusterIP", func(c *aaav1.AAACluster) {
			c.Spec.Datacenters[0].Service = aaav1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal}
		}, []string{"spec.datacenters[0].service.externalTrafficPolicy"}},
		{"managed and external Cassandra", func(c *aaav1.AAACluster) {
			c.Spec.Cassandra.Managed = &aaav1.ManagedCassandra{}
			c.Spec.Cassandra.External = &aaav1.ExternalCassandra{ContactPoints: []string{"c"}, CredentialsSecret: corev1.LocalObjectReference{Name: "s"}}
		}, []string{"spec.cassandra", "mutually exclusive"}},
		// cass-operator's webhook refuses several nodes per worker unless every datacenter
		// has cpu and memory requests and limits; k8ssandra-operator shows that only in the
		// K8ssandraCluster's status.error (seen on the local cluster).
		{"soft anti-affinity without resources", func(c *aaav1.AAACluster) {
			c.Spec.Cassandra.Managed = &aaav1.ManagedCassandra{SoftPodAntiAffinity: true}
		}, []string{"spec.cassandra.managed.softPodAntiAffinity", "cpu and memory requests and limits"}},
		{"soft anti-affinity with a memory limit only", func(c *aaav1.AAACluster) {
			c.Spec.Cassandra.Managed = &aaav1.ManagedCassandra{SoftPodAntiAffinity: true}
			for i := range c.Spec.Datacenters {
				c.Spec.Datacenters[i].Cassandra.Resources = corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1536Mi")}}
			}
		}, []string{"spec.cassandra.managed.softPodAntiAffinity", "cpu and memory requests and limits"}},
		{"a JVM option that is no flag", func(c *aaav1.AAACluster) {
			c.Spec.Cassandra.Managed = &aaav1.ManagedCassandra{JvmOptions: []string{"-Xss512k", "ring_delay_ms=1000"}}
		}, []string{"spec.cassandra.managed.jvmOptions[1]"}},
		{"RadSec without a certificate", func(c *aaav1.AAACluster) {
			c.Spec.Radius.RadSec = &aaav1.RadSecSpec{Enabled: true}
		}, []string{"spec.radius.radsec", "issuerRef or secretName"}},
		{"EAP-TLS without a client CA", func(c *aaav1.AAACluster) {
			c.Spec.EAP = &aaav1.EAPSpec{Methods: []string{"tls"}, SecretName: "s"}
		}, []string{"spec.eap.clientCA", "required by the method tls"}},
		{"EAP CRL without a client CA", func(c *aaav1.AAACluster) {
			c.Spec.EAP = &aaav1.EAPSpec{Methods: []string{"peap"}, SecretName: "s", CRL: &aaav1.ConfigMapKeyRef{Name: "crl"}}
		}, []string{"spec.eap.crl", "needs clientCA"}},
		{"PEAP without a certificate", func(c *aaav1.AAACluster) {
			c.Spec.EAP = &aaav1.EAPSpec{Methods: []string{"md5", "peap"}}
		}, []string{"spec.eap", "issuerRef or secretName is required by the methods tls, peap and ttls"}},
		{"EAP issuer and Secret", func(c *aaav1.AAACluster) {
			c.Spec.EAP = &aaav1.EAPSpec{Methods: []string{"peap"}, SecretName: "s", IssuerRef: &aaav1.IssuerReference{Name: "ca"}, DNSNames: []string{"r"}}
		}, []string{"spec.eap", "mutually exclusive"}},
		{"EAP issuer without names", func(c *aaav1.AAACluster) {
			c.Spec.EAP = &aaav1.EAPSpec{Methods: []string{"peap"}, IssuerRef: &aaav1.IssuerReference{Name: "ca"}}
		}, []string{"spec.eap.dnsNames", "at least one name"}},
		{"EAP unknown method", func(c *aaav1.AAACluster) { c.Spec.EAP = &aaav1.EAPSpec{Methods: []string{"leap"}} },
			[]string{"spec.eap.methods[0]", "Unsupported value"}},
		{"EAP method twice", func(c *aaav1.AAACluster) { c.Spec.EAP = &aaav1.EAPSpec{Methods: []string{"md5", "md5"}} },
			[]string{"spec.eap.methods", "listed twice"}},
		{"EAP no method", func(c *aaav1.AAACluster) { c.Spec.EAP = &aaav1.EAPSpec{Methods: []string{}} },
			[]string{"spec.eap.methods"}},
		{"EAP timeout too short", func(c *aaav1.AAACluster) {
			c.Spec.EAP = &aaav1.EAPSpec{Methods: []string{"md5"}, Timeout: &metav1.Duration{Duration: 500 * time.Millisecond}}
		}, []string{"spec.eap.timeout", "between 1s and 10m"}},
		{"EAP resumption lifetime too long", func(c *aaav1.AAACluster) {
			c.Spec.EAP = &aaav1.EAPSpec{Methods: []string{"peap"}, SecretName: "tls",
				Resumption: &aaav1.EAPResumption{Lifetime: &metav1.Duration{Duration: 25 * time.Hour}}}
		}, []string{"spec.eap.resumption.lifetime", "between 1m and 24h"}},
		// Without a source policing refuses its config (subscribers.file required) and
		// crash-loops: the API server says so instead.
		{"no subscriber source", func(c *aaav1.AAACluster) { c.Spec.Subscribers = nil },
			[]string{"spec.subscribers", "Required value"}},
		{"two subscriber sources", func(c *aaav1.AAACluster) {
			c.Spec.Subscribers = &aaav1.SubscribersSpec{
				LDAP: &aaav1.LDAPSpec{URL: "ldap://x", BaseDN: "dc=x"},
				File: &aaav1.SubscriberFileSpec{ConfigMap: &aaav1.ConfigMapKeyRef{Name: "x"}},
			}
		}, []string{"spec.subscribers", "exactly one of ldap or file"}},
		{"bad port", func(c *aaav1.AAACluster) { c.Spec.Radius.AuthPort = 70000 }, []string{"spec.radius.authPort"}},
		{"Message-Authenticator not required", func(c *aaav1.AAACluster) { c.Spec.Radius.RequireMessageAuthenticator = ptr.To(false) },
			[]string{"spec.radius.requireMessageAuthenticator", "only true is accepted", "clients.yaml"}},
		{"Lua budget too long", func(c *aaav1.AAACluster) {
			c.Spec.Policy = &aaav1.PolicySpec{Lua: &aaav1.LuaPolicySpec{ConfigMap: aaav1.ConfigMapKeyRef{Name: "p"}, Budget: &metav1.Duration{Duration: time.Minute}}}
		}, []string{"spec.policy.lua.budget", "between 1ms and 10s"}},
		{"Lua fail mode", func(c *aaav1.AAACluster) {
			c.Spec.Policy = &aaav1.PolicySpec{Lua: &aaav1.LuaPolicySpec{ConfigMap: aaav1.ConfigMapKeyRef{Name: "p"}, FailMode: "ajar"}}
		}, []string{"spec.policy.lua.failMode"}},
		{"name too long", func(c *aaav1.AAACluster) { c.Name = strings.Repeat("a", 31) }, []string{"metadata.name", "at most 30"}},
		{"grace period leaving no time to drain", func(c *aaav1.AAACluster) {
			c.Spec.Spool = aaav1.SpoolSpec{TerminationGracePeriodSeconds: ptr.To[int64](30), PreStopDelaySeconds: ptr.To[int64](20)}
		}, []string{"spec.spool.terminationGracePeriodSeconds", "at least 15 seconds after preStopDelaySeconds"}},
		{"Diameter without a realm", func(c *aaav1.AAACluster) {
			c.Spec.Diameter = &aaav1.DiameterSpec{Enabled: true, Peers: []aaav1.DiameterPeer{{Realm: "epc.example.net"}}}
		}, []string{"spec.diameter.realm", "required when enabled"}},
		{"Diameter without peers", func(c *aaav1.AAACluster) {
			c.Spec.Diameter = &aaav1.DiameterSpec{Enabled: true, Realm: "example.net"}
		}, []string{"spec.diameter.peers", "at least one peer"}},
		{"Diameter peer matching anyone", func(c *aaav1.AAACluster) {
			c.Spec.Diameter = &aaav1.DiameterSpec{Enabled: true, Realm: "example.net", Peers: []aaav1.DiameterPeer{{}}}
		}, []string{"spec.diameter.peers[0]", "set originHost, realm or sourceCIDRs"}},
		{"Diameter peer source not a CIDR", func(c *aaav1.AAACluster) {
			c.Spec.Diameter = &aaav1.DiameterSpec{Enabled: true, Realm: "example.net", Peers: []aaav1.DiameterPeer{{SourceCIDRs: []aaav1.CIDR{"10.1.0.0/16", "10.2.0.0"}}}}
		}, []string{"spec.diameter.peers[0].sourceCIDRs[1]"}},
		{"Diameter identity shared by two data centers", func(c *aaav1.AAACluster) {
			c.Spec.Diameter = &aaav1.DiameterSpec{Enabled: true, Realm: "example.net", OriginHost: "pcrf.{realm}", Peers: []aaav1.DiameterPeer{{Realm: "epc.example.net"}}}
		}, []string{"spec.diameter.originHost", "must contain {datacenter}"}},
		{"Diameter identity override shared by two data centers", func(c *aaav1.AAACluster) {
			c.Spec.Diameter = &aaav1.DiameterSpec{Enabled: true, Realm: "example.net", Peers: []aaav1.DiameterPeer{{Realm: "epc.example.net"}}}
			c.Spec.Datacenters[0].Diameter = &aaav1.DatacenterDiameterSpec{OriginHost: "pcrf.example.net"}
			c.Spec.Datacenters[1].Diameter = &aaav1.DatacenterDiameterSpec{OriginHost: "pcrf.example.net"}
		}, []string{"spec.datacenters", "same Diameter identity"}},
		{"Diameter identity with an unknown placeholder", func(c *aaav1.AAACluster) {
			c.Spec.Diameter = &aaav1.DiameterSpec{Enabled: true, Realm: "example.net", OriginHost: "{pod}.{datacenter}.example.net", Peers: []aaav1.DiameterPeer{{Realm: "epc.example.net"}}}
		}, []string{"spec.diameter.originHost"}},
		{"Diameter TLS without a certificate", func(c *aaav1.AAACluster) {
			c.Spec.Diameter = &aaav1.DiameterSpec{Enabled: true, Realm: "example.net", Peers: []aaav1.DiameterPeer{{Realm: "epc.example.net"}},
				TLS: &aaav1.DiameterTLSSpec{Enabled: true}}
		}, []string{"spec.diameter.tls", "issuerRef or secretName"}},
		{"Diameter TLS with both an issuer and a Secret", func(c *aaav1.AAACluster) {
			c.Spec.Diameter = &aaav1.DiameterSpec{Enabled: true, Realm: "example.net", Peers: []aaav1.DiameterPeer{{Realm: "epc.example.net"}},
				TLS: &aaav1.DiameterTLSSpec{Enabled: true, SecretName: "t", IssuerRef: &aaav1.IssuerReference{Name: "ca"}}}
		}, []string{"spec.diameter.tls", "mutually exclusive"}},
		{"Diameter TLS on the Diameter port", func(c *aaav1.AAACluster) {
			c.Spec.Diameter = &aaav1.DiameterSpec{Enabled: true, Realm: "example.net", Peers: []aaav1.DiameterPeer{{Realm: "epc.example.net"}},
				TLS: &aaav1.DiameterTLSSpec{Enabled: true, Port: 3868, SecretName: "t"}}
		}, []string{"spec.diameter.tls.port", "must differ"}},
		{"grace period with the default delay", func(c *aaav1.AAACluster) {
			c.Spec.Spool = aaav1.SpoolSpec{TerminationGracePeriodSeconds: ptr.To[int64](16)}
		}, []string{"spec.spool.terminationGracePeriodSeconds"}},
	}
	for i, tc := range create {
		t.Run(tc.name, func(t *testing.T) {
			c := minimalCluster(ns, fmt.Sprintf("invalid-%d", i))
			tc.mutate(c)
			err := te.c.Create(bg, c)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not name %q: %v", w, err)
				}
			}
		})
	}

	// Defaults in the schema.
	c := minimalCluster(ns, "valid")
	if err := te.c.Create(bg, c); err != nil {
		t.Fatalf("a minimal AAACluster is rejected: %v", err)
	}
	if c.Spec.Cassandra.Keyspace != "openaaa" || c.Spec.Radius.AuthPort != 1812 || c.Spec.Radius.AcctPort != 1813 ||
		c.Spec.Radius.RequireMessageAuthenticator == nil || !*c.Spec.Radius.RequireMessageAuthenticator || c.Spec.SessionStore != "cassandra" {
		t.Errorf("schema defaults not applied: %+v", c.Spec)
	}
	if g, d := c.Spec.Spool.TerminationGracePeriodSeconds, c.Spec.Spool.PreStopDelaySeconds; g == nil || *g != DefaultTerminationGraceSeconds ||
		d == nil || *d != DefaultPreStopDelaySeconds || c.Spec.Spool.Persistence != nil {
		t.Errorf("spool defaults not applied: %+v", c.Spec.Spool)
	}

	// One identity for all: fine when every data center has its own override.
	own := minimalCluster(ns, "own-identities")
	own.Spec.Diameter = &aaav1.DiameterSpec{Enabled: true, Realm: "example.net", OriginHost: "pcrf.{realm}", Peers: []aaav1.DiameterPeer{{SourceCIDRs: []aaav1.CIDR{"2001:db8::/32"}}}}
	own.Spec.Datacenters[0].Diameter = &aaav1.DatacenterDiameterSpec{OriginHost: "pcrf-a.{realm}"}
	own.Spec.Datacenters[1].Diameter = &aaav1.DatacenterDiameterSpec{OriginHost: "pcrf-b.{realm}"}
	if err := te.c.Create(bg, own); err != nil {
		t.Errorf("per data center identities rejected: %v", err)
	}

	update := []struct {
		name   string
		mutate func(*aaav1.AAACluster)
		want   []string
	}{
		{"rename a datacenter", func(c *aaav1.AAACluster) { c.Spec.Datacenters[1].Name = "dc9" },
			[]string{"spec.datacenters", "cannot be renamed"}},
		{"change the keyspace", func(c *aaav1.AAACluster) { c.Spec.Cassandra.Keyspace = "other" },
			[]string{"spec.cassandra.keyspace", "immutable"}},
		{"switch to external Cassandra", func(c *aaav1.AAACluster) {
			c.Spec.Cassandra.External = &aaav1.ExternalCassandra{ContactPoints: []string{"c"}, CredentialsSecret: corev1.LocalObjectReference{Name: "s"}}
		}, []string{"spec.cassandra", "cannot switch"}},
	}
	for _, tc := range update {
		t.Run(tc.name, func(t *testing.T) {
			// The controller writes status meanwhile: retry the read-modify-write on a
			// conflict so that what comes back is the validation's verdict.
			var err error
			for try := 0; try < 10; try++ {
				c := te.getCluster(t, ns, "valid")
				tc.mutate(c)
				if err = te.c.Update(bg, c); !apierrors.IsConflict(err) {
					break
				}
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not name %q: %v", w, err)
				}
			}
		})
	}
	// Adding and removing in separate updates is fine.
	te.updateCluster(t, ns, "valid", func(c *aaav1.AAACluster) {
		c.Spec.Datacenters = append(c.Spec.Datacenters, aaav1.Datacenter{Name: "dc9"})
	})
	te.updateCluster(t, ns, "valid", func(c *aaav1.AAACluster) {
		c.Spec.Datacenters = []aaav1.Datacenter{c.Spec.Datacenters[0], c.Spec.Datacenters[2]}
	})
}

// TestMigrationFailure: a failed Job makes SchemaReady False with the Job's reason, Degraded
// True, a Warning event, and no policing.
func TestMigrationFailure(t *testing.T) {
	te := sharedEnv(t)
	ns := te.newNamespace(t, "migfail")
	c := minimalCluster(ns, "aaa")
	c.Spec.Datacenters = c.Spec.Datacenters[:1]
	if err := te.c.Create(bg, c); err != nil {
		t.Fatal(err)
	}
	eventually(t, wait, "K8ssandraCluster", func() error { _, err := te.k8ssandra(ns, "aaa"); return err })
	te.markCassandra(t, ns, "aaa", "dc1")
	job := te.waitMigrationJob(t, ns, "aaa", "dc1:3")
	te.finishJob(t, job, false)
	got := te.waitCondition(t, ns, "aaa", aaav1.ConditionSchemaReady, metav1.ConditionFalse, "BackoffLimitExceeded")
	te.waitCondition(t, ns, "aaa", aaav1.ConditionDegraded, metav1.ConditionTrue, ReasonMigrationFailed)
	te.waitCondition(t, ns, "aaa", aaav1.ConditionReady, metav1.ConditionFalse, "BackoffLimitExceeded")
	if got.Status.Schema != nil {
		t.Errorf("a failed migration recorded as applied: %+v", got.Status.Schema)
	}
	eventually(t, wait, "Warning event", func() error {
		if !te.recorder.has(ns, "Warning BackoffLimitExceeded") {
			return joinErr(te.recorder.events(ns))
		}
		return nil
	})
	if ok, _ := te.exists(&batchv1.Job{ObjectMeta: objKey(ns, job.Name)}); !ok {
		t.Error("the failed Job was deleted: its logs are the diagnosis")
	}
}

// TestOptionalCRDsMissing: on an API server without k8ssandra-operator, cert-manager and
// prometheus-operator, the operator starts, says what is missing in conditions and events,
// and still runs what does not need them (external Cassandra).
func TestOptionalCRDsMissing(t *testing.T) {
	assets, _ := requireEnvtest(t, false)
	te, err := startEnv(assets, []string{filepath.Join("..", "config", "crd", "bases")})
	if err != nil {
		t.Fatal(err)
	}
	ns := te.newNamespace(t, "bare")
	te.createSecret(t, ns, "cass-creds", map[string]string{"username": "u", "password": "p"})

	ext := minimalCluster(ns, "ext")
	ext.Spec.Datacenters = ext.Spec.Datacenters[:1]
	cassandra := listenTCP(t) // the operator checks that a contact point answers
	ext.Spec.Cassandra.External = &aaav1.ExternalCassandra{ContactPoints: []string{cassandra}, CredentialsSecret: corev1.LocalObjectReference{Name: "cass-creds"}}
	ext.Spec.Radius.RadSec = &aaav1.RadSecSpec{Enabled: true, IssuerRef: &aaav1.IssuerReference{Name: "ca"}}
	ext.Spec.Monitoring = aaav1.MonitoringSpec{
		ServiceMonitor:    &aaav1.ServiceMonitorSpec{Enabled: true},
		PrometheusRule:    &aaav1.PrometheusRuleSpec{Enabled: true},
		GrafanaDashboards: &aaav1.GrafanaDashboardsSpec{Enabled: true},
	}
	if err := te.c.Create(bg, ext); err != nil {
		t.Fatal(err)
	}
	c := te.waitCondition(t, ns, "ext", aaav1.ConditionMonitoringReady, metav1.ConditionFalse, ReasonCRDNotInstalled)
	if m := findCondition(c, aaav1.ConditionMonitoringReady).Message; !strings.Contains(m, "ServiceMonitor") || !strings.Contains(m, "PrometheusRule") {
		t.Errorf("MonitoringReady message: %s", m)
	}
	te.waitCondition(t, ns, "ext", aaav1.ConditionDegraded, metav1.ConditionTrue, ReasonCertManagerMissing)
	te.waitCondition(t, ns, "ext", aaav1.ConditionCassandraReady, metav1.ConditionTrue, ReasonExternalCassandra)
	// The dashboard needs no CRD; the migration runs against the external cluster.
	if ok, err := te.exists(&corev1.ConfigMap{ObjectMeta: objKey(ns, "ext-dashboard")}); !ok {
		t.Errorf("dashboard ConfigMap missing (%v)", err)
	}
	job := te.waitMigrationJob(t, ns, "ext", "dc1:3")
	if args := strings.Join(job.Spec.Template.Spec.Containers[0].Args, " "); !strings.Contains(args, "--contact-points "+cassandra) {
		t.Errorf("external contact points not used: %s", args)
	}
	if vol := job.Spec.Template.Spec.Volumes[0]; vol.Secret == nil || vol.Secret.SecretName != "cass-creds" {
		t.Errorf("credentials volume: %+v", vol)
	}
	te.finishJob(t, job, true)
	te.waitCondition(t, ns, "ext", aaav1.ConditionSchemaReady, metav1.ConditionTrue, ReasonReady)
	te.markDeploymentsAvailable(t, ns, "ext-dc1")
	te.waitCondition(t, ns, "ext", aaav1.ConditionPolicingReady, metav1.ConditionTrue, ReasonReady)
	eventually(t, wait, "Warning events for the missing CRDs", func() error {
		if !te.recorder.has(ns, "Warning "+ReasonCRDNotInstalled) || !te.recorder.has(ns, "Warning "+ReasonCertManagerMissing) {
			return joinErr(te.recorder.events(ns))
		}
		return nil
	})

	managedCluster := minimalCluster(ns, "managed")
	if err := te.c.Create(bg, managedCluster); err != nil {
		t.Fatal(err)
	}
	te.waitCondition(t, ns, "managed", aaav1.ConditionCassandraReady, metav1.ConditionFalse, ReasonK8ssandraMissing)
	te.waitCondition(t, ns, "managed", aaav1.ConditionReady, metav1.ConditionFalse, ReasonK8ssandraMissing)

	// No K8ssandraCluster kind at all on this server.
	if _, err := te.r.RESTMapper().RESTMapping(K8ssandraClusterGVK.GroupKind()); err == nil {
		t.Error("this API server should not serve K8ssandraCluster")
	}
}

func findCondition(c *aaav1.AAACluster, typ string) metav1.Condition {
	for _, cond := range c.Status.Conditions {
		if cond.Type == typ {
			return cond
		}
	}
	return metav1.Condition{}
}
