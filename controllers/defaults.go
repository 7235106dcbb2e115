package controllers

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
	policing "github.com/openaaa/openaaa/services/policing/config"
)

// Defaults that live in code rather than in the CRD schema: fields inside spec.datacenters[]
// (defaults inside list items show up as GitOps drift) and values that depend on the operator
// (the image). Documented in docs/operator.md. Those of policing's own settings (ports, log
// level, keyspace, EAP bounds) are policing's defaults (policing.Default), not copies.
const (
	DefaultReplicas               int32 = 2
	DefaultCassandraSize          int32 = 3
	DefaultReplicationFactor      int32 = 3
	DefaultCassandraStorage             = "10Gi"
	DefaultServerVersion                = "5.0.9"
	DefaultTargetCPU              int32 = 70
	DefaultRequestsMetricName           = "openaaa_radius_requests_per_second"
	DefaultRadSecPort             int32 = 2083
	DefaultDiameterTLSPort        int32 = 5658
	DefaultDiameterOriginHost           = "pcrf.{datacenter}.{realm}"
	DefaultScrapeInterval               = "30s"
	DefaultPolicingImage                = "ghcr.io/openaaa/policing"
	DefaultLoadgenImage                 = "ghcr.io/openaaa/aaa-loadgen"
	defaultSubscriberFileKey            = "subscribers.yaml"
	defaultLDAPProfilesKey              = "profiles.yaml"
	defaultPolicyKey                    = "policy.lua"
	defaultEAPClientCAKey               = "ca.crt"
	defaultEAPCRLKey                    = "ca.crl"
	defaultLDAPPasswordKey              = "password"
	defaultAccountingSecretKey          = "secret"
	defaultSessionStore                 = "cassandra"
	defaultDashboardLabel               = "grafana_dashboard"
	defaultImageTagWhenDevVersion       = "latest"
)

// Policing's ports, as the operator's objects open them.
const (
	DefaultAuthPort     int32 = policing.DefaultAuthPort
	DefaultAcctPort     int32 = policing.DefaultAcctPort
	DefaultDiameterPort int32 = policing.DefaultDiameterPort
	AdminPort           int32 = policing.DefaultAdminPort
)

// How policing pods stop (spec.spool, docs/operator.md).
const (
	DefaultTerminationGraceSeconds int64 = 120
	DefaultPreStopDelaySeconds     int64 = 5
	DefaultSpoolVolumeSize               = "2Gi"
	// drainExitMargin is the part of the grace period policing leaves itself to exit after
	// its drain deadline, before the kubelet's SIGKILL.
	drainExitMargin int64 = 5
)

// Options are the operator-wide settings (flags of main.go).
type Options struct {
	// PolicingImage is repository[:tag] used when spec.image leaves them out.
	PolicingImage string
	// Version of the operator; the default image tag.
	Version string
	// LoadgenImage is the aaa-loadgen repository[:tag] of AAALoadTests whose spec.image leaves
	// them out.
	LoadgenImage string
	// AllowCrossNamespaceLoadTests lets an AAALoadTest target an AAACluster of another
	// namespace (--loadtest-allow-cross-namespace). Off: only its own namespace.
	AllowCrossNamespaceLoadTests bool
	// OperatorNamespace is where the operator runs ($POD_NAMESPACE): its pods may reach the
	// admin port through the NetworkPolicy. Empty: they are not let in.
	OperatorNamespace string
}

// withDefaults returns a copy of spec with every default applied. Pure.
func withDefaults(in aaav1.AAAClusterSpec, opts Options) aaav1.AAAClusterSpec {
	s := *in.DeepCopy()
	pd := policing.Default()
	if s.Cassandra.Keyspace == "" {
		s.Cassandra.Keyspace = pd.Session.Cassandra.Keyspace
	}
	if s.Cassandra.External == nil && s.Cassandra.Managed == nil {
		s.Cassandra.Managed = &aaav1.ManagedCassandra{}
	}
	if s.Cassandra.Managed != nil && s.Cassandra.Managed.ServerVersion == "" {
		s.Cassandra.Managed.ServerVersion = DefaultServerVersion
	}
	if s.SessionStore == "" {
		s.SessionStore = defaultSessionStore
	}
	if s.LogLevel == "" {
		s.LogLevel = pd.Log.Level
	}
	if s.Radius.AuthPort == 0 {
		s.Radius.AuthPort = DefaultAuthPort
	}
	if s.Radius.AcctPort == 0 {
		s.Radius.AcctPort = DefaultAcctPort
	}
	if s.Radius.RequireMessageAuthenticator == nil {
		s.Radius.RequireMessageAuthenticator = ptr.To(pd.Radius.RequireMessageAuthenticator)
	}
	if rs := s.Radius.RadSec; rs != nil {
		if rs.Port == 0 {
			rs.Port = DefaultRadSecPort
		}
		defaultIssuer(rs.IssuerRef)
	}
	if d := s.Diameter; d != nil {
		if d.Port == 0 {
			d.Port = DefaultDiameterPort
		}
		if d.OriginHost == "" {
			d.OriginHost = DefaultDiameterOriginHost
		}
		if t := d.TLS; t != nil {
			if t.Port == 0 {
				t.Port = DefaultDiameterTLSPort
			}
			defaultIssuer(t.IssuerRef)
		}
	}
	if e := s.EAP; e != nil {
		defaultIssuer(e.IssuerRef)
		if e.ClientCA != nil && e.ClientCA.Key == "" {
			e.ClientCA.Key = defaultEAPClientCAKey
		}
		if e.CRL != nil && e.CRL.Key == "" {
			e.CRL.Key = defaultEAPCRLKey
		}
		if e.TLSIdentity == "" {
			e.TLSIdentity = pd.EAP.TLSIdentity
		}
		if e.MaxConversations == 0 {
			e.MaxConversations = int32(pd.EAP.MaxConversations)
		}
		if e.Timeout == nil {
			e.Timeout = &metav1.Duration{Duration: pd.EAP.Timeout.D()}
		}
		if e.Resumption == nil {
			e.Resumption = &aaav1.EAPResumption{}
		}
		if e.Resumption.Lifetime == nil {
			e.Resumption.Lifetime = &metav1.Duration{Duration: pd.EAP.Resumption.Lifetime.D()}
		}
	}
	if sub := s.Subscribers; sub != nil {
		if sub.LDAP != nil {
			if sub.LDAP.BindSecret != nil && sub.LDAP.BindSecret.Key == "" {
				sub.LDAP.BindSecret.Key = defaultLDAPPasswordKey
			}
			if sub.LDAP.Profiles != nil && sub.LDAP.Profiles.ConfigMap.Key == "" {
				sub.LDAP.Profiles.ConfigMap.Key = defaultLDAPProfilesKey
			}
		}
		if f := sub.File; f != nil {
			if f.ConfigMap != nil && f.ConfigMap.Key == "" {
				f.ConfigMap.Key = defaultSubscriberFileKey
			}
			if f.Secret != nil && f.Secret.Key == "" {
				f.Secret.Key = defaultSubscriberFileKey
			}
		}
	}
	if pol := s.Policy; pol != nil && pol.Lua != nil && pol.Lua.ConfigMap.Key == "" {
		pol.Lua.ConfigMap.Key = defaultPolicyKey
	}
	if ap := s.AccountingProxy; ap != nil {
		for i := range ap.Servers {
			if ap.Servers[i].Secret.Key == "" {
				ap.Servers[i].Secret.Key = defaultAccountingSecretKey
			}
		}
	}
	if sm := s.Monitoring.ServiceMonitor; sm != nil && sm.Interval == "" {
		sm.Interval = DefaultScrapeInterval
	}
	if gd := s.Monitoring.GrafanaDashboards; gd != nil && len(gd.Labels) == 0 {
		gd.Labels = map[string]string{defaultDashboardLabel: "1"}
	}
	if s.Spool.TerminationGracePeriodSeconds == nil {
		s.Spool.TerminationGracePeriodSeconds = ptr.To(DefaultTerminationGraceSeconds)
	}
	if s.Spool.PreStopDelaySeconds == nil {
		s.Spool.PreStopDelaySeconds = ptr.To(DefaultPreStopDelaySeconds)
	}
	if p := s.Spool.Persistence; p != nil && p.Size == nil {
		q := resource.MustParse(DefaultSpoolVolumeSize)
		p.Size = &q
	}
	defaultImageFields(&s.Image.Repository, &s.Image.Tag, &s.Image.PullPolicy, opts.PolicingImage, DefaultPolicingImage, opts.Version)
	for i := range s.Datacenters {
		dc := &s.Datacenters[i]
		if dc.Replicas == nil && dc.Autoscaling == nil {
			dc.Replicas = ptr.To(DefaultReplicas)
		}
		if as := dc.Autoscaling; as != nil {
			if as.TargetCPUUtilizationPercentage == nil {
				as.TargetCPUUtilizationPercentage = ptr.To(DefaultTargetCPU)
			}
			if as.RequestsMetricName == "" {
				as.RequestsMetricName = DefaultRequestsMetricName
			}
		}
		if dc.Service.Type == "" {
			dc.Service.Type = corev1.ServiceTypeLoadBalancer
		}
		if dc.Service.ExternalTrafficPolicy == "" && dc.Service.Type != corev1.ServiceTypeClusterIP {
			dc.Service.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		}
		if dc.Cassandra.Size == nil {
			dc.Cassandra.Size = ptr.To(DefaultCassandraSize)
		}
		if dc.Cassandra.ReplicationFactor == nil {
			dc.Cassandra.ReplicationFactor = ptr.To(min(DefaultReplicationFactor, *dc.Cassandra.Size))
		}
		if dc.Cassandra.Storage.Size == nil {
			q := resource.MustParse(DefaultCassandraStorage)
			dc.Cassandra.Storage.Size = &q
		}
	}
	return s
}

// defaultImage is the repository and tag of an image flag (repository[:tag]): fallbackRepo
// when it is empty, the operator's version when it has no tag ("latest" for a dev build).
func defaultImage(flag, fallbackRepo, version string) (repo, tag string) {
	repo, tag = splitImage(flag)
	if repo == "" {
		repo = fallbackRepo
	}
	if tag == "" {
		tag = version
	}
	if tag == "" || tag == "dev" {
		tag = defaultImageTagWhenDevVersion
	}
	return repo, tag
}

// defaultImageFields fills the empty fields of an image spec: repository and tag from the
// operator's image flag (see defaultImage), pull policy IfNotPresent.
func defaultImageFields(repo, tag *string, pull *corev1.PullPolicy, flag, fallbackRepo, version string) {
	r, t := defaultImage(flag, fallbackRepo, version)
	if *repo == "" {
		*repo = r
	}
	if *tag == "" {
		*tag = t
	}
	if *pull == "" {
		*pull = corev1.PullIfNotPresent
	}
}

// splitImage splits repository[:tag] (a registry host may carry a port: host:5000/repo:tag).
func splitImage(image string) (repo, tag string) {
	if image == "" {
		return "", ""
	}
	slash := strings.LastIndex(image, "/")
	colon := strings.LastIndex(image, ":")
	if colon > slash {
		return image[:colon], image[colon+1:]
	}
	return image, ""
}

// imageRef is the full image reference of policing.
func imageRef(s aaav1.AAAClusterSpec) string {
	return s.Image.Repository + ":" + s.Image.Tag
}

// managed tells whether Cassandra is managed through k8ssandra-operator.
func managed(s aaav1.AAAClusterSpec) bool { return s.Cassandra.External == nil }

// radsecEnabled tells whether RadSec is on.
func radsecEnabled(s aaav1.AAAClusterSpec) bool {
	return s.Radius.RadSec != nil && s.Radius.RadSec.Enabled
}

// eapEnabled tells whether EAP is on.
func eapEnabled(s aaav1.AAAClusterSpec) bool { return s.EAP != nil && len(s.EAP.Methods) > 0 }

// eapUsesTLS tells whether a method needs the EAP server certificate (all but md5).
func eapUsesTLS(s aaav1.AAAClusterSpec) bool {
	return eapEnabled(s) && slices.ContainsFunc(s.EAP.Methods, func(m string) bool { return m != "md5" })
}

// defaultIssuer fills in an issuer reference's kind and group (nil: nothing to do).
func defaultIssuer(ref *aaav1.IssuerReference) {
	if ref == nil {
		return
	}
	if ref.Kind == "" {
		ref.Kind = "Issuer"
	}
	if ref.Group == "" {
		ref.Group = "cert-manager.io"
	}
}

// diameterTLSEnabled tells whether Diameter over TLS is on (Diameter itself too).
func diameterTLSEnabled(s aaav1.AAAClusterSpec) bool {
	return diameterEnabled(s) && s.Diameter.TLS != nil && s.Diameter.TLS.Enabled
}

// diameterEnabled tells whether Diameter Gx is on.
func diameterEnabled(s aaav1.AAAClusterSpec) bool {
	return s.Diameter != nil && s.Diameter.Enabled
}

// diameterOriginHost is the Diameter identity of the policing pods of a data center: its own
// override, else spec.diameter.originHost, with {datacenter} and {realm} filled in. Pure.
func diameterOriginHost(s aaav1.AAAClusterSpec, dc string) string {
	tmpl := s.Diameter.OriginHost
	for _, d := range s.Datacenters {
		if d.Name == dc && d.Diameter != nil && d.Diameter.OriginHost != "" {
			tmpl = d.Diameter.OriginHost
		}
	}
	return strings.NewReplacer("{datacenter}", dc, "{realm}", s.Diameter.Realm).Replace(tmpl)
}
