package controllers

import (
	"context"
	"fmt"
	"path"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
)

// annotationAutoscaled on a Deployment says its replicas belong to a HorizontalPodAutoscaler.
const annotationAutoscaled = "aaa.openaaa.io/autoscaled"

// Port names of the policing container and Services.
const (
	portAuth     = "radius-auth"
	portAcct     = "radius-acct"
	portRadSec   = "radsec"
	portDiameter = "diameter"
	portDiamTLS  = "diameter-tls"
	portAdmin    = "admin"
)

// stateVolume holds the accounting spool and the proxy queue (an emptyDir, or the
// StatefulSet's claim with spec.spool.persistence).
const stateVolume = "state"

// dcObserved is what the datacenters step saw of one data center.
type dcObserved struct {
	complete bool // every object of the DC applied: what follows is whole
	deployed bool
	workload *workloadObserved // the Deployment or StatefulSet; nil when not applied
	service  *corev1.Service
}

// workloadObserved is what status needs of a data center's Deployment or StatefulSet.
type workloadObserved struct {
	replicas      *int32
	readyReplicas int32
	ready         bool
}

// observeWorkload reads the applied Deployment or StatefulSet. Pure.
func observeWorkload(o client.Object) *workloadObserved {
	switch w := o.(type) {
	case *appsv1.Deployment:
		return &workloadObserved{replicas: w.Spec.Replicas, readyReplicas: w.Status.ReadyReplicas, ready: deploymentReady(w)}
	case *appsv1.StatefulSet:
		return &workloadObserved{replicas: w.Spec.Replicas, readyReplicas: w.Status.ReadyReplicas, ready: statefulSetReady(w)}
	}
	return nil
}

func mustQty(s string) resource.Quantity { return resource.MustParse(s) }

func podSecurityContext() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		RunAsUser:      ptr.To[int64](65532),
		RunAsGroup:     ptr.To[int64](65532),
		FSGroup:        ptr.To[int64](65532),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func containerSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		RunAsNonRoot:             ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// credentialsVolume mounts the Cassandra username and password as files.
func credentialsVolume(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec) corev1.Volume {
	return corev1.Volume{Name: "cassandra-credentials", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName:  credentialsSecret(c, spec),
		Items:       []corev1.KeyToPath{{Key: "username", Path: "username"}, {Key: "password", Path: "password"}},
		DefaultMode: ptr.To[int32](0o440),
	}}}
}

// radsecSecretName is the TLS Secret of RadSec: cert-manager's or the user's.
func radsecSecretName(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec) string {
	if rs := spec.Radius.RadSec; rs != nil && rs.SecretName != "" {
		return rs.SecretName
	}
	return certificateSecretName(c)
}

// diameterSecretName is the TLS Secret of Diameter over TLS: cert-manager's or the user's.
func diameterSecretName(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec) string {
	if t := spec.Diameter.TLS; t.SecretName != "" {
		return t.SecretName
	}
	return diameterCertificateSecretName(c)
}

// eapSecretName is the TLS Secret of the EAP server: cert-manager's or the user's.
func eapSecretName(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec) string {
	if spec.EAP.SecretName != "" {
		return spec.EAP.SecretName
	}
	return eapCertificateSecretName(c)
}

// certificateVolume mounts a TLS Secret read-only as a directory: no subPath, so that a renewed
// certificate reaches the files and policing reloads it without a restart.
func certificateVolume(name, dir, secret string) (corev1.VolumeMount, corev1.Volume) {
	return corev1.VolumeMount{Name: name, MountPath: dir, ReadOnly: true},
		corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: secret, DefaultMode: ptr.To[int32](0o440),
		}}}
}

// buildPodTemplate is the policing pod of one data center. configHash goes into the pod
// template so a change of configuration or Secrets rolls the pods. Pure.
func buildPodTemplate(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec, dc aaav1.Datacenter, configHash string) corev1.PodTemplateSpec {
	podLabels := mergeLabels(podSelector(c, dc.Name), map[string]string{LabelCluster: c.Name, LabelDC: dc.Name, LabelPartOf: partOf, LabelComponent: componentRadius})
	ports := []corev1.ContainerPort{
		{Name: portAuth, ContainerPort: spec.Radius.AuthPort, Protocol: corev1.ProtocolUDP},
		{Name: portAcct, ContainerPort: spec.Radius.AcctPort, Protocol: corev1.ProtocolUDP},
	}
	if radsecEnabled(spec) {
		ports = append(ports, corev1.ContainerPort{Name: portRadSec, ContainerPort: spec.Radius.RadSec.Port, Protocol: corev1.ProtocolTCP})
	}
	if diameterEnabled(spec) {
		ports = append(ports, corev1.ContainerPort{Name: portDiameter, ContainerPort: spec.Diameter.Port, Protocol: corev1.ProtocolTCP})
	}
	if diameterTLSEnabled(spec) {
		ports = append(ports, corev1.ContainerPort{Name: portDiamTLS, ContainerPort: spec.Diameter.TLS.Port, Protocol: corev1.ProtocolTCP})
	}
	if eapForwardEnabled(spec) {
		ports = append(ports, corev1.ContainerPort{Name: portEAPForward, ContainerPort: EAPForwardPort, Protocol: corev1.ProtocolUDP})
	}
	ports = append(ports, corev1.ContainerPort{Name: portAdmin, ContainerPort: AdminPort, Protocol: corev1.ProtocolTCP})

	tokenVolume, tokenMount := adminTokenVolume(c)
	mounts := []corev1.VolumeMount{
		{Name: "config", MountPath: configFile, SubPath: configKey, ReadOnly: true},
		{Name: "clients", MountPath: clientsDir, ReadOnly: true},
		{Name: "cassandra-credentials", MountPath: cassandraCredsDir, ReadOnly: true},
		tokenMount,
		{Name: "tmp", MountPath: "/tmp"},
		{Name: stateVolume, MountPath: stateDir},
	}
	volumes := []corev1.Volume{
		{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: configMapName(c, dc.Name)},
		}}},
		{Name: "clients", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: spec.Radius.ClientsSecret.Name, DefaultMode: ptr.To[int32](0o440),
		}}},
		credentialsVolume(c, spec),
		tokenVolume,
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(mustQty("64Mi"))}}},
	}
	if spec.Spool.Persistence == nil {
		// The accounting spool and the proxy queue (policing's defaults under /var/lib/openaaa):
		// they survive container restarts, not the pod's deletion — the pod delivers them
		// before it exits (preStop, grace period). With persistence the StatefulSet's claim
		// of the same name is mounted instead (buildStatefulSet).
		volumes = append(volumes, corev1.Volume{Name: stateVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(mustQty("2Gi"))}}})
	}
	tlsSecret := func(name, dir, secret string) {
		m, v := certificateVolume(name, dir, secret)
		mounts, volumes = append(mounts, m), append(volumes, v)
	}
	if radsecEnabled(spec) {
		tlsSecret("radsec-tls", tlsDir, radsecSecretName(c, spec))
	}
	if diameterTLSEnabled(spec) {
		tlsSecret("diameter-tls", diameterTLSDir, diameterSecretName(c, spec))
	}
	if eapUsesTLS(spec) {
		tlsSecret("eap-tls", eapTLSDir, eapSecretName(c, spec))
	}
	if eapForwardEnabled(spec) {
		v, m := eapForwardVolume(c)
		mounts, volumes = append(mounts, m), append(volumes, v)
	}
	if eapResumptionEnabled(spec) {
		v, m := eapTicketsVolume(c)
		mounts, volumes = append(mounts, m), append(volumes, v)
	}
	// A ConfigMap key mounted in a directory, not a subPath: the kubelet updates a mounted
	// ConfigMap by swapping the directory's ..data symlink, which a subPath mount never sees
	// (docs/hot-reload.md).
	configMapKey := func(name, dir string, ref aaav1.ConfigMapKeyRef) {
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: dir, ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name},
			Items:                []corev1.KeyToPath{{Key: ref.Key, Path: ref.Key}},
		}}})
	}
	if eapEnabled(spec) && spec.EAP.ClientCA != nil {
		configMapKey("eap-ca", eapCADir, *spec.EAP.ClientCA)
		if spec.EAP.CRL != nil {
			configMapKey("eap-crl", eapCRLDir, *spec.EAP.CRL)
		}
	}
	if sub := spec.Subscribers; sub != nil {
		if sub.LDAP != nil && sub.LDAP.Profiles != nil {
			configMapKey("ldap-profiles", ldapProfilesDir, sub.LDAP.Profiles.ConfigMap)
		}
		if sub.LDAP != nil && sub.LDAP.BindSecret != nil {
			mounts = append(mounts, corev1.VolumeMount{Name: "ldap-bind", MountPath: ldapDir, ReadOnly: true})
			volumes = append(volumes, corev1.Volume{Name: "ldap-bind", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: sub.LDAP.BindSecret.Name, DefaultMode: ptr.To[int32](0o440),
				Items: []corev1.KeyToPath{{Key: sub.LDAP.BindSecret.Key, Path: sub.LDAP.BindSecret.Key}},
			}}})
		}
		if f := sub.File; f != nil {
			mounts = append(mounts, corev1.VolumeMount{Name: "subscribers", MountPath: subscribersDir, ReadOnly: true})
			if f.ConfigMap != nil {
				volumes = append(volumes, corev1.Volume{Name: "subscribers", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: f.ConfigMap.Name},
					Items:                []corev1.KeyToPath{{Key: f.ConfigMap.Key, Path: f.ConfigMap.Key}},
				}}})
			} else {
				volumes = append(volumes, corev1.Volume{Name: "subscribers", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName: f.Secret.Name, DefaultMode: ptr.To[int32](0o440),
					Items: []corev1.KeyToPath{{Key: f.Secret.Key, Path: f.Secret.Key}},
				}}})
			}
		}
	}
	if pol := spec.Policy; pol != nil && pol.Lua != nil {
		configMapKey("policy", policyDir, pol.Lua.ConfigMap)
	}
	if ap := spec.AccountingProxy; ap != nil {
		var sources []corev1.VolumeProjection
		for _, s := range ap.Servers {
			sources = append(sources, corev1.VolumeProjection{Secret: &corev1.SecretProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: s.Secret.Name},
				Items:                []corev1.KeyToPath{{Key: s.Secret.Key, Path: path.Join(s.Name, s.Secret.Key)}},
			}})
		}
		mounts = append(mounts, corev1.VolumeMount{Name: "accounting-proxy", MountPath: accountingProxyDir, ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: "accounting-proxy", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: sources, DefaultMode: ptr.To[int32](0o440),
		}}})
	}

	spread := dc.Scheduling.TopologySpreadConstraints
	if len(spread) == 0 {
		spread = []corev1.TopologySpreadConstraint{{
			MaxSkew:           1,
			TopologyKey:       "kubernetes.io/hostname",
			WhenUnsatisfiable: corev1.ScheduleAnyway,
			LabelSelector:     &metav1.LabelSelector{MatchLabels: podSelector(c, dc.Name)},
		}}
	}
	probe := func(p string, period int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: p, Port: intstr.FromString(portAdmin)}},
			PeriodSeconds:    period,
			TimeoutSeconds:   2,
			FailureThreshold: 3,
		}
	}
	container := corev1.Container{
		Name:            "policing",
		Image:           imageRef(spec),
		ImagePullPolicy: spec.Image.PullPolicy,
		Command:         []string{"policing"},
		Args:            []string{"serve", "--config", configFile},
		Ports:           ports,
		Env: []corev1.EnvVar{
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		},
		Resources:       dc.Resources,
		VolumeMounts:    mounts,
		SecurityContext: containerSecurityContext(),
		ReadinessProbe:  probe("/readyz", 5),
		LivenessProbe:   probe("/healthz", 10),
		StartupProbe:    &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString(portAdmin)}}, PeriodSeconds: 2, FailureThreshold: 60},
	}
	if d := ptr.Deref(spec.Spool.PreStopDelaySeconds, DefaultPreStopDelaySeconds); d > 0 {
		// A deleted pod keeps answering while the Services and load balancers stop sending
		// to it (the endpoint removal lag); SIGTERM follows and policing drains (shutdown.go).
		container.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: d}}}
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      podLabels,
			Annotations: map[string]string{AnnotationConfigHash: configHash},
		},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{container},
			Volumes:                       volumes,
			SecurityContext:               podSecurityContext(),
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To(ptr.Deref(spec.Spool.TerminationGracePeriodSeconds, DefaultTerminationGraceSeconds)),
			ImagePullSecrets:              spec.Image.PullSecrets,
			NodeSelector:                  dc.Scheduling.NodeSelector,
			Tolerations:                   dc.Scheduling.Tolerations,
			Affinity:                      dc.Scheduling.Affinity,
			TopologySpreadConstraints:     spread,
			PriorityClassName:             dc.Scheduling.PriorityClassName,
		},
	}
}

// workloadMeta is the metadata and replicas of a data center's Deployment or StatefulSet.
func workloadMeta(c *aaav1.AAACluster, dc aaav1.Datacenter) (metav1.ObjectMeta, *int32) {
	replicas := dc.Replicas
	annotations := map[string]string{}
	if dc.Autoscaling != nil {
		replicas = ptr.To(dc.Autoscaling.MinReplicas)
		annotations[annotationAutoscaled] = "true"
	}
	return metav1.ObjectMeta{
		Name:        deploymentName(c, dc.Name),
		Namespace:   c.Namespace,
		Labels:      dcLabels(c, dc.Name, componentRadius),
		Annotations: annotations,
	}, replicas
}

// buildWorkload runs the policing pods of one data center: a Deployment, or a StatefulSet
// when the spool is persistent. Pure.
func buildWorkload(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec, dc aaav1.Datacenter, configHash string) client.Object {
	if spec.Spool.Persistence != nil {
		return buildStatefulSet(c, spec, dc, configHash)
	}
	return buildDeployment(c, spec, dc, configHash)
}

// buildDeployment is the policing Deployment of one data center: a rolling update starts the
// new pod before it stops an old one. Pure.
func buildDeployment(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec, dc aaav1.Datacenter, configHash string) *appsv1.Deployment {
	meta, replicas := workloadMeta(c, dc)
	return &appsv1.Deployment{
		ObjectMeta: meta,
		Spec: appsv1.DeploymentSpec{
			Replicas: replicas,
			Selector: &metav1.LabelSelector{MatchLabels: podSelector(c, dc.Name)},
			Strategy: appsv1.DeploymentStrategy{
				Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxUnavailable: ptr.To(intstr.FromInt32(0)),
					MaxSurge:       ptr.To(intstr.FromInt32(1)),
				},
			},
			Template: buildPodTemplate(c, spec, dc, configHash),
		},
	}
}

// buildStatefulSet is the policing StatefulSet of one data center with persistent spools:
// each pod mounts a claim of its own at the state directory, kept when the pod is deleted,
// rescheduled or scaled away (Retain), so the next pod of that name delivers what is left.
// Pods start and stop in parallel (no order matters); a rolling update stops a pod before it
// starts its successor (a StatefulSet cannot surge). Pure.
func buildStatefulSet(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec, dc aaav1.Datacenter, configHash string) *appsv1.StatefulSet {
	meta, replicas := workloadMeta(c, dc)
	p := spec.Spool.Persistence
	size := mustQty(DefaultSpoolVolumeSize)
	if p.Size != nil {
		size = *p.Size
	}
	return &appsv1.StatefulSet{
		ObjectMeta: meta,
		Spec: appsv1.StatefulSetSpec{
			Replicas:            replicas,
			Selector:            &metav1.LabelSelector{MatchLabels: podSelector(c, dc.Name)},
			ServiceName:         adminServiceName(c, dc.Name),
			PodManagementPolicy: appsv1.ParallelPodManagement,
			UpdateStrategy:      appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType},
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			},
			Template: buildPodTemplate(c, spec, dc, configHash),
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: stateVolume, Labels: dcLabels(c, dc.Name, componentRadius)},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: p.StorageClassName,
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
				},
			}},
		},
	}
}

// buildServices are the Services of one data center: RADIUS over UDP (auth and accounting),
// RadSec and Diameter over TCP when enabled (all of the configured type, externalTrafficPolicy
// Local by default so NAS and PCEF source addresses survive), and the admin port (ClusterIP,
// for Prometheus). Pure.
func buildServices(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec, dc aaav1.Datacenter) []*corev1.Service {
	external := func(name string, ports []corev1.ServicePort) *corev1.Service {
		s := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Namespace:   c.Namespace,
				Labels:      dcLabels(c, dc.Name, componentRadius),
				Annotations: dc.Service.Annotations,
			},
			Spec: corev1.ServiceSpec{
				Type:     dc.Service.Type,
				Selector: podSelector(c, dc.Name),
				Ports:    ports,
			},
		}
		if dc.Service.Type == corev1.ServiceTypeLoadBalancer || dc.Service.Type == corev1.ServiceTypeNodePort {
			s.Spec.ExternalTrafficPolicy = dc.Service.ExternalTrafficPolicy
		}
		if dc.Service.Type == corev1.ServiceTypeLoadBalancer {
			s.Spec.LoadBalancerIP = dc.Service.LoadBalancerIP
			s.Spec.LoadBalancerSourceRanges = dc.Service.LoadBalancerSourceRanges
		}
		return s
	}
	out := []*corev1.Service{external(radiusServiceName(c, dc.Name), []corev1.ServicePort{
		{Name: portAuth, Protocol: corev1.ProtocolUDP, Port: spec.Radius.AuthPort, TargetPort: intstr.FromString(portAuth)},
		{Name: portAcct, Protocol: corev1.ProtocolUDP, Port: spec.Radius.AcctPort, TargetPort: intstr.FromString(portAcct)},
	})}
	if radsecEnabled(spec) {
		out = append(out, external(radsecServiceName(c, dc.Name), []corev1.ServicePort{
			{Name: portRadSec, Protocol: corev1.ProtocolTCP, Port: spec.Radius.RadSec.Port, TargetPort: intstr.FromString(portRadSec)},
		}))
	}
	if diameterEnabled(spec) {
		ports := []corev1.ServicePort{
			{Name: portDiameter, Protocol: corev1.ProtocolTCP, Port: spec.Diameter.Port, TargetPort: intstr.FromString(portDiameter)},
		}
		if diameterTLSEnabled(spec) {
			ports = append(ports, corev1.ServicePort{Name: portDiamTLS, Protocol: corev1.ProtocolTCP,
				Port: spec.Diameter.TLS.Port, TargetPort: intstr.FromString(portDiamTLS)})
		}
		out = append(out, external(diameterServiceName(c, dc.Name), ports))
	}
	out = append(out, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:      adminServiceName(c, dc.Name),
			Namespace: c.Namespace,
			Labels:    dcLabels(c, dc.Name, componentAdmin),
		},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: podSelector(c, dc.Name),
			Ports: []corev1.ServicePort{
				{Name: portAdmin, Protocol: corev1.ProtocolTCP, Port: AdminPort, TargetPort: intstr.FromString(portAdmin)},
			},
		},
	})
	return out
}

// buildPDB keeps all but one policing pod of a data center up during voluntary disruptions.
// Pure.
func buildPDB(c *aaav1.AAACluster, dc aaav1.Datacenter) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: pdbName(c, dc.Name), Namespace: c.Namespace, Labels: dcLabels(c, dc.Name, componentRadius)},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: podSelector(c, dc.Name)},
		},
	}
}

// workloadKind is the kind buildWorkload makes. Pure.
func workloadKind(spec aaav1.AAAClusterSpec) string {
	if spec.Spool.Persistence != nil {
		return "StatefulSet"
	}
	return "Deployment"
}

// buildHPA is the HorizontalPodAutoscaler of a data center, nil without autoscaling. Pure.
func buildHPA(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec, dc aaav1.Datacenter) *autoscalingv2.HorizontalPodAutoscaler {
	as := dc.Autoscaling
	if as == nil {
		return nil
	}
	metrics := []autoscalingv2.MetricSpec{{
		Type: autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricSource{
			Name:   corev1.ResourceCPU,
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: as.TargetCPUUtilizationPercentage},
		},
	}}
	if as.TargetRequestsPerSecond != nil {
		metrics = append(metrics, autoscalingv2.MetricSpec{
			Type: autoscalingv2.PodsMetricSourceType,
			Pods: &autoscalingv2.PodsMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: as.RequestsMetricName},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: resource.NewQuantity(int64(*as.TargetRequestsPerSecond), resource.DecimalSI)},
			},
		})
	}
	var behavior *autoscalingv2.HorizontalPodAutoscalerBehavior
	if as.ScaleDownStabilizationSeconds != nil {
		behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: as.ScaleDownStabilizationSeconds},
		}
	}
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: hpaName(c, dc.Name), Namespace: c.Namespace, Labels: dcLabels(c, dc.Name, componentRadius)},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: workloadKind(spec), Name: deploymentName(c, dc.Name)},
			MinReplicas:    ptr.To(as.MinReplicas),
			MaxReplicas:    as.MaxReplicas,
			Metrics:        metrics,
			Behavior:       behavior,
		},
	}
}

// deploymentReady tells whether a Deployment has rolled out and is available. Pure.
func deploymentReady(d *appsv1.Deployment) bool {
	if d == nil || d.Status.ObservedGeneration < d.Generation {
		return false
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	if d.Status.UpdatedReplicas < want || d.Status.AvailableReplicas < want {
		return false
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == corev1.ConditionTrue
		}
	}
	return want == 0
}

// statefulSetReady tells whether a StatefulSet has rolled out and all its pods are ready. Pure.
func statefulSetReady(s *appsv1.StatefulSet) bool {
	if s == nil || s.Status.ObservedGeneration < s.Generation {
		return false
	}
	want := int32(1)
	if s.Spec.Replicas != nil {
		want = *s.Spec.Replicas
	}
	return s.Status.UpdatedReplicas >= want && s.Status.ReadyReplicas >= want && s.Status.AvailableReplicas >= want
}

// serviceEndpoint is the address NAS use: the load balancer's; for a NodePort Service the
// node ports on any node's address (the operator does not list nodes: which node address a NAS
// reaches is the site's to know); else the cluster IP. Pure.
func serviceEndpoint(s *corev1.Service) string {
	if s == nil {
		return ""
	}
	if s.Spec.Type == corev1.ServiceTypeNodePort {
		var auth, acct int32
		for _, p := range s.Spec.Ports {
			switch p.Name {
			case portAuth:
				auth = p.NodePort
			case portAcct:
				acct = p.NodePort
			}
		}
		if auth == 0 || acct == 0 {
			return "" // not allocated yet
		}
		return fmt.Sprintf("<node address>:%d (auth), <node address>:%d (acct)", auth, acct)
	}
	for _, in := range s.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			return in.IP
		}
		if in.Hostname != "" {
			return in.Hostname
		}
	}
	if s.Spec.Type == corev1.ServiceTypeLoadBalancer {
		return "" // pending
	}
	return s.Spec.ClusterIP
}

// reconcileDatacenters applies the objects of every data center the schema replicates to, and
// deletes those of data centers that left the spec (and HPAs, RadSec or Diameter Services no
// longer wanted).
func (r *AAAClusterReconciler) reconcileDatacenters(ctx context.Context, st *state) (result, error) {
	c, spec := st.cluster, st.spec
	keep := map[string]bool{}
	for _, dc := range spec.Datacenters {
		keep["ConfigMap/"+configMapName(c, dc.Name)] = true
		obs := &dcObserved{}
		st.dcs[dc.Name] = obs
		if !st.schemaDCs[dc.Name] {
			obs.complete = true
			continue // the keyspace does not replicate here yet
		}
		obs.deployed = true
		w := buildWorkload(c, spec, dc, st.configHash[dc.Name])
		live, err := r.apply(ctx, c, w)
		if err != nil {
			return result{}, err
		}
		obs.workload = observeWorkload(live)
		if _, ok := w.(*appsv1.StatefulSet); ok {
			keep["StatefulSet/"+live.GetName()] = true
		} else {
			keep["Deployment/"+live.GetName()] = true
		}
		for _, svc := range buildServices(c, spec, dc) {
			live, err := r.apply(ctx, c, svc)
			if err != nil {
				return result{}, err
			}
			keep["Service/"+svc.Name] = true
			if svc.Name == radiusServiceName(c, dc.Name) {
				obs.service = live.(*corev1.Service)
			}
		}
		if networkPolicyEnabled(spec) {
			np := buildNetworkPolicy(c, spec, dc.Name, r.Options.OperatorNamespace)
			if _, err := r.apply(ctx, c, np); err != nil {
				return result{}, err
			}
			keep["NetworkPolicy/"+np.Name] = true
		}
		pdb := buildPDB(c, dc)
		if _, err := r.apply(ctx, c, pdb); err != nil {
			return result{}, err
		}
		keep["PodDisruptionBudget/"+pdb.Name] = true
		if hpa := buildHPA(c, spec, dc); hpa != nil {
			if _, err := r.apply(ctx, c, hpa); err != nil {
				return result{}, err
			}
			keep["HorizontalPodAutoscaler/"+hpa.Name] = true
		}
		obs.complete = true
	}
	return result{}, r.pruneDatacenterObjects(ctx, c, keep)
}

// pruneDatacenterObjects deletes per-DC objects of this cluster not in keep ("Kind/name").
func (r *AAAClusterReconciler) pruneDatacenterObjects(ctx context.Context, c *aaav1.AAACluster, keep map[string]bool) error {
	opts := []client.ListOption{client.InNamespace(c.Namespace), client.MatchingLabels{LabelCluster: c.Name}, client.HasLabels{LabelDC}}
	var del []client.Object
	collect := func(kind string, list client.ObjectList) error {
		if err := r.List(ctx, list, opts...); err != nil {
			return err
		}
		return meta.EachListItem(list, func(o runtime.Object) error {
			obj := o.(client.Object)
			if !keep[kind+"/"+obj.GetName()] {
				del = append(del, obj)
			}
			return nil
		})
	}
	for kind, list := range map[string]client.ObjectList{
		"Deployment":              &appsv1.DeploymentList{},
		"StatefulSet":             &appsv1.StatefulSetList{},
		"Service":                 &corev1.ServiceList{},
		"PodDisruptionBudget":     &policyv1.PodDisruptionBudgetList{},
		"HorizontalPodAutoscaler": &autoscalingv2.HorizontalPodAutoscalerList{},
		"ConfigMap":               &corev1.ConfigMapList{},
		"NetworkPolicy":           &networkingv1.NetworkPolicyList{},
	} {
		if err := collect(kind, list); err != nil {
			return err
		}
	}
	return r.pruneOwned(ctx, c, del, nil)
}
