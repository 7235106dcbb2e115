package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of an AAALoadTest (besides Ready: True once the report is in status).
const (
	// ConditionComplete is True when aaa-loadgen finished and its report is in status.
	ConditionComplete = "Complete"
	// ConditionFailed is True when the run failed (the Job failed, its report is unreadable, the
	// target is refused); the reason and message say why.
	ConditionFailed = "Failed"
)

// Phases of an AAALoadTest.
const (
	LoadTestPending   = "Pending"
	LoadTestRunning   = "Running"
	LoadTestSucceeded = "Succeeded"
	LoadTestFailed    = "Failed"
)

// AAALoadTestSpec is one run of the field's capacity test (Access-Request → Accounting-Start →
// N × Interim-Update → Stop) against the RADIUS Services of an AAACluster. A load test is a
// run, not a desired state: the spec cannot change; create another AAALoadTest instead.
type AAALoadTestSpec struct {
	// Cluster is the AAACluster under test.
	Cluster LoadTestClusterRef `json:"cluster"`

	// Datacenters to send to: a subset of the cluster's data centers, in this order. Default:
	// every data center of the cluster, in its spec order.
	// +listType=set
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:items:MaxLength=20
	// +optional
	Datacenters []string `json:"datacenters,omitempty"`

	// Flow is what each simulated subscriber session sends.
	// +kubebuilder:default={}
	// +optional
	Flow LoadTestFlow `json:"flow,omitempty"`

	// Distribution of the messages over the data centers: round-robin (each message of a
	// session to the next data center: the Start in dc1, the first Interim in dc2, ...; the
	// field's hardest case) or sticky (a session stays in one data center; sessions spread
	// round-robin).
	// +kubebuilder:validation:Enum=round-robin;sticky
	// +kubebuilder:default=round-robin
	// +optional
	Distribution string `json:"distribution,omitempty"`

	// Load is how hard and how long.
	Load LoadTestLoad `json:"load"`

	// Users is the simulated subscriber population. The cluster's subscriber source must know
	// them (`aaa-loadgen subscribers` writes the matching file).
	// +kubebuilder:default={}
	// +optional
	Users LoadTestUsers `json:"users,omitempty"`

	// NAS is how aaa-loadgen behaves as a NAS: retransmissions, identity.
	// +kubebuilder:default={}
	// +optional
	NAS LoadTestNAS `json:"nas,omitempty"`

	// SecretRef is the Secret, in the AAALoadTest's namespace, holding the NAS shared secret
	// (key secret unless SecretRef.key says otherwise). It must match the cluster's client
	// entry for the load generator's source addresses.
	SecretRef SecretKeyRef `json:"secretRef"`

	// ServerMetrics: read policing's /metrics (admin port 9812) of every policing pod of the
	// targeted data centers before, during and after the run, for outgoing TPS and workers
	// busy. Default true.
	// +kubebuilder:default=true
	// +optional
	ServerMetrics *bool `json:"serverMetrics,omitempty"`

	// SuccessCriteria: what the run must show to succeed. A run that measured no capacity
	// (nothing answered, mostly timeouts, errors) ends Failed, its reason naming the cause.
	// +kubebuilder:default={}
	// +optional
	SuccessCriteria LoadTestSuccessCriteria `json:"successCriteria,omitempty"`

	// Image of aaa-loadgen. Default: the operator's --loadgen-image.
	// +optional
	Image LoadgenImageSpec `json:"image,omitempty"`

	// Resources of the aaa-loadgen container. Default: requests 500m CPU and a memory request
	// and limit sized for the workers and data centers.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
}

// LoadTestClusterRef names the AAACluster under test.
type LoadTestClusterRef struct {
	// Name of the AAACluster.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=30
	Name string `json:"name"`
	// Namespace of the AAACluster. Default: the AAALoadTest's. Another namespace is refused
	// unless the operator runs with --loadtest-allow-cross-namespace (chart value
	// loadTest.allowCrossNamespace).
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// LoadTestFlow is the sequence of messages of one session.
// +kubebuilder:validation:XValidation:rule="!has(self.mode) || self.mode != 'auth' || !has(self.interims) || self.interims == 0",message="spec.flow.interims: auth mode sends Access-Requests only; leave interims unset",fieldPath=".interims"
type LoadTestFlow struct {
	// Mode: flow (Access-Request, then if accepted Accounting-Start, N × Interim-Update, Stop),
	// auth (Access-Requests only) or acct (accounting only).
	// +kubebuilder:validation:Enum=flow;auth;acct
	// +kubebuilder:default=flow
	// +optional
	Mode string `json:"mode,omitempty"`
	// Interims is the number of Interim-Updates per session. Default 5.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	Interims *int32 `json:"interims,omitempty"`
	// AuthMethod: pap or chap.
	// +kubebuilder:validation:Enum=pap;chap
	// +kubebuilder:default=pap
	// +optional
	AuthMethod string `json:"authMethod,omitempty"`
}

// LoadTestLoad is the offered load and its bounds.
// +kubebuilder:validation:XValidation:rule="duration(self.duration) > duration('0s') && duration(self.duration) <= duration('1h')",message="spec.load.duration must be more than 0s and at most 1h",fieldPath=".duration"
// +kubebuilder:validation:XValidation:rule="!has(self.ramp) || duration(self.ramp) < duration(self.duration)",message="spec.load.ramp must be shorter than spec.load.duration",fieldPath=".ramp"
type LoadTestLoad struct {
	// Duration of the run, at most 1h (e.g. 30s, 5m).
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	Duration string `json:"duration"`
	// Ramp: start the workers (closed loop) or raise the rate (open loop) linearly over this
	// time, shorter than duration.
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +optional
	Ramp string `json:"ramp,omitempty"`
	// Concurrency: closed loop, the requests in flight (one per worker); open loop (rate set),
	// the most sessions in progress at once. Default 16.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=512
	// +kubebuilder:default=16
	// +optional
	Concurrency int32 `json:"concurrency,omitempty"`
	// Rate selects the open loop: messages offered per second, whatever the answers. Unset:
	// closed loop (each worker sends its next message when the previous one is answered).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=200000
	// +optional
	Rate *int32 `json:"rate,omitempty"`
	// MaxSessions ends the run after this many sessions (unset: only the duration bounds it).
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxSessions *int64 `json:"maxSessions,omitempty"`
}

// LoadTestUsers is the subscriber population, made from patterns.
type LoadTestUsers struct {
	// Count of subscribers. A subscriber has one session at a time. Default 10000.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	// +kubebuilder:default=10000
	// +optional
	Count int32 `json:"count,omitempty"`
	// UserPattern makes the User-Name from the 1-based index (printf). Default user%05d.
	// +kubebuilder:validation:Pattern=`^[^%]*%0?[0-9]*d[^%]*$`
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:default="user%05d"
	// +optional
	UserPattern string `json:"userPattern,omitempty"`
	// PasswordPattern makes the password from the 1-based index (printf). Default pass%05d.
	// +kubebuilder:validation:Pattern=`^[^%]*%0?[0-9]*d[^%]*$`
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:default="pass%05d"
	// +optional
	PasswordPattern string `json:"passwordPattern,omitempty"`
	// FramedIPBase is the Framed-IP-Address of the first subscriber (accounting mode); the next
	// ones follow. Default 10.0.0.1.
	// +kubebuilder:validation:Pattern=`^(\d{1,3}\.){3}\d{1,3}$`
	// +kubebuilder:default="10.0.0.1"
	// +optional
	FramedIPBase string `json:"framedIPBase,omitempty"`
}

// LoadTestNAS is how aaa-loadgen behaves as a NAS.
// +kubebuilder:validation:XValidation:rule="!has(self.timeout) || (duration(self.timeout) >= duration('10ms') && duration(self.timeout) <= duration('30s'))",message="spec.nas.timeout must be between 10ms and 30s",fieldPath=".timeout"
type LoadTestNAS struct {
	// Timeout for a reply before a retransmission (the same packet, so the server can answer
	// it from its duplicate cache, RFC 5080). Default 1s.
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:default="1s"
	// +optional
	Timeout string `json:"timeout,omitempty"`
	// Retries: retransmissions before a request counts as timed out (closed loop; the open loop
	// never retransmits). Default 2.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	// +kubebuilder:default=2
	// +optional
	Retries *int32 `json:"retries,omitempty"`
	// Identifier sent as NAS-Identifier. Default aaa-loadgen.
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:default="aaa-loadgen"
	// +optional
	Identifier string `json:"identifier,omitempty"`
	// IPAddress sent as NAS-IP-Address. Default: the load generator pod's IP.
	// +kubebuilder:validation:Pattern=`^(\d{1,3}\.){3}\d{1,3}$`
	// +optional
	IPAddress string `json:"ipAddress,omitempty"`
	// RequireMessageAuthenticator in every reply (always verified when present).
	// +optional
	RequireMessageAuthenticator bool `json:"requireMessageAuthenticator,omitempty"`
}

// LoadTestSuccessCriteria are the bounds a run must stay within to be Succeeded. Ratios are
// decimal strings from 0 to 1 (Kubernetes APIs carry no floating-point numbers).
type LoadTestSuccessCriteria struct {
	// MinAnsweredRatio: requests answered / requests that ended (answered, timed out or
	// failed; those in flight when the run ended do not count), at least. Default "0.99".
	// +kubebuilder:validation:Pattern=`^(0(\.[0-9]{1,6})?|1(\.0{1,6})?)$`
	// +kubebuilder:default="0.99"
	// +optional
	MinAnsweredRatio string `json:"minAnsweredRatio,omitempty"`
	// MaxTimeoutRatio: requests timed out (after every retransmission) / requests that ended,
	// at most. Default "0.01".
	// +kubebuilder:validation:Pattern=`^(0(\.[0-9]{1,6})?|1(\.0{1,6})?)$`
	// +kubebuilder:default="0.01"
	// +optional
	MaxTimeoutRatio string `json:"maxTimeoutRatio,omitempty"`
	// MaxErrors: invalid replies (bad authenticator, Message-Authenticator) and socket errors,
	// at most. Default 0.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=0
	// +optional
	MaxErrors *int64 `json:"maxErrors,omitempty"`
	// MaxRejectRatio: Access-Rejects / Access-Requests answered, at most (the simulated users
	// are the cluster's: a reject means the subscriber source does not know them). Default
	// "0.01"; "1" for a test of rejects.
	// +kubebuilder:validation:Pattern=`^(0(\.[0-9]{1,6})?|1(\.0{1,6})?)$`
	// +kubebuilder:default="0.01"
	// +optional
	MaxRejectRatio string `json:"maxRejectRatio,omitempty"`
}

// LoadgenImageSpec selects the aaa-loadgen image.
type LoadgenImageSpec struct {
	// Repository of the image. Default: the operator's --loadgen-image.
	// +optional
	Repository string `json:"repository,omitempty"`
	// Tag of the image. Default: the operator's --loadgen-image tag, else its version.
	// +optional
	Tag string `json:"tag,omitempty"`
	// PullPolicy of the image. Default IfNotPresent.
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	// +optional
	PullPolicy corev1.PullPolicy `json:"pullPolicy,omitempty"`
	// PullSecrets for private registries.
	// +optional
	PullSecrets []corev1.LocalObjectReference `json:"pullSecrets,omitempty"`
}

// LoadTestFigures is the field's report (incoming TPS, outgoing TPS, workers busy, avg auth
// ms, avg acct ms) plus p99 and the counts behind them. Rates and latencies are decimal
// strings (e.g. "7012.4", "2.513"): Kubernetes APIs carry no floating-point numbers.
type LoadTestFigures struct {
	// IncomingTPS: requests answered per second (the load generator's count).
	IncomingTPS string `json:"incomingTPS"`
	// OutgoingTPS: transactions per second as policing counts them
	// (openaaa_transactions_total: each request it processes or sends, e.g. about 2× incoming
	// with an accounting proxy). Absent when the servers' metrics were not read.
	// +optional
	OutgoingTPS string `json:"outgoingTPS,omitempty"`
	// WorkersBusy: policing's busy RADIUS workers (openaaa_radius_workers_busy), summed over
	// the scraped pods, averaged over samples every 500 ms. Absent without server metrics or in
	// runs shorter than one sample.
	// +optional
	WorkersBusy string `json:"workersBusy,omitempty"`
	// Workers: policing's RADIUS workers (openaaa_radius_workers) of the scraped pods.
	// +optional
	Workers string `json:"workers,omitempty"`
	// AvgAuthMs: mean Access-Request latency seen by the NAS (send to reply, retransmissions
	// included).
	AvgAuthMs string `json:"avgAuthMs"`
	// AvgAcctMs: mean Accounting-Request latency seen by the NAS.
	AvgAcctMs string `json:"avgAcctMs"`
	// P99Ms: 99th percentile latency of every answered request.
	P99Ms string `json:"p99Ms"`
	// Answered requests.
	Answered int64 `json:"answered"`
	// Timeouts: requests unanswered after every retransmission.
	Timeouts int64 `json:"timeouts"`
	// Errors: invalid replies (bad authenticator, Message-Authenticator) and socket errors.
	Errors int64 `json:"errors"`
	// Accepts: Access-Accepts.
	Accepts int64 `json:"accepts"`
	// Rejects: Access-Rejects (and Challenges).
	Rejects int64 `json:"rejects"`
}

// LoadTestReport is the report of the whole run.
type LoadTestReport struct {
	LoadTestFigures `json:",inline"`
	// Seconds the run lasted.
	Seconds string `json:"seconds"`
	// Sent: requests sent (first transmissions).
	Sent int64 `json:"sent"`
	// Sessions begun.
	Sessions int64 `json:"sessions"`
	// SessionsCompleted: sessions whose last message was answered.
	SessionsCompleted int64 `json:"sessionsCompleted"`
	// DroppedByReason: the requests policing dropped during the run, by reason
	// (openaaa_radius_requests_dropped_total of the scraped pods: unknown_client,
	// bad_authenticator, overload, ...). Absent without server metrics or drops.
	// +optional
	DroppedByReason map[string]int64 `json:"droppedByReason,omitempty"`
}

// DatacenterLoadReport is one data center's share: the requests sent to its RADIUS Service and
// the figures of its policing pods.
type DatacenterLoadReport struct {
	// Name of the data center.
	Name            string `json:"name"`
	LoadTestFigures `json:",inline"`
}

// AAALoadTestStatus is the observed state, written by the operator only.
type AAALoadTestStatus struct {
	// ObservedGeneration is the generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Phase: Pending (waiting for the cluster), Running, Succeeded or Failed (the run failed, or
	// its figures missed spec.successCriteria: the report is in status all the same).
	// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Failed
	// +optional
	Phase string `json:"phase,omitempty"`
	// Job running aaa-loadgen.
	// +optional
	Job string `json:"job,omitempty"`
	// StartTime: when the Job was created.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime: when the operator saw the run end.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Conditions: Ready (the report is in), Complete, Failed.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Report of the whole run.
	// +optional
	Report *LoadTestReport `json:"report,omitempty"`
	// Datacenters: the report of each data center.
	// +listType=map
	// +listMapKey=name
	// +optional
	Datacenters []DatacenterLoadReport `json:"datacenters,omitempty"`
}

// AAALoadTest runs the field's capacity test against an AAACluster as a Job of aaa-loadgen
// and reports its result in status.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=aaalt,categories=openaaa
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.cluster.name`,priority=1
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="TPS",type=string,JSONPath=`.status.report.incomingTPS`,description="incoming TPS (answered requests per second)"
// +kubebuilder:printcolumn:name="Out TPS",type=string,JSONPath=`.status.report.outgoingTPS`,priority=1,description="outgoing TPS (policing's transactions per second)"
// +kubebuilder:printcolumn:name="Auth ms",type=string,JSONPath=`.status.report.avgAuthMs`,description="average Access-Request latency"
// +kubebuilder:printcolumn:name="Acct ms",type=string,JSONPath=`.status.report.avgAcctMs`,description="average Accounting-Request latency"
// +kubebuilder:printcolumn:name="p99 ms",type=string,JSONPath=`.status.report.p99Ms`
// +kubebuilder:printcolumn:name="Timeouts",type=integer,JSONPath=`.status.report.timeouts`,priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 52",message="metadata.name must be at most 52 characters: the Job is named <name>-loadgen"
type AAALoadTest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: a load test is a run; create a new AAALoadTest"
	Spec   AAALoadTestSpec   `json:"spec"`
	Status AAALoadTestStatus `json:"status,omitempty"`
}

// AAALoadTestList is a list of AAALoadTests.
// +kubebuilder:object:root=true
type AAALoadTestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AAALoadTest `json:"items"`
}

func init() {
	SchemeBuilder.Register(&AAALoadTest{}, &AAALoadTestList{})
}
