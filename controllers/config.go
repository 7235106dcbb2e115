package controllers

import (
	"context"
	"fmt"
	"path"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
	policing "github.com/openaaa/openaaa/services/policing/config"
)

// renderPolicingConfig renders policing.yaml for one data center in policing's own types,
// writing only the keys it sets: policing's defaults apply to the rest. Pure; it names files,
// never secrets: credentials stay in mounted Secrets.
func renderPolicingConfig(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec, dc string) string {
	return renderConfig(c, spec, dc, true)
}

// rollingConfig is what of policing.yaml rolls the pods when it changes: all but the remote
// DCs, so that adding a data center does not roll the others. A pod reads the list when it
// starts and needs it only at shutdown: pods started before the new data center deliver their
// spool to the data centers they know.
func rollingConfig(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec, dc string) map[string]string {
	return map[string]string{configKey: renderConfig(c, spec, dc, false)}
}

func renderConfig(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec, dc string, withRemoteDCs bool) string {
	cfg := policing.Config{
		Log: policing.Log{Level: spec.LogLevel, Format: "json"},
		Radius: policing.Radius{
			AuthAddress: fmt.Sprintf(":%d", spec.Radius.AuthPort),
			AcctAddress: fmt.Sprintf(":%d", spec.Radius.AcctPort),
			// Defaulted to true by the schema and by defaults.go; nil never reaches here.
			RequireMessageAuthenticator: spec.Radius.RequireMessageAuthenticator == nil || *spec.Radius.RequireMessageAuthenticator,
			DrainTimeout:                seconds(drainSeconds(spec)),
		},
		ClientsFile: path.Join(clientsDir, clientsKey),
		Session: policing.SessionStore{
			Store: spec.SessionStore,
			Cassandra: policing.Cassandra{
				ContactPoints: contactPoints(c, spec, dc),
				LocalDC:       dc,
				RemoteDCs:     remoteDCs(c, spec, dc, withRemoteDCs),
				Keyspace:      spec.Cassandra.Keyspace,
				UsernameFile:  path.Join(cassandraCredsDir, "username"),
				PasswordFile:  path.Join(cassandraCredsDir, "password"),
				Spool:         policing.Spool{DeliverWithin: spoolBound(spec)},
			},
		},
		Admin: policing.Admin{Address: fmt.Sprintf(":%d", AdminPort), TokenFile: path.Join(adminTokenDir, adminTokenKey)},
	}
	// Written even when false or 0: policing's defaults are true and not 0.
	keep := []any{&cfg.Radius.RequireMessageAuthenticator}
	if n := spec.Cassandra.RowCacheSize; n != nil { // unset, policing's default applies
		cfg.Session.Cassandra.RowCache.Size = int(*n)
		keep = append(keep, &cfg.Session.Cassandra.RowCache.Size)
	}
	if radsecEnabled(spec) {
		cfg.Radius.RadSec = policing.RadSec{
			Address:  fmt.Sprintf(":%d", spec.Radius.RadSec.Port),
			CertFile: path.Join(tlsDir, "tls.crt"),
			KeyFile:  path.Join(tlsDir, "tls.key"),
			CAFile:   path.Join(tlsDir, "ca.crt"),
		}
	}
	if diameterEnabled(spec) {
		cfg.Diameter = renderDiameter(spec, dc)
	}
	if eapEnabled(spec) {
		cfg.EAP = renderEAP(spec)
	}
	if sub := spec.Subscribers; sub != nil {
		switch {
		case sub.LDAP != nil:
			l := policing.LDAP{URLs: []string{sub.LDAP.URL}, BaseDN: sub.LDAP.BaseDN, Filter: sub.LDAP.Filter, BindDN: sub.LDAP.BindDN}
			if sub.LDAP.BindSecret != nil {
				l.BindPasswordFile = path.Join(ldapDir, sub.LDAP.BindSecret.Key)
			}
			if pr := sub.LDAP.Profiles; pr != nil {
				l.ProfilesFile = path.Join(ldapProfilesDir, pr.ConfigMap.Key)
				l.Attributes = policing.LDAPAttributes{ProfileName: pr.Attribute}
			}
			cfg.Subscribers = policing.Subscribers{Source: "ldap", LDAP: l}
		case sub.File != nil:
			key := ""
			if sub.File.ConfigMap != nil {
				key = sub.File.ConfigMap.Key
			} else if sub.File.Secret != nil {
				key = sub.File.Secret.Key
			}
			cfg.Subscribers = policing.Subscribers{Source: "file", File: path.Join(subscribersDir, key)}
		}
	}
	if ap := spec.AccountingProxy; ap != nil {
		cfg.Proxy.Queue.DeliverWithin = spoolBound(spec)
		for _, s := range ap.Servers {
			cfg.Proxy.Upstreams = append(cfg.Proxy.Upstreams, policing.Upstream{
				Name: s.Name, Address: s.Address,
				SecretFile: path.Join(accountingProxyDir, s.Name, s.Secret.Key),
			})
		}
	}
	if pol := spec.Policy; pol != nil {
		cfg.Policy = policing.Policy{RateLimitAttribute: pol.RateLimitAttribute, RejectMessage: pol.RejectMessage}
		if l := pol.Lua; l != nil {
			// The file, not the script: its content reaches policing through the mounted
			// ConfigMap and is reloaded there, so it is not part of the hash that rolls pods.
			cfg.Policy.Lua = policing.PolicyLua{File: path.Join(policyDir, l.ConfigMap.Key), FailMode: l.FailMode}
			if l.Budget != nil {
				cfg.Policy.Lua.Budget = policing.Duration(l.Budget.Duration)
			}
			if l.Memoize != nil {
				cfg.Policy.Lua.Memoize = *l.Memoize
				keep = append(keep, &cfg.Policy.Lua.Memoize)
			}
		}
	}
	out, err := policing.MarshalSet(&cfg, keep...)
	if err != nil {
		panic(err) // keep names fields of cfg
	}
	return fmt.Sprintf("# policing configuration for data center %s of AAACluster %s/%s.\n"+
		"# Written by the OpenAAA operator from the AAACluster: edits here are overwritten.\n%s",
		dc, c.Namespace, c.Name, out)
}

// renderEAP is policing's eap section: files of the mounted certificate Secret, CA and CRL
// ConfigMaps (buildPodTemplate), never their content. eap.nodeID is left to its default, the
// pod's name. Pure.
func renderEAP(spec aaav1.AAAClusterSpec) policing.EAP {
	e := spec.EAP
	out := policing.EAP{Methods: e.Methods, TLSIdentity: e.TLSIdentity, MaxConversations: int(e.MaxConversations),
		Timeout: policing.Duration(e.Timeout.Duration)}
	if eapUsesTLS(spec) {
		out.CertFile, out.KeyFile = path.Join(eapTLSDir, "tls.crt"), path.Join(eapTLSDir, "tls.key")
	}
	if e.ClientCA != nil {
		out.CAFile = path.Join(eapCADir, e.ClientCA.Key)
	}
	if e.CRL != nil {
		out.CRLFile = path.Join(eapCRLDir, e.CRL.Key)
	}
	if eapForwardEnabled(spec) {
		out.Forward = renderEAPForward()
	}
	if eapResumptionEnabled(spec) {
		out.Resumption = renderEAPResumption(spec)
	}
	return out
}

// renderDiameter is policing's diameter section for one data center: the data center's
// identity, and the peer table. A peer with several source networks becomes one entry per
// network (policing's entries match on every field they set, and any entry admits). Pure.
func renderDiameter(spec aaav1.AAAClusterSpec, dc string) policing.Diameter {
	d := spec.Diameter
	out := policing.Diameter{
		Enabled:     true,
		Address:     fmt.Sprintf(":%d", d.Port),
		OriginHost:  diameterOriginHost(spec, dc),
		OriginRealm: d.Realm,
	}
	// The other data centers' identities: any node serves any session, so a CCR still naming
	// the data center the PCEF left (Destination-Host) is served here.
	for _, other := range spec.Datacenters {
		if other.Name != dc {
			out.ServedHosts = append(out.ServedHosts, diameterOriginHost(spec, other.Name))
		}
	}
	for _, p := range d.Peers {
		entry := policing.DiameterPeer{OriginHost: p.OriginHost, OriginRealm: p.Realm}
		if len(p.SourceCIDRs) == 0 {
			out.Peers = append(out.Peers, entry)
		}
		for _, cidr := range p.SourceCIDRs {
			entry.Address = string(cidr)
			out.Peers = append(out.Peers, entry)
		}
	}
	if diameterTLSEnabled(spec) {
		out.TLS = policing.DiameterTLS{
			Address:  fmt.Sprintf(":%d", d.TLS.Port),
			CertFile: path.Join(diameterTLSDir, "tls.crt"),
			KeyFile:  path.Join(diameterTLSDir, "tls.key"),
			CAFile:   path.Join(diameterTLSDir, "ca.crt"),
		}
	}
	return out
}

// contactPoints are the Cassandra contact points of a data center: its own datacenter's
// Service (managed; the driver discovers the other datacenters from there, and adding a data
// center does not roll the pods of the others), or the configured ones (external).
func contactPoints(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec, dc string) []string {
	if !managed(spec) {
		return append([]string(nil), spec.Cassandra.External.ContactPoints...)
	}
	return []string{fmt.Sprintf("%s.%s.svc", cassandraServiceName(c, dc), c.Namespace)}
}

// remoteDCs are the other data centers with their contact points: at shutdown a pod delivers
// the spool its own datacenter cannot take to the first of them that can (none when !want).
func remoteDCs(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec, dc string, want bool) []policing.RemoteDC {
	var out []policing.RemoteDC
	if !want {
		return nil
	}
	for _, other := range spec.Datacenters {
		if other.Name != dc {
			out = append(out, policing.RemoteDC{Name: other.Name, ContactPoints: contactPoints(c, spec, other.Name)})
		}
	}
	return out
}

// spoolBound bounds a spool or a proxy queue in an emptyDir, which dies with its pod, to what
// the pod's replays deliver in a quarter of its shutdown budget (both drain at once). The rest
// is margin: a stopping pod shares Cassandra with the pods that took over its load, and
// delivered at a third of the rate its replays had measured in the cluster test. Without a
// bound a pod whose Cassandra stalls acknowledges at disk speed a backlog no shutdown can hand
// on: a rollout lost the rest. A persistent spool is left unbounded (its successor of the same
// name delivers it: 0, no bound). Pure.
func spoolBound(spec aaav1.AAAClusterSpec) policing.Duration {
	if spec.Spool.Persistence != nil {
		return 0
	}
	return seconds(max(drainSeconds(spec)/4, 1))
}

func seconds(n int64) policing.Duration { return policing.Duration(time.Duration(n) * time.Second) }

// drainSeconds is policing's shutdown budget (radius.drainTimeout): the grace period less the
// preStop delay (the kubelet counts both) and a margin to exit before SIGKILL.
func drainSeconds(spec aaav1.AAAClusterSpec) int64 {
	grace, delay := DefaultTerminationGraceSeconds, DefaultPreStopDelaySeconds
	if g := spec.Spool.TerminationGracePeriodSeconds; g != nil {
		grace = *g
	}
	if d := spec.Spool.PreStopDelaySeconds; d != nil {
		delay = *d
	}
	return max(grace-delay-drainExitMargin, 1)
}

// buildConfigMap is the ConfigMap holding policing.yaml of one data center.
func buildConfigMap(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec, dc string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:      configMapName(c, dc),
			Namespace: c.Namespace,
			Labels:    dcLabels(c, dc, componentConfig),
		},
		Data: map[string]string{configKey: renderPolicingConfig(c, spec, dc)},
	}
}

// credentialsSecret is the Secret with the Cassandra username and password.
func credentialsSecret(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec) string {
	if managed(spec) {
		return superuserSecretName(c)
	}
	return spec.Cassandra.External.CredentialsSecret.Name
}

// rollingSecrets are the Secrets whose change rolls the policing pods. The NAS clients Secret
// is not one of them: policing reloads clients.yaml from the mounted file, without a restart.
func rollingSecrets(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec) []string {
	names := []string{credentialsSecret(c, spec)}
	if sub := spec.Subscribers; sub != nil {
		if sub.LDAP != nil && sub.LDAP.BindSecret != nil {
			names = append(names, sub.LDAP.BindSecret.Name)
		}
		if sub.File != nil && sub.File.Secret != nil {
			names = append(names, sub.File.Secret.Name)
		}
	}
	if ap := spec.AccountingProxy; ap != nil {
		for _, s := range ap.Servers {
			names = append(names, s.Secret.Name)
		}
	}
	if eapForwardEnabled(spec) { // read at start
		names = append(names, eapForwardSecretName(c))
	}
	return uniqueSorted(names)
}

// rollingConfigMaps are the ConfigMaps whose change rolls the policing pods: the files
// policing reads at start (the subscriber file, the LDAP profiles). The Lua policy is not one:
// policing reloads it.
func rollingConfigMaps(spec aaav1.AAAClusterSpec) []string {
	var names []string
	if sub := spec.Subscribers; sub != nil {
		if sub.File != nil && sub.File.ConfigMap != nil {
			names = append(names, sub.File.ConfigMap.Name)
		}
		if sub.LDAP != nil && sub.LDAP.Profiles != nil {
			names = append(names, sub.LDAP.Profiles.ConfigMap.Name)
		}
	}
	return uniqueSorted(names)
}

// referencedObjects lists "Secret/<name>" and "ConfigMap/<name>" the AAACluster uses (index for
// the watches: a change there reconciles the cluster).
func referencedObjects(c *aaav1.AAACluster) []string {
	spec := withDefaults(c.Spec, Options{})
	var out []string
	for _, s := range rollingSecrets(c, spec) {
		out = append(out, "Secret/"+s)
	}
	out = append(out, "Secret/"+spec.Radius.ClientsSecret.Name)
	if rs := spec.Radius.RadSec; rs != nil && rs.SecretName != "" {
		out = append(out, "Secret/"+rs.SecretName)
	}
	if d := spec.Diameter; d != nil && d.TLS != nil && d.TLS.SecretName != "" {
		out = append(out, "Secret/"+d.TLS.SecretName)
	}
	if e := spec.EAP; e != nil {
		if e.SecretName != "" {
			out = append(out, "Secret/"+e.SecretName)
		}
		for _, cm := range []*aaav1.ConfigMapKeyRef{e.ClientCA, e.CRL} {
			if cm != nil {
				out = append(out, "ConfigMap/"+cm.Name)
			}
		}
	}
	for _, cm := range rollingConfigMaps(spec) {
		out = append(out, "ConfigMap/"+cm)
	}
	return uniqueSorted(out)
}

func uniqueSorted(in []string) []string {
	seen := map[string]bool{}
	out := make([]string, 0, len(in))
	for _, s := range in {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// configHash hashes a data center's configuration (rollingConfig) and the content of the
// Secrets and ConfigMaps that roll its pods (absent ones count as absent).
func configHash(config map[string]string, secrets map[string]map[string][]byte, configMaps map[string]map[string]string) string {
	return hashOf(struct {
		Config     map[string]string
		Secrets    map[string]map[string][]byte
		ConfigMaps map[string]map[string]string
	}{config, secrets, configMaps})
}

// reconcileConfig applies the per-DC ConfigMaps and computes the hashes that roll the pods.
func (r *AAAClusterReconciler) reconcileConfig(ctx context.Context, st *state) (result, error) {
	c, spec := st.cluster, st.spec
	if err := r.ensureAdminToken(ctx, c); err != nil {
		return result{}, err
	}
	if err := r.ensureEAPForwardSecret(ctx, c, spec); err != nil {
		return result{}, err
	}
	if err := r.ensureEAPTicketsSecret(ctx, c, spec); err != nil {
		return result{}, err
	}
	secrets := map[string]map[string][]byte{}
	for _, name := range rollingSecrets(c, spec) {
		s := &corev1.Secret{}
		err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, s)
		switch {
		case apierrors.IsNotFound(err):
			secrets[name] = nil
			if err := r.noteUnwatched(ctx, st, "Secret", name); err != nil {
				return result{}, err
			}
		case err != nil:
			return result{}, fmt.Errorf("get Secret %s: %w", name, err)
		default:
			secrets[name] = s.Data
		}
	}
	configMaps := map[string]map[string]string{}
	for _, name := range rollingConfigMaps(spec) {
		cm := &corev1.ConfigMap{}
		err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, cm)
		switch {
		case apierrors.IsNotFound(err):
			configMaps[name] = nil
			if err := r.noteUnwatched(ctx, st, "ConfigMap", name); err != nil {
				return result{}, err
			}
		case err != nil:
			return result{}, fmt.Errorf("get ConfigMap %s: %w", name, err)
		default:
			configMaps[name] = cm.Data
		}
	}
	for _, dc := range spec.Datacenters {
		cm := buildConfigMap(c, spec, dc.Name)
		if _, err := r.apply(ctx, c, cm); err != nil {
			return result{}, err
		}
		st.configHash[dc.Name] = configHash(rollingConfig(c, spec, dc.Name), secrets, configMaps)
	}
	// ConfigMaps of removed data centers go with their Deployments (datacenters.go).
	return result{}, nil
}
