package controllers

import (
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
)

// The load generator's Job: one Job (one pod) per AAALoadTest, targeting every selected data
// center. One process must hold each session to send its Start to dc1 and its first Interim to
// dc2 (round-robin, the field's hardest case); it reports every data center's share itself.

const (
	// LabelLoadTest is on the Job and pod of an AAALoadTest.
	LabelLoadTest = "aaa.openaaa.io/loadtest"

	componentLoadTest   = "loadtest"
	loadgenContainer    = "loadgen"
	loadgenSecretDir    = "/etc/aaa-loadgen/secret"
	terminationLogPath  = "/dev/termination-log"
	defaultLoadgenKey   = "secret"
	defaultNASTimeout   = time.Second
	defaultNASRetries   = int32(2)
	defaultInterims     = int32(5)
	defaultConcurrency  = int32(16)
	defaultUsers        = int32(10000)
	loadgenStartupSlack = 120 * time.Second // image pull, DNS, the first scrape
	// loadgenCountBound: aaa-loadgen needs a message bound; the duration is the real one.
	loadgenCountBound = "1000000000000"
)

func loadgenJobName(lt *aaav1.AAALoadTest) string { return lt.Name + "-loadgen" }

// loadTestDefaults returns a copy of spec with every default applied (those the API server
// applies too, for objects written before a default existed). Pure.
func loadTestDefaults(in aaav1.AAALoadTestSpec, opts Options) aaav1.AAALoadTestSpec {
	s := *in.DeepCopy()
	if s.Flow.Mode == "" {
		s.Flow.Mode = "flow"
	}
	if s.Flow.AuthMethod == "" {
		s.Flow.AuthMethod = "pap"
	}
	if s.Flow.Interims == nil {
		s.Flow.Interims = ptr.To(defaultInterims)
		if s.Flow.Mode == "auth" {
			s.Flow.Interims = ptr.To[int32](0)
		}
	}
	if s.Distribution == "" {
		s.Distribution = "round-robin"
	}
	if s.Load.Concurrency == 0 {
		s.Load.Concurrency = defaultConcurrency
	}
	if s.Users.Count == 0 {
		s.Users.Count = defaultUsers
	}
	if s.Users.UserPattern == "" {
		s.Users.UserPattern = "user%05d"
	}
	if s.Users.PasswordPattern == "" {
		s.Users.PasswordPattern = "pass%05d"
	}
	if s.Users.FramedIPBase == "" {
		s.Users.FramedIPBase = "10.0.0.1"
	}
	if s.NAS.Timeout == "" {
		s.NAS.Timeout = defaultNASTimeout.String()
	}
	if s.NAS.Retries == nil {
		s.NAS.Retries = ptr.To(defaultNASRetries)
	}
	if s.NAS.Identifier == "" {
		s.NAS.Identifier = "aaa-loadgen"
	}
	s.SuccessCriteria = successCriteriaDefaults(s.SuccessCriteria)
	if s.SecretRef.Key == "" {
		s.SecretRef.Key = defaultLoadgenKey
	}
	if s.ServerMetrics == nil {
		s.ServerMetrics = ptr.To(true)
	}
	defaultImageFields(&s.Image.Repository, &s.Image.Tag, &s.Image.PullPolicy, opts.LoadgenImage, DefaultLoadgenImage, opts.Version)
	return s
}

// loadTestDatacenters are the data centers a load test sends to: spec.datacenters, or every
// data center of the cluster. An error names a data center the cluster does not have. Pure.
func loadTestDatacenters(spec aaav1.AAALoadTestSpec, cluster aaav1.AAAClusterSpec) ([]string, error) {
	var all []string
	for _, dc := range cluster.Datacenters {
		all = append(all, dc.Name)
	}
	if len(spec.Datacenters) == 0 {
		return all, nil
	}
	for _, dc := range spec.Datacenters {
		if !slices.Contains(all, dc) {
			return nil, fmt.Errorf("spec.datacenters: %q is not a data center of the cluster (it has %v)", dc, all)
		}
	}
	return spec.Datacenters, nil
}

// loadTestNamespace is the namespace of the target AAACluster.
func loadTestNamespace(lt *aaav1.AAALoadTest) string {
	if ns := lt.Spec.Cluster.Namespace; ns != "" {
		return ns
	}
	return lt.Namespace
}

// loadgenActiveDeadline bounds the Job: the run, the last request's retransmissions and the
// start-up. Pure; spec with defaults.
func loadgenActiveDeadline(spec aaav1.AAALoadTestSpec) (int64, error) {
	d, err := time.ParseDuration(spec.Load.Duration)
	if err != nil {
		return 0, fmt.Errorf("spec.load.duration: %w", err)
	}
	timeout, err := time.ParseDuration(spec.NAS.Timeout)
	if err != nil {
		return 0, fmt.Errorf("spec.nas.timeout: %w", err)
	}
	total := d + timeout*time.Duration(*spec.NAS.Retries+1) + loadgenStartupSlack
	return int64(math.Ceil(total.Seconds())), nil
}

// loadgenResources: the memory of the latency histograms grows with workers × data centers
// (about 48 KiB each, four per worker and two per worker and data center) and the population
// with the users. Pure.
func loadgenResources(spec aaav1.AAALoadTestSpec, dcs int) corev1.ResourceRequirements {
	if spec.Resources != nil {
		return *spec.Resources
	}
	const hist = 48 << 10
	bytes := int64(64<<20) + int64(spec.Load.Concurrency)*int64(4+2*dcs)*hist + int64(spec.Users.Count)*256
	mem := resource.NewQuantity((bytes+(1<<20)-1)>>20<<20, resource.BinarySI)
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: mustQty("500m"), corev1.ResourceMemory: *mem},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: *mem},
	}
}

// loadgenArgs are aaa-loadgen's arguments. metrics maps a data center to the admin addresses
// (ip:port) of its policing pods. Pure; spec with defaults.
func loadgenArgs(spec aaav1.AAALoadTestSpec, c *aaav1.AAACluster, cspec aaav1.AAAClusterSpec, dcs []string, metrics map[string][]string) []string {
	args := []string{"run", "--quiet", "--json",
		"--summary-file", terminationLogPath,
		"--mode", spec.Flow.Mode,
		"--auth", spec.Flow.AuthMethod,
		"--interims", strconv.Itoa(int(*spec.Flow.Interims)),
		"--distribution", spec.Distribution,
		"--concurrency", strconv.Itoa(int(spec.Load.Concurrency)),
		"--duration", spec.Load.Duration,
		"--count", loadgenCountBound,
		"--users", strconv.Itoa(int(spec.Users.Count)),
		"--user-pattern", spec.Users.UserPattern,
		"--password-pattern", spec.Users.PasswordPattern,
		"--framed-ip-base", spec.Users.FramedIPBase,
		"--timeout", spec.NAS.Timeout,
		"--retries", strconv.Itoa(int(*spec.NAS.Retries)),
		"--nas-id", spec.NAS.Identifier,
		"--secret-file", loadgenSecretDir + "/" + spec.SecretRef.Key,
	}
	// The pod's own address by default: a NAS sends its own address (the kubelet expands
	// $(POD_IP) from the environment).
	nasIP := "$(POD_IP)"
	if spec.NAS.IPAddress != "" {
		nasIP = spec.NAS.IPAddress
	}
	args = append(args, "--nas-ip", nasIP)
	if spec.Load.Rate != nil {
		args = append(args, "--rate", strconv.Itoa(int(*spec.Load.Rate)))
	}
	if spec.Load.Ramp != "" {
		args = append(args, "--ramp", spec.Load.Ramp)
	}
	if spec.Load.MaxSessions != nil {
		args = append(args, "--sessions", strconv.FormatInt(*spec.Load.MaxSessions, 10))
	}
	if spec.NAS.RequireMessageAuthenticator {
		args = append(args, "--require-reply-ma")
	}
	ns := c.Namespace
	for _, dc := range dcs {
		// The Service's DNS name: the pod reaches the cluster IP from its own address, which the
		// cluster's NAS clients must therefore allow.
		host := fmt.Sprintf("%s.%s.svc", radiusServiceName(c, dc), ns)
		args = append(args, "--target", fmt.Sprintf("%s=%s/%d", dc, net.JoinHostPort(host, strconv.Itoa(int(cspec.Radius.AuthPort))), cspec.Radius.AcctPort))
	}
	if ptr.Deref(spec.ServerMetrics, true) {
		n := len(args)
		for _, dc := range dcs {
			for _, addr := range metrics[dc] {
				args = append(args, "--metrics", dc+"=http://"+addr+"/metrics")
			}
		}
		if len(args) > n {
			// A pod gone between the Job's creation and the run must not fail the run.
			args = append(args, "--metrics-best-effort")
		}
	}
	return args
}

// buildLoadgenJob is the Job running aaa-loadgen for an AAALoadTest: one pod, no retry (a
// second attempt would be another run), bounded by activeDeadlineSeconds, its report written
// to the container's termination message. Pure; spec and cspec with defaults.
func buildLoadgenJob(lt *aaav1.AAALoadTest, spec aaav1.AAALoadTestSpec, c *aaav1.AAACluster, cspec aaav1.AAAClusterSpec, dcs []string, metrics map[string][]string) (*batchv1.Job, error) {
	deadline, err := loadgenActiveDeadline(spec)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{
		LabelName:      "aaa-loadgen",
		LabelInstance:  lt.Name,
		LabelComponent: componentLoadTest,
		LabelPartOf:    partOf,
		LabelManagedBy: managedBy,
		LabelCluster:   c.Name,
		LabelLoadTest:  lt.Name,
	}
	container := corev1.Container{
		Name:            loadgenContainer,
		Image:           spec.Image.Repository + ":" + spec.Image.Tag,
		ImagePullPolicy: spec.Image.PullPolicy,
		Command:         []string{"aaa-loadgen"},
		Args:            loadgenArgs(spec, c, cspec, dcs, metrics),
		Env: []corev1.EnvVar{
			{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		},
		Resources:       loadgenResources(spec, len(dcs)),
		SecurityContext: containerSecurityContext(),
		VolumeMounts:    []corev1.VolumeMount{{Name: "nas-secret", MountPath: loadgenSecretDir, ReadOnly: true}},
		// The summary, or on a failure without one the end of the log, reaches the operator
		// through the pod status.
		TerminationMessagePath:   terminationLogPath,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:      loadgenJobName(lt),
			Namespace: lt.Namespace,
			Labels:    labels,
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To[int32](0),
			ActiveDeadlineSeconds: ptr.To(deadline),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: ptr.To(false),
					EnableServiceLinks:           ptr.To(false),
					SecurityContext:              podSecurityContext(),
					ImagePullSecrets:             spec.Image.PullSecrets,
					Containers:                   []corev1.Container{container},
					Volumes: []corev1.Volume{{Name: "nas-secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
						SecretName:  spec.SecretRef.Name,
						Items:       []corev1.KeyToPath{{Key: spec.SecretRef.Key, Path: spec.SecretRef.Key}},
						DefaultMode: ptr.To[int32](0o440),
					}}}},
				},
			},
		},
	}, nil
}
