package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types reported in status.conditions.
const (
	// ConditionReady is True when Cassandra, the schema and policing in every data center are ready.
	ConditionReady = "Ready"
	// ConditionCassandraReady is True when the Cassandra cluster is initialized and every data
	// center of spec.datacenters runs in it (managed), or when the credentials of the external
	// cluster are found (external).
	ConditionCassandraReady = "CassandraReady"
	// ConditionSchemaReady is True when the migration Job for the current schema version and
	// replication map has succeeded.
	ConditionSchemaReady = "SchemaReady"
	// ConditionPolicingReady is True when the policing Deployment of every data center is available.
	ConditionPolicingReady = "PolicingReady"
	// ConditionDegraded is True when the cluster serves but not fully: a data center is down, a
	// migration failed, or RadSec certificates cannot be issued.
	ConditionDegraded = "Degraded"
	// ConditionMonitoringReady is True when every monitoring object asked for in spec.monitoring
	// exists; False (reason CRDNotInstalled) when its CRD is missing from the cluster.
	ConditionMonitoringReady = "MonitoringReady"
)

// AAAClusterSpec describes one geo-redundant AAA deployment: policing (the RADIUS server) in
// every data center, sharing sessions through a multi-DC Cassandra cluster.
// +kubebuilder:validation:XValidation:rule="!has(self.diameter) || !self.diameter.enabled || !has(self.diameter.originHost) || self.diameter.originHost.contains('{datacenter}') || self.datacenters.filter(d, !has(d.diameter) || !has(d.diameter.originHost)).size() <= 1",message="spec.diameter.originHost must contain {datacenter} when several data centers use it: each data center needs its own Diameter identity (or set spec.datacenters[].diameter.originHost)",fieldPath=".diameter.originHost"
// +kubebuilder:validation:XValidation:rule="self.datacenters.all(a, !has(a.diameter) || !has(a.diameter.originHost) || self.datacenters.filter(b, has(b.diameter) && has(b.diameter.originHost) && b.diameter.originHost == a.diameter.originHost).size() == 1)",message="spec.datacenters[].diameter.originHost: two data centers have the same Diameter identity",fieldPath=".datacenters"
// +kubebuilder:validation:XValidation:rule="!has(self.cassandra) || !has(self.cassandra.managed) || !has(self.cassandra.managed.softPodAntiAffinity) || !self.cassandra.managed.softPodAntiAffinity || self.datacenters.all(d, has(d.cassandra) && has(d.cassandra.resources) && has(d.cassandra.resources.requests) && has(d.cassandra.resources.limits) && ['cpu', 'memory'].all(r, r in d.cassandra.resources.requests && r in d.cassandra.resources.limits))",message="spec.cassandra.managed.softPodAntiAffinity requires cpu and memory requests and limits in spec.datacenters[].cassandra.resources of every data center (cass-operator refuses it otherwise)",fieldPath=".cassandra.managed.softPodAntiAffinity"
type AAAClusterSpec struct {
	// Datacenters lists the data centers, each running policing and (when Cassandra is managed)
	// one Cassandra datacenter of the same name. Names are unique and can never be renamed
	// (Cassandra cannot rename a datacenter): add a data center and remove another in two
	// separate updates.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="oldSelf.all(o, self.exists(d, d.name == o.name)) || self.all(d, oldSelf.exists(o, o.name == d.name))",message="spec.datacenters: a datacenter cannot be renamed; add the new datacenter and remove the old one in two separate updates"
	Datacenters []Datacenter `json:"datacenters"`

	// Cassandra selects and configures the session store's Cassandra cluster.
	// +kubebuilder:default={}
	// +optional
	Cassandra CassandraSpec `json:"cassandra,omitempty"`

	// Radius configures the RADIUS listeners, the NAS clients and RadSec.
	Radius RadiusSpec `json:"radius"`

	// SessionStore selects how policing keeps sessions: "cassandra" (the default) or "hybrid"
	// (Cassandra plus a local cache of the sessions this pod wrote or read, for the session
	// reads of the admin API and CoA/Disconnect by user, address or key; the RADIUS flow reads
	// nothing from it: authentication reads no session and accounting merges onto the row
	// read from Cassandra or onto the row cache every Cassandra store keeps).
	// +kubebuilder:validation:Enum=cassandra;hybrid
	// +kubebuilder:default=cassandra
	// +optional
	SessionStore string `json:"sessionStore,omitempty"`

	// Diameter serves Diameter Gx (the PCRF role, docs/diameter-gx.md) next to RADIUS, from
	// the same subscribers and session store: a TCP listener in every policing pod and a
	// Service per data center.
	// +optional
	Diameter *DiameterSpec `json:"diameter,omitempty"`

	// EAP serves EAP over RADIUS (RFC 3579, docs/eap.md) on the RADIUS ports: policing's eap.*
	// keys, with the server certificate of the TLS-based methods and the CA bundle of EAP-TLS
	// client certificates mounted read-only and reloaded when they change.
	// +optional
	EAP *EAPSpec `json:"eap,omitempty"`

	// Subscribers selects where subscribers are looked up: LDAP or a file. Required: policing
	// has no other subscriber source and refuses to start without one.
	// +kubebuilder:validation:Required
	Subscribers *SubscribersSpec `json:"subscribers,omitempty"`

	// AccountingProxy forwards accounting requests to other RADIUS servers (e.g. billing).
	// +optional
	AccountingProxy *AccountingProxySpec `json:"accountingProxy,omitempty"`

	// Policy tunes the built-in policy.
	// +optional
	Policy *PolicySpec `json:"policy,omitempty"`

	// Spool says how a stopping policing pod keeps the accounting it acknowledged to NASes
	// and has not delivered yet: its spool (records Cassandra could not take) and its proxy
	// queue. On deletion the pod stops taking requests and delivers both (the spool to any
	// datacenter's Cassandra, the local one first; the queue to any live upstream) within
	// its termination grace period; persistence keeps what is left on a volume of its own.
	// +kubebuilder:default={}
	// +optional
	Spool SpoolSpec `json:"spool,omitempty"`

	// Monitoring creates ServiceMonitor, PrometheusRule and Grafana dashboard objects.
	// +optional
	Monitoring MonitoringSpec `json:"monitoring,omitempty"`

	// NetworkPolicy the operator writes per data center (docs/security.md): RADIUS, RadSec
	// and Diameter from anywhere, the admin port only from the operator, aaa-loadgen, pods labelled
	// aaa.openaaa.io/admin-client=true in this namespace, and the monitoring namespaces.
	// +optional
	NetworkPolicy NetworkPolicySpec `json:"networkPolicy,omitempty"`

	// Image of policing (it also runs the schema migrations).
	// +optional
	Image ImageSpec `json:"image,omitempty"`

	// LogLevel of policing: debug, info, warn or error.
	// +kubebuilder:validation:Enum=debug;info;warn;error
	// +kubebuilder:default=info
	// +optional
	LogLevel string `json:"logLevel,omitempty"`
}

// Datacenter is one data center: policing pods, their Services and autoscaler, and the
// Cassandra datacenter of the same name.
// +kubebuilder:validation:XValidation:rule="!(has(self.replicas) && has(self.autoscaling))",message="replicas and autoscaling are mutually exclusive: set one of them",fieldPath=".replicas"
type Datacenter struct {
	// Name of the data center, also the Cassandra datacenter name. Lower-case letters, digits
	// and '-', at most 20 characters.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=20
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Replicas of policing when autoscaling is not set. Default 2.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Autoscaling scales policing with a HorizontalPodAutoscaler.
	// +optional
	Autoscaling *AutoscalingSpec `json:"autoscaling,omitempty"`

	// Resources of the policing container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Scheduling of the policing pods.
	// +optional
	Scheduling SchedulingSpec `json:"scheduling,omitempty"`

	// Service settings of the RADIUS Services of this data center (and of its RadSec and
	// Diameter Services).
	// +optional
	Service ServiceSpec `json:"service,omitempty"`

	// Cassandra settings of this data center (nodes, storage, replication factor).
	// +optional
	Cassandra DatacenterCassandraSpec `json:"cassandra,omitempty"`

	// Diameter settings of this data center (its Diameter identity).
	// +optional
	Diameter *DatacenterDiameterSpec `json:"diameter,omitempty"`
}

// DatacenterDiameterSpec overrides spec.diameter for one data center.
type DatacenterDiameterSpec struct {
	// OriginHost of the policing pods of this data center instead of spec.diameter.originHost
	// (the same placeholders: {datacenter}, {realm}).
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([A-Za-z0-9-]|\.|\{datacenter\}|\{realm\})+$`
	// +optional
	OriginHost string `json:"originHost,omitempty"`
}

// AutoscalingSpec configures the HorizontalPodAutoscaler (autoscaling/v2) of one data center.
// +kubebuilder:validation:XValidation:rule="self.minReplicas <= self.maxReplicas",message="maxReplicas must be greater than or equal to minReplicas",fieldPath=".maxReplicas"
type AutoscalingSpec struct {
	// MinReplicas of policing.
	// +kubebuilder:validation:Minimum=1
	MinReplicas int32 `json:"minReplicas"`
	// MaxReplicas of policing.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MaxReplicas int32 `json:"maxReplicas"`
	// TargetCPUUtilizationPercentage of the CPU request. Default 70.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	TargetCPUUtilizationPercentage *int32 `json:"targetCPUUtilizationPercentage,omitempty"`
	// TargetRequestsPerSecond per pod, through the custom pods metric RequestsMetricName
	// (served by a metrics adapter such as prometheus-adapter). Unset: CPU only.
	// +kubebuilder:validation:Minimum=1
	// +optional
	TargetRequestsPerSecond *int32 `json:"targetRequestsPerSecond,omitempty"`
	// RequestsMetricName is the custom metric with RADIUS requests per second per pod.
	// Default openaaa_radius_requests_per_second.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	RequestsMetricName string `json:"requestsMetricName,omitempty"`
	// ScaleDownStabilizationSeconds is how long the HorizontalPodAutoscaler looks back before
	// it removes pods: it scales down to the highest recommendation of that window, so a
	// short lull does not drop pods a returning load needs. Unset: Kubernetes' default, 300
	// seconds. 0 scales down as soon as the load falls.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	// +optional
	ScaleDownStabilizationSeconds *int32 `json:"scaleDownStabilizationSeconds,omitempty"`
}

// SchedulingSpec places the policing pods.
type SchedulingSpec struct {
	// NodeSelector of the policing pods.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Tolerations of the policing pods.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// Affinity of the policing pods.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// TopologySpreadConstraints of the policing pods. Default: spread over nodes
	// (kubernetes.io/hostname, ScheduleAnyway). Their label selectors may use the label
	// app.kubernetes.io/instance=<name>-<datacenter>.
	// +optional
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	// PriorityClassName of the policing pods.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// ServiceSpec configures the Services NAS and PCEFs reach (RADIUS over UDP; RadSec and Diameter
// over TCP) of one data center.
// +kubebuilder:validation:XValidation:rule="!has(self.externalTrafficPolicy) || !has(self.type) || self.type != 'ClusterIP'",message="externalTrafficPolicy applies only to the LoadBalancer and NodePort types",fieldPath=".externalTrafficPolicy"
// +kubebuilder:validation:XValidation:rule="!has(self.loadBalancerIP) || !has(self.type) || self.type == 'LoadBalancer'",message="loadBalancerIP applies only to the LoadBalancer type",fieldPath=".loadBalancerIP"
type ServiceSpec struct {
	// Type of the Services. Default LoadBalancer.
	// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
	// +optional
	Type corev1.ServiceType `json:"type,omitempty"`
	// Annotations added to the Services (e.g. the cloud's load balancer settings).
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// LoadBalancerIP asks the cloud for this address (when it supports it).
	// +optional
	LoadBalancerIP string `json:"loadBalancerIP,omitempty"`
	// LoadBalancerSourceRanges restricts the clients of a LoadBalancer Service.
	// +optional
	LoadBalancerSourceRanges []string `json:"loadBalancerSourceRanges,omitempty"`
	// ExternalTrafficPolicy of LoadBalancer and NodePort Services. Default Local: NAS (and
	// Diameter peers with sourceCIDRs) are identified by their source address, which Cluster
	// would replace with a node's address.
	// +kubebuilder:validation:Enum=Local;Cluster
	// +optional
	ExternalTrafficPolicy corev1.ServiceExternalTrafficPolicy `json:"externalTrafficPolicy,omitempty"`
}

// DatacenterCassandraSpec configures the Cassandra datacenter of one data center.
// +kubebuilder:validation:XValidation:rule="!has(self.replicationFactor) || self.replicationFactor <= (has(self.size) ? self.size : 3)",message="replicationFactor must not exceed size, the number of Cassandra nodes of this datacenter (default 3)",fieldPath=".replicationFactor"
type DatacenterCassandraSpec struct {
	// Size is the number of Cassandra nodes (managed Cassandra only). Default 3.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	Size *int32 `json:"size,omitempty"`
	// ReplicationFactor of the keyspace in this datacenter. Default: 3, or size when smaller.
	// Never above size.
	// +kubebuilder:validation:Minimum=1
	// +optional
	ReplicationFactor *int32 `json:"replicationFactor,omitempty"`
	// Storage of each Cassandra node (managed Cassandra only).
	// +optional
	Storage CassandraStorage `json:"storage,omitempty"`
	// Resources of each Cassandra node (managed Cassandra only).
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
}

// CassandraStorage is the persistent volume of each Cassandra node.
type CassandraStorage struct {
	// StorageClassName of the volume claims. Default: the cluster's default class.
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
	// Size of each node's volume. Default 10Gi.
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`
}

// CassandraSpec selects the Cassandra cluster: managed through k8ssandra-operator (the
// default) or an existing one.
// +kubebuilder:validation:XValidation:rule="!(has(self.managed) && has(self.external))",message="spec.cassandra: managed and external are mutually exclusive"
// +kubebuilder:validation:XValidation:rule="has(self.external) == has(oldSelf.external)",message="spec.cassandra: cannot switch between managed and external Cassandra"
type CassandraSpec struct {
	// Keyspace of the sessions. Immutable.
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9_]{0,47}$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.cassandra.keyspace is immutable"
	// +kubebuilder:default=openaaa
	// +optional
	Keyspace string `json:"keyspace,omitempty"`
	// Managed Cassandra: a K8ssandraCluster (k8ssandra.io/v1alpha1) named like the AAACluster,
	// with one datacenter per data center. The default when external is not set.
	// +optional
	Managed *ManagedCassandra `json:"managed,omitempty"`
	// External Cassandra: an existing cluster whose datacenters carry the names of
	// spec.datacenters.
	// +optional
	External *ExternalCassandra `json:"external,omitempty"`
	// RowCacheSize bounds each policing pod's row cache: the session rows the pod wrote last,
	// onto which the next Interim of a session merges without reading its row (one Cassandra
	// request instead of two). About 850 bytes of memory per session: size it to the sessions
	// whose NAS reaches one pod within an interim interval. 0 turns it off. Default 100000.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000000
	// +optional
	RowCacheSize *int32 `json:"rowCacheSize,omitempty"`
}

// ManagedCassandra configures the K8ssandraCluster.
type ManagedCassandra struct {
	// ServerVersion of Cassandra: 5.0.x (Java 17). Default 5.0.9, the version OpenAAA is tested
	// with.
	// +kubebuilder:validation:Pattern=`^[0-9]+\.[0-9]+\.[0-9]+$`
	// +optional
	ServerVersion string `json:"serverVersion,omitempty"`
	// SoftPodAntiAffinity lets several Cassandra nodes share a Kubernetes node (preferred
	// instead of required anti-affinity): for test and small clusters only, since one node's
	// loss then takes several replicas. cass-operator requires cpu and memory requests and
	// limits on every data center with it (spec.datacenters[].cassandra.resources).
	// +optional
	SoftPodAntiAffinity bool `json:"softPodAntiAffinity,omitempty"`
	// JvmOptions are extra JVM flags for every Cassandra node, after the operators' own
	// (k8ssandra-operator's config.jvmOptions.additionalOptions): garbage collector settings,
	// system properties. The local cluster's tests pass Cassandra's start-up shortcuts here
	// (-Dcassandra.ring_delay_ms=1000 and the like), which production must not.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:Pattern=`^-[^\s]+$`
	// +kubebuilder:validation:items:MaxLength=256
	// +listType=atomic
	// +optional
	JvmOptions []string `json:"jvmOptions,omitempty"`
}

// ExternalCassandra is an existing Cassandra cluster.
type ExternalCassandra struct {
	// ContactPoints: host or host:port of some nodes of every datacenter.
	// +kubebuilder:validation:MinItems=1
	// +listType=atomic
	ContactPoints []string `json:"contactPoints"`
	// CredentialsSecret holds the keys username and password.
	CredentialsSecret corev1.LocalObjectReference `json:"credentialsSecret"`
}

// SpoolSpec configures how policing pods stop and where they keep undelivered accounting.
// +kubebuilder:validation:XValidation:rule="!has(self.preStopDelaySeconds) || !has(self.terminationGracePeriodSeconds) || self.preStopDelaySeconds + 15 <= self.terminationGracePeriodSeconds",message="terminationGracePeriodSeconds must leave at least 15 seconds after preStopDelaySeconds to deliver the spool",fieldPath=".terminationGracePeriodSeconds"
type SpoolSpec struct {
	// TerminationGracePeriodSeconds of the policing pods: the preStop delay, then the time
	// to answer requests in flight and deliver the spool and the proxy queue (policing gets
	// this minus the delay minus 5 seconds as radius.drainTimeout). Records still
	// undelivered when it runs out are lost, unless persistence is set. Default 120.
	// +kubebuilder:validation:Minimum=15
	// +kubebuilder:validation:Maximum=3600
	// +kubebuilder:default=120
	// +optional
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
	// PreStopDelaySeconds: a deleted pod keeps serving this long (a preStop sleep) while
	// the Services and the NAS-facing load balancers stop sending to it, then stops reading
	// and drains. Default 5.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=120
	// +kubebuilder:default=5
	// +optional
	PreStopDelaySeconds *int64 `json:"preStopDelaySeconds,omitempty"`
	// Persistence gives every policing pod a PersistentVolumeClaim of its own for the spool
	// and the proxy queue: the data center then runs as a StatefulSet, and a pod that could
	// not deliver everything leaves it on its claim for its successor of the same name.
	// Without it they live in an emptyDir that is deleted with the pod. See docs/operator.md
	// for the trade-offs.
	// +optional
	Persistence *SpoolPersistence `json:"persistence,omitempty"`
}

// SpoolPersistence is the PersistentVolumeClaim of each policing pod.
type SpoolPersistence struct {
	// Size of each claim. Default 2Gi.
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`
	// StorageClassName of the claims. Default: the cluster's default class.
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// RadiusSpec configures the RADIUS side of policing.
type RadiusSpec struct {
	// AuthPort for Access-Requests (UDP). Default 1812.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=1812
	// +optional
	AuthPort int32 `json:"authPort,omitempty"`
	// AcctPort for Accounting-Requests (UDP). Default 1813.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=1813
	// +optional
	AcctPort int32 `json:"acctPort,omitempty"`
	// ClientsSecret holds the NAS clients and their shared secrets in the key clients.yaml,
	// mounted at /etc/openaaa/clients/clients.yaml and reloaded without a restart.
	ClientsSecret corev1.LocalObjectReference `json:"clientsSecret"`
	// RequireMessageAuthenticator: Access-Requests without a valid Message-Authenticator are
	// dropped (BlastRADIUS, CVE-2024-3596). It is the default of every NAS client of
	// clients.yaml (policing's radius.requireMessageAuthenticator). Only true is accepted: a
	// NAS that cannot send Message-Authenticator is exempted on its own, with
	// requireMessageAuthenticator: false on its client in clients.yaml, so one legacy NAS never
	// opens the whole fleet.
	// +kubebuilder:default=true
	// +kubebuilder:validation:XValidation:rule="self == true",message="spec.radius.requireMessageAuthenticator: only true is accepted (BlastRADIUS, CVE-2024-3596); exempt a NAS that cannot send Message-Authenticator with requireMessageAuthenticator: false on its client in clients.yaml"
	// +optional
	RequireMessageAuthenticator *bool `json:"requireMessageAuthenticator,omitempty"`
	// RadSec (RADIUS over TLS, RFC 6614) on TCP.
	// +optional
	RadSec *RadSecSpec `json:"radsec,omitempty"`
}

// DiameterSpec configures the Diameter base protocol (RFC 6733) and the Gx policy server
// (3GPP TS 29.212) of policing: policing's diameter.* keys (docs/diameter-gx.md).
// +kubebuilder:validation:XValidation:rule="!self.enabled || has(self.realm)",message="spec.diameter.realm is required when enabled (the Origin-Realm of policing)",fieldPath=".realm"
// +kubebuilder:validation:XValidation:rule="!self.enabled || (has(self.peers) && size(self.peers) > 0)",message="spec.diameter.peers: at least one peer is required when enabled (a CER from anyone else is refused with 3010 DIAMETER_UNKNOWN_PEER)",fieldPath=".peers"
// +kubebuilder:validation:XValidation:rule="!has(self.tls) || !self.tls.enabled || !has(self.tls.port) || !has(self.port) || self.tls.port != self.port",message="spec.diameter.tls.port must differ from spec.diameter.port",fieldPath=".tls.port"
type DiameterSpec struct {
	// Enabled opens the Diameter port and serves Gx.
	Enabled bool `json:"enabled"`
	// Port (TCP). Default 3868.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=3868
	// +optional
	Port int32 `json:"port,omitempty"`
	// Realm is the Origin-Realm of policing, e.g. example.net.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?)*$`
	// +optional
	Realm string `json:"realm,omitempty"`
	// OriginHost is the Diameter identity of the policing pods of a data center, a template:
	// {datacenter} is replaced by the data center's name, {realm} by realm. Every pod of a data
	// center has the same identity: a PCEF configures the data center (its Service) as one
	// peer. spec.datacenters[].diameter.originHost overrides it for one data center.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([A-Za-z0-9-]|\.|\{datacenter\}|\{realm\})+$`
	// +kubebuilder:default="pcrf.{datacenter}.{realm}"
	// +optional
	OriginHost string `json:"originHost,omitempty"`
	// Peers are the PCEFs (PGWs) allowed to connect. A CER from anyone else is answered 3010
	// DIAMETER_UNKNOWN_PEER and the connection closed.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Peers []DiameterPeer `json:"peers,omitempty"`
	// TLS serves Diameter over TLS as well (RFC 6733 §2.1), on its own port: mutual TLS, a
	// peer's certificate must chain to the Secret's ca.crt and name its Origin-Host.
	// +optional
	TLS *DiameterTLSSpec `json:"tls,omitempty"`
}

// DiameterTLSSpec configures Diameter over TLS. The certificate comes from cert-manager
// (issuerRef: a Certificate <name>-diameter for every data center's Diameter identity and
// Services) or from a kubernetes.io/tls Secret with ca.crt; policing reloads it when it renews.
// +kubebuilder:validation:XValidation:rule="!self.enabled || has(self.issuerRef) || has(self.secretName)",message="spec.diameter.tls: issuerRef or secretName is required when enabled"
// +kubebuilder:validation:XValidation:rule="!(has(self.issuerRef) && has(self.secretName))",message="spec.diameter.tls: issuerRef and secretName are mutually exclusive"
type DiameterTLSSpec struct {
	// Enabled opens the Diameter TLS port.
	Enabled bool `json:"enabled"`
	// Port (TCP). Default 5658, Diameter over TLS's registered port.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=5658
	// +optional
	Port int32 `json:"port,omitempty"`
	// IssuerRef of a cert-manager Issuer or ClusterIssuer.
	// +optional
	IssuerRef *IssuerReference `json:"issuerRef,omitempty"`
	// SecretName of an existing kubernetes.io/tls Secret (tls.crt, tls.key, ca.crt) to use
	// instead of cert-manager.
	// +optional
	SecretName string `json:"secretName,omitempty"`
	// DNSNames added to the certificate, e.g. the public names of the load balancers.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	DNSNames []string `json:"dnsNames,omitempty"`
}

// DiameterPeer is one allowed Diameter peer: every field that is set must match its CER and
// connection.
// +kubebuilder:validation:XValidation:rule="has(self.originHost) || has(self.realm) || has(self.sourceCIDRs)",message="spec.diameter.peers[]: set originHost, realm or sourceCIDRs"
type DiameterPeer struct {
	// OriginHost of the peer's CER (case-insensitive).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	OriginHost string `json:"originHost,omitempty"`
	// Realm: the Origin-Realm of the peer's CER (case-insensitive).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Realm string `json:"realm,omitempty"`
	// SourceCIDRs: the peer's TCP connection comes from one of these networks. Through a
	// LoadBalancer or NodePort Service the source address survives only with
	// externalTrafficPolicy Local (the default).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	SourceCIDRs []CIDR `json:"sourceCIDRs,omitempty"`
}

// CIDR is an IPv4 or IPv6 network with its prefix length, e.g. 10.1.0.0/16 or 2001:db8::/32.
// +kubebuilder:validation:MaxLength=43
// +kubebuilder:validation:Pattern=`^(((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])/(3[0-2]|[12]?[0-9])|[0-9A-Fa-f]*:[0-9A-Fa-f:.]*/(12[0-8]|1[01][0-9]|[1-9]?[0-9]))$`
type CIDR string

// RadSecSpec configures RADIUS over TLS.
// +kubebuilder:validation:XValidation:rule="!self.enabled || has(self.issuerRef) || has(self.secretName)",message="spec.radius.radsec: issuerRef or secretName is required when enabled"
// +kubebuilder:validation:XValidation:rule="!(has(self.issuerRef) && has(self.secretName))",message="spec.radius.radsec: issuerRef and secretName are mutually exclusive"
type RadSecSpec struct {
	// Enabled opens the RadSec port.
	Enabled bool `json:"enabled"`
	// Port (TCP). Default 2083.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=2083
	// +optional
	Port int32 `json:"port,omitempty"`
	// IssuerRef of a cert-manager Issuer or ClusterIssuer: the operator requests a Certificate
	// named <name>-radsec for the Services of every data center.
	// +optional
	IssuerRef *IssuerReference `json:"issuerRef,omitempty"`
	// SecretName of an existing kubernetes.io/tls Secret to use instead of cert-manager.
	// +optional
	SecretName string `json:"secretName,omitempty"`
	// DNSNames added to the certificate, e.g. the public names of the load balancers.
	// +optional
	DNSNames []string `json:"dnsNames,omitempty"`
}

// EAPSpec configures the EAP server. The server certificate of tls, peap and ttls comes from
// cert-manager (issuerRef: a Certificate <name>-eap for dnsNames, the names supplicants are told
// to expect) or from a kubernetes.io/tls Secret; policing reloads it when it renews.
// +kubebuilder:validation:XValidation:rule="self.methods.all(m, m == 'md5') || has(self.issuerRef) || has(self.secretName)",message="spec.eap: issuerRef or secretName is required by the methods tls, peap and ttls (the server certificate)"
// +kubebuilder:validation:XValidation:rule="!(has(self.issuerRef) && has(self.secretName))",message="spec.eap: issuerRef and secretName are mutually exclusive"
// +kubebuilder:validation:XValidation:rule="!has(self.issuerRef) || (has(self.dnsNames) && size(self.dnsNames) > 0)",message="spec.eap.dnsNames: at least one name is required with issuerRef (the server name supplicants check)",fieldPath=".dnsNames"
// +kubebuilder:validation:XValidation:rule="!('tls' in self.methods) || has(self.clientCA)",message="spec.eap.clientCA is required by the method tls (client certificates are verified against it)",fieldPath=".clientCA"
// +kubebuilder:validation:XValidation:rule="!has(self.crl) || has(self.clientCA)",message="spec.eap.crl needs clientCA (each CRL is verified against its issuer there)",fieldPath=".crl"
type EAPSpec struct {
	// Methods offered, in order of preference: tls, peap, ttls, md5 (policing's eap.methods).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=4
	// +kubebuilder:validation:items:Enum=tls;peap;ttls;md5
	// +kubebuilder:validation:XValidation:rule="self.all(m, self.filter(n, n == m).size() == 1)",message="spec.eap.methods: a method is listed twice"
	// +listType=atomic
	Methods []string `json:"methods"`
	// IssuerRef of a cert-manager Issuer or ClusterIssuer: the operator requests a Certificate
	// named <name>-eap (Secret <name>-eap-tls) for dnsNames.
	// +optional
	IssuerRef *IssuerReference `json:"issuerRef,omitempty"`
	// SecretName of an existing kubernetes.io/tls Secret (tls.crt, tls.key) to use instead of
	// cert-manager.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	SecretName string `json:"secretName,omitempty"`
	// DNSNames of the certificate requested from issuerRef: the server names supplicants are
	// configured to check (e.g. radius.example.net).
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	DNSNames []string `json:"dnsNames,omitempty"`
	// ClientCA is the CA bundle (PEM) EAP-TLS client certificates must chain to: a key of a
	// ConfigMap, key ca.crt unless it says otherwise (a CA bundle is public: no Secret needed,
	// and trust-manager writes its bundles to ConfigMaps).
	// Required by tls. Reloaded when the ConfigMap changes.
	// +optional
	ClientCA *ConfigMapKeyRef `json:"clientCA,omitempty"`
	// CRL is the CAs' certificate revocation lists (PEM, one or more X.509 CRLs) EAP-TLS client
	// chains are checked against (policing's eap.crlFile, docs/eap.md): a key of a ConfigMap,
	// key ca.crl unless it says otherwise (CRLs are public). A client certificate they revoke
	// is refused, and so is one whose issuer has no CRL in force there (none, or past its
	// nextUpdate). Needs clientCA. Reloaded when the ConfigMap changes; a CRL that does not
	// verify against its CA is refused and the CRLs in force stay.
	// +optional
	CRL *ConfigMapKeyRef `json:"crl,omitempty"`
	// TLSIdentity is what names an EAP-TLS subscriber: the client certificate's commonName or
	// its subjectAltName (e-mail first, then DNS).
	// +kubebuilder:validation:Enum=commonName;subjectAltName
	// +kubebuilder:default=commonName
	// +optional
	TLSIdentity string `json:"tlsIdentity,omitempty"`
	// MaxConversations bounds the conversations a policing pod keeps between rounds. Default
	// 10000.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	// +kubebuilder:default=10000
	// +optional
	MaxConversations int32 `json:"maxConversations,omitempty"`
	// Timeout is how long a conversation waits for the peer's next round (also the
	// Access-Challenge's Session-Timeout). Default 30s.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('10m')",message="spec.eap.timeout must be between 1s and 10m"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// Resumption of TLS sessions by session tickets (EAP-TLS and PEAP; policing's
	// eap.resumption, docs/eap.md "Session resumption"): on when tls, peap or ttls is offered,
	// under ticket keys the operator generates once into the Secret <name>-eap-tickets
	// (key keys), which every data center's pods share, so that a re-authentication resumes
	// on any of them. Rotate by editing that Secret (one key a line, the first encrypts, all
	// decrypt): the pods reload it, no restart.
	// +optional
	Resumption *EAPResumption `json:"resumption,omitempty"`
}

// EAPResumption configures TLS session resumption.
type EAPResumption struct {
	// Enabled false turns resumption off: every authentication is a full handshake. Default true.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// Lifetime is how long after its full handshake a session may be resumed. Default 1h.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('24h')",message="spec.eap.resumption.lifetime must be between 1m and 24h"
	// +optional
	Lifetime *metav1.Duration `json:"lifetime,omitempty"`
}

// IssuerReference names a cert-manager issuer.
type IssuerReference struct {
	// Name of the issuer.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Kind: Issuer (default) or ClusterIssuer.
	// +kubebuilder:validation:Enum=Issuer;ClusterIssuer
	// +kubebuilder:default=Issuer
	// +optional
	Kind string `json:"kind,omitempty"`
	// Group of the issuer. Default cert-manager.io.
	// +kubebuilder:default=cert-manager.io
	// +optional
	Group string `json:"group,omitempty"`
}

// SubscribersSpec selects the subscriber source.
// +kubebuilder:validation:XValidation:rule="has(self.ldap) != has(self.file)",message="spec.subscribers: set exactly one of ldap or file"
type SubscribersSpec struct {
	// LDAP looks subscribers up in a directory.
	// +optional
	LDAP *LDAPSpec `json:"ldap,omitempty"`
	// File reads subscribers from a file in a ConfigMap or Secret.
	// +optional
	File *SubscriberFileSpec `json:"file,omitempty"`
}

// LDAPSpec configures the LDAP subscriber source.
type LDAPSpec struct {
	// URL of the directory, ldap:// or ldaps://.
	// +kubebuilder:validation:Pattern=`^ldaps?://`
	URL string `json:"url"`
	// BaseDN of the searches.
	// +kubebuilder:validation:MinLength=1
	BaseDN string `json:"baseDN"`
	// Filter of the searches; {username} is replaced by the escaped User-Name. Default: policing's,
	// (uid={username}).
	// +optional
	Filter string `json:"filter,omitempty"`
	// BindDN of the service account.
	// +optional
	BindDN string `json:"bindDN,omitempty"`
	// BindSecret holds the bind password (key password unless BindSecret.key says otherwise).
	// +optional
	BindSecret *SecretKeyRef `json:"bindSecret,omitempty"`
	// Profiles are named profiles (a subscriber file's profiles: a Gx data policy, RADIUS
	// defaults) that an entry picks by the value of one of its attributes, e.g. a service class:
	// policing's subscribers.ldap.profilesFile and attributes.profileName (docs/ldap.md). A
	// change of the ConfigMap rolls the pods (the file is read at start).
	// +optional
	Profiles *LDAPProfilesSpec `json:"profiles,omitempty"`
}

// LDAPProfilesSpec is the profiles file of an LDAP subscriber source.
type LDAPProfilesSpec struct {
	// ConfigMap holding the file (key profiles.yaml unless it says otherwise).
	ConfigMap ConfigMapKeyRef `json:"configMap"`
	// Attribute of an entry whose value names its profile, e.g. openaaaClass.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z][-A-Za-z0-9;]*$`
	Attribute string `json:"attribute"`
}

// SubscriberFileSpec is a subscriber file in a ConfigMap or a Secret.
// +kubebuilder:validation:XValidation:rule="has(self.configMap) != has(self.secret)",message="spec.subscribers.file: set exactly one of configMap or secret"
type SubscriberFileSpec struct {
	// ConfigMap holding the file.
	// +optional
	ConfigMap *ConfigMapKeyRef `json:"configMap,omitempty"`
	// Secret holding the file.
	// +optional
	Secret *SecretKeyRef `json:"secret,omitempty"`
}

// SecretKeyRef is a key of a Secret in the namespace of the AAACluster.
type SecretKeyRef struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Key in the Secret.
	// +optional
	Key string `json:"key,omitempty"`
}

// ConfigMapKeyRef is a key of a ConfigMap in the namespace of the AAACluster.
type ConfigMapKeyRef struct {
	// Name of the ConfigMap.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Key in the ConfigMap.
	// +optional
	Key string `json:"key,omitempty"`
}

// AccountingProxySpec forwards accounting to other RADIUS servers.
type AccountingProxySpec struct {
	// Servers receiving a copy of every accounting request.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=4
	// +listType=map
	// +listMapKey=name
	Servers []AccountingServer `json:"servers"`
}

// AccountingServer is one upstream accounting server.
type AccountingServer struct {
	// Name of the server (used in metrics).
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=40
	Name string `json:"name"`
	// Address host:port (UDP).
	// +kubebuilder:validation:MinLength=1
	Address string `json:"address"`
	// Secret holds the shared secret (key secret unless Secret.key says otherwise).
	Secret SecretKeyRef `json:"secret"`
}

// PolicySpec tunes the built-in policy and selects a Lua policy.
type PolicySpec struct {
	// RateLimitAttribute carries a subscriber's rate limit in the Access-Accept.
	// +optional
	RateLimitAttribute string `json:"rateLimitAttribute,omitempty"`
	// RejectMessage is the Reply-Message of Access-Rejects.
	// +optional
	RejectMessage string `json:"rejectMessage,omitempty"`
	// Lua runs a Lua policy script (docs/policy.md) kept in a ConfigMap. The ConfigMap is
	// mounted as a directory: a change of its content rolls no pod, policing reloads the script.
	// +optional
	Lua *LuaPolicySpec `json:"lua,omitempty"`
}

// LuaPolicySpec is a Lua policy script and its limits (policing's policy.lua.* keys).
type LuaPolicySpec struct {
	// ConfigMap holding the script (key policy.lua unless key says otherwise).
	ConfigMap ConfigMapKeyRef `json:"configMap"`
	// Budget is the time one hook call may take (policy.lua.budget, 1ms to 10s).
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1ms') && duration(self) <= duration('10s')",message="budget must be between 1ms and 10s"
	// +optional
	Budget *metav1.Duration `json:"budget,omitempty"`
	// FailMode is what a failed authorize hook decides: closed (reject) or open (the built-in policy).
	// +kubebuilder:validation:Enum=closed;open
	// +optional
	FailMode string `json:"failMode,omitempty"`
	// Memoize reuses a hook's decision while its declared inputs are unchanged (default true).
	// +optional
	Memoize *bool `json:"memoize,omitempty"`
}

// NetworkPolicySpec configures the per-DC NetworkPolicy.
type NetworkPolicySpec struct {
	// Enabled writes the NetworkPolicy. Default true; turn it off only where another layer
	// (a service mesh, the CNI's own policies) restricts the admin port.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// MonitoringNamespaceSelector selects the namespaces whose pods may reach the admin port
	// for /metrics (Prometheus). Default: the namespace named "monitoring".
	// +optional
	MonitoringNamespaceSelector *metav1.LabelSelector `json:"monitoringNamespaceSelector,omitempty"`
}

// MonitoringSpec asks for prometheus-operator and Grafana objects. Missing CRDs are reported in
// the MonitoringReady condition, never an error.
type MonitoringSpec struct {
	// ServiceMonitor scraping the admin port (/metrics) of every policing pod.
	// +optional
	ServiceMonitor *ServiceMonitorSpec `json:"serviceMonitor,omitempty"`
	// PrometheusRule with the alerts of OpenAAA about this AAACluster: the groups
	// openaaa.policing and openaaa.aaacluster of config/prometheus/prometheusrule.yaml, narrowed
	// to it. Leave it off where the operator chart's prometheusRule.enabled covers every
	// AAACluster.
	// +optional
	PrometheusRule *PrometheusRuleSpec `json:"prometheusRule,omitempty"`
	// GrafanaDashboards: a ConfigMap for the Grafana sidecar with the dashboards of
	// config/grafana (OpenAAA / Policing, OpenAAA / Operator), the files the chart ships.
	// +optional
	GrafanaDashboards *GrafanaDashboardsSpec `json:"grafanaDashboards,omitempty"`
}

// ServiceMonitorSpec configures the ServiceMonitor.
type ServiceMonitorSpec struct {
	// Enabled creates the ServiceMonitor.
	Enabled bool `json:"enabled"`
	// Interval of the scrapes. Default 30s.
	// +kubebuilder:validation:Pattern=`^[0-9]+(ms|s|m|h)$`
	// +optional
	Interval string `json:"interval,omitempty"`
	// Labels added to the ServiceMonitor (to match the Prometheus serviceMonitorSelector).
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// PrometheusRuleSpec configures the PrometheusRule.
type PrometheusRuleSpec struct {
	// Enabled creates the PrometheusRule.
	Enabled bool `json:"enabled"`
	// PolicingDownFor is how long no policing pod of a data center may answer Prometheus'
	// scrapes before OpenAAAPolicingDown fires (the rule's `for`). Unset: the `for` of
	// config/prometheus/prometheusrule.yaml, 3m, long enough that a rolling restart or a
	// rescheduled pod pages no one.
	// +kubebuilder:validation:Pattern=`^([0-9]+(ms|s|m|h))+$`
	// +optional
	PolicingDownFor string `json:"policingDownFor,omitempty"`
	// Labels added to the PrometheusRule (to match the Prometheus ruleSelector).
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// GrafanaDashboardsSpec configures the dashboard ConfigMaps.
type GrafanaDashboardsSpec struct {
	// Enabled creates the dashboard ConfigMaps.
	Enabled bool `json:"enabled"`
	// Labels of the ConfigMaps. Default grafana_dashboard: "1" (the Grafana sidecar's default).
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// ImageSpec selects the policing image.
type ImageSpec struct {
	// Repository of the image. Default: the operator's --policing-image.
	// +optional
	Repository string `json:"repository,omitempty"`
	// Tag of the image. Default: the operator's version. Also the schema version: the
	// migrations ship in the image and re-run when it changes.
	// +optional
	Tag string `json:"tag,omitempty"`
	// PullPolicy of the image.
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	// +optional
	PullPolicy corev1.PullPolicy `json:"pullPolicy,omitempty"`
	// PullSecrets for private registries.
	// +optional
	PullSecrets []corev1.LocalObjectReference `json:"pullSecrets,omitempty"`
}

// AAAClusterStatus is the observed state, written by the operator only.
type AAAClusterStatus struct {
	// ObservedGeneration is the generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready, CassandraReady, SchemaReady, PolicingReady, Degraded, MonitoringReady.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Datacenters reports each data center.
	// +listType=map
	// +listMapKey=name
	// +optional
	Datacenters []DatacenterStatus `json:"datacenters,omitempty"`
	// ReadyDatacenters is "ready/total", e.g. 3/3.
	// +optional
	ReadyDatacenters string `json:"readyDatacenters,omitempty"`
	// Schema is the applied schema.
	// +optional
	Schema *SchemaStatus `json:"schema,omitempty"`
}

// DatacenterStatus reports one data center.
type DatacenterStatus struct {
	// Name of the data center.
	Name string `json:"name"`
	// DesiredReplicas of policing.
	DesiredReplicas int32 `json:"desiredReplicas"`
	// ReadyReplicas of policing.
	ReadyReplicas int32 `json:"readyReplicas"`
	// CassandraReady tells whether the Cassandra datacenter is ready.
	CassandraReady bool `json:"cassandraReady"`
	// Ready tells whether policing is available in this data center.
	Ready bool `json:"ready"`
	// Joined tells whether policing has been available in this data center since it entered
	// the spec. Until then the data center is joining: conditions say DatacenterJoining, and
	// it does not make the cluster Degraded (a lost data center, one that had joined, does).
	// +optional
	Joined bool `json:"joined,omitempty"`
	// Endpoint of the RADIUS Service, what a NAS sends to: the load balancer's address; for a
	// NodePort Service "<node address>:<auth nodePort> (auth), <node address>:<acct nodePort>
	// (acct)" (any node's address reachable from the NAS); else the cluster IP (from inside the
	// cluster only).
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
}

// SchemaStatus reports the applied schema.
type SchemaStatus struct {
	// Version applied: the policing image tag that ran the migrations.
	// +optional
	Version string `json:"version,omitempty"`
	// Replication map applied, e.g. dc1:3,dc2:3.
	// +optional
	Replication string `json:"replication,omitempty"`
	// Job that applied it.
	// +optional
	Job string `json:"job,omitempty"`
}

// AAACluster is a geo-redundant AAA (RADIUS) deployment across data centers.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=aaa,categories=openaaa
// +kubebuilder:printcolumn:name="DCs",type=string,JSONPath=`.status.readyDatacenters`,description="ready/total data centers"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Schema",type=string,JSONPath=`.status.schema.version`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 30",message="metadata.name must be at most 30 characters: the names of the per-datacenter objects derive from it"
type AAACluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AAAClusterSpec   `json:"spec"`
	Status AAAClusterStatus `json:"status,omitempty"`
}

// AAAClusterList is a list of AAAClusters.
// +kubebuilder:object:root=true
type AAAClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AAACluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&AAACluster{}, &AAAClusterList{})
}
