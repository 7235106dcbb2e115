// Package cluster holds the tests that run on the local single-node Kubernetes cluster of
// hack/cluster.sh (docs/local-cluster.md): real pods of the project's own images, CoreDNS,
// kube-proxy NodePorts reached from a NAS network namespace outside the node.
package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/test/cluster/clustertest"
)

var cluster *clustertest.Cluster

func TestMain(m *testing.M) {
	// The clients' logger: the API server's warnings (e.g. from cert-manager's webhook) are
	// logged as lines instead of controller-runtime's "SetLogger was never called" stack.
	ctrllog.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	setParallel()                                                  // parallel_test.go
	code := clustertest.Main(m, &cluster, ensureCRDs, startAddons) // monitoring_test.go
	stopSharedCassandra()                                          // cassandra_test.go
	os.Exit(code)
}

const (
	ns         = "smoke"
	name       = "smoke-policing"
	secret     = "smoke-secret-1"
	authNode   = 31812
	acctNode   = 31813
	policingUp = 120 * time.Second
)

const policingConfig = `log: {level: info, format: text}
radius: {authAddress: ":1812", acctAddress: ":1813"}
clientsFile: /etc/openaaa/clients/clients.yaml
subscribers: {source: file, file: /etc/openaaa/subscribers/subscribers.yaml}
session:
  store: embedded
  embedded: {snapshotFile: /var/lib/openaaa/sessions.jsonl}
admin: {address: ":9812", tokenFile: /etc/openaaa/clients/admin.token}
`

// smokeAdminToken is the admin API's bearer token of the smoke test's policing.
const smokeAdminToken = "smoke-admin-token-0123456789abcdef"

// The only client is the NAS network namespace's address: a reply proves that the request
// reached policing with the NAS's own source address (externalTrafficPolicy: Local).
var clientsFile = fmt.Sprintf(`clients:
  - name: nas
    address: %s
    secretFile: /etc/openaaa/clients/nas.secret
`, clustertest.NASIP)

const subscribersFile = `subscribers:
  - {username: alice, password: wonderland}
`

// smoke is the policing Deployment and its NodePort Service, shared by the tests below.
type smoke struct {
	ref   string
	podIP string
}

var deployed *smoke

// deploy imports the policing image and runs it, once per package run.
func deploy(t *testing.T) *smoke {
	t.Helper()
	clustertest.Skip(t, cluster)
	if deployed != nil {
		return deployed
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	refs, err := cluster.Import("policing")
	testenv.Need(t, err == nil, fmt.Sprint("the policing image (make images): ", err))
	t.Logf("imported %s in %s", refs[0], time.Since(start).Round(10*time.Millisecond))

	cs := cluster.Clientset
	mustCreate := func(err error) {
		t.Helper()
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	mustCreate(err)
	_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Data:       map[string]string{"policing.yaml": policingConfig, "subscribers.yaml": subscribersFile},
	}, metav1.CreateOptions{})
	mustCreate(err)
	_, err = cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		StringData: map[string]string{"clients.yaml": clientsFile, "nas.secret": secret, "admin.token": smokeAdminToken},
	}, metav1.CreateOptions{})
	mustCreate(err)

	labels := map[string]string{"app": name}
	cmItem := func(key string) corev1.VolumeSource {
		return corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: name},
			Items:                []corev1.KeyToPath{{Key: key, Path: key}},
		}}
	}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532), RunAsGroup: ptr.To[int64](65532),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:            "policing",
						Image:           refs[0],
						ImagePullPolicy: corev1.PullNever, // no registry: the imported image only
						Args:            []string{"serve", "--config", "/etc/openaaa/policing.yaml"},
						Ports: []corev1.ContainerPort{
							{Name: "auth", ContainerPort: 1812, Protocol: corev1.ProtocolUDP},
							{Name: "acct", ContainerPort: 1813, Protocol: corev1.ProtocolUDP},
							{Name: "admin", ContainerPort: 9812, Protocol: corev1.ProtocolTCP},
						},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("admin")}},
							PeriodSeconds: 1,
						},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "config", MountPath: "/etc/openaaa/policing.yaml", SubPath: "policing.yaml", ReadOnly: true},
							{Name: "subscribers", MountPath: "/etc/openaaa/subscribers", ReadOnly: true},
							{Name: "clients", MountPath: "/etc/openaaa/clients", ReadOnly: true},
							{Name: "state", MountPath: "/var/lib/openaaa"},
							{Name: "tmp", MountPath: "/tmp"},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "config", VolumeSource: cmItem("policing.yaml")},
						{Name: "subscribers", VolumeSource: cmItem("subscribers.yaml")},
						{Name: "clients", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}}},
						{Name: "state", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
						{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
				},
			},
		},
	}
	_, err = cs.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{})
	mustCreate(err)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeNodePort,
			Selector: labels,
			// Local: no SNAT, so policing sees the NAS's own address (the client's identity).
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			Ports: []corev1.ServicePort{
				{Name: "auth", Port: 1812, TargetPort: intstr.FromString("auth"), Protocol: corev1.ProtocolUDP, NodePort: authNode},
				{Name: "acct", Port: 1813, TargetPort: intstr.FromString("acct"), Protocol: corev1.ProtocolUDP, NodePort: acctNode},
				{Name: "admin", Port: 9812, TargetPort: intstr.FromString("admin"), Protocol: corev1.ProtocolTCP},
			},
		},
	}
	_, err = cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	mustCreate(err)

	// Ready, bounded.
	var pod corev1.Pod
	deadline := time.Now().Add(policingUp)
	for {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err == nil && len(pods.Items) == 1 && podReady(&pods.Items[0]) {
			pod = pods.Items[0]
			break
		}
		if time.Now().After(deadline) {
			out, _ := cluster.Kubectl(ctx, "-n", ns, "describe", "pods")
			logs, _ := cluster.Kubectl(ctx, "-n", ns, "logs", "deploy/"+name, "--tail", "30")
			t.Fatalf("policing not Ready after %s\n%s\n%s", policingUp, out, logs)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("policing pod %s Ready on %s in %s", pod.Name, pod.Status.PodIP, time.Since(start).Round(100*time.Millisecond))
	deployed = &smoke{ref: refs[0], podIP: pod.Status.PodIP}
	return deployed
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// TestPolicingPodRunsNonRoot: the project's own image runs to Ready, and its process really
// runs as 65532 (read from /proc on the node, not from the spec).
func TestPolicingPodRunsNonRoot(t *testing.T) {
	s := deploy(t)
	if !strings.HasPrefix(s.podIP, "198.18.16.") {
		t.Errorf("pod IP %s is outside the pod range %s", s.podIP, clustertest.PodCIDR)
	}
	ctx := context.Background()
	pods, err := cluster.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil || len(pods.Items) != 1 || len(pods.Items[0].Status.ContainerStatuses) != 1 {
		t.Fatalf("pods: %v %v", err, pods)
	}
	id := strings.TrimPrefix(pods.Items[0].Status.ContainerStatuses[0].ContainerID, "containerd://")
	// cgroupfs driver: the container's cgroup directory is named by its ID.
	procs, _ := filepath.Glob("/sys/fs/cgroup/pids/openaaa-cluster/kubepods*/*/pod*/" + id + "/cgroup.procs")
	more, _ := filepath.Glob("/sys/fs/cgroup/pids/openaaa-cluster/kubepods*/pod*/" + id + "/cgroup.procs")
	procs = append(procs, more...)
	if len(procs) != 1 {
		t.Fatalf("cgroup of container %s: %v", id, procs)
	}
	data, err := os.ReadFile(procs[0])
	if err != nil || len(strings.Fields(string(data))) == 0 {
		t.Fatalf("%s: %v %q", procs[0], err, data)
	}
	pid := strings.Fields(string(data))[0]
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "Uid:") {
			if f := strings.Fields(l); len(f) < 2 || f[1] != "65532" {
				t.Errorf("policing runs as %q, want uid 65532", l)
			} else {
				t.Logf("policing (pid %s on the node) %s", pid, l)
			}
		}
	}
}

// TestClusterDNS: CoreDNS at the kube-dns ClusterIP answers for Services (queried from the
// node with Go's resolver: the images are distroless, no shell in any pod) and resolves
// nothing outside cluster.local (no forward plugin: no query leaves the box).
func TestClusterDNS(t *testing.T) {
	deploy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, net.JoinHostPort(clustertest.DNSIP, "53"))
	}}
	svc, err := cluster.Clientset.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]string{
		name + "." + ns + ".svc.cluster.local": svc.Spec.ClusterIP,
		"kubernetes.default.svc.cluster.local": "198.18.32.1",
	} {
		var addrs []string
		// A Service created a moment ago reaches CoreDNS's cache within a second or two.
		for i := 0; i < 20; i++ {
			if addrs, err = r.LookupHost(ctx, host); err == nil {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		if err != nil || len(addrs) != 1 || addrs[0] != want {
			t.Errorf("%s: %v %v, want %s", host, addrs, err, want)
		} else {
			t.Logf("%s -> %s", host, addrs[0])
		}
	}
	if addrs, err := r.LookupHost(ctx, "example.com"); err == nil {
		t.Errorf("example.com resolved to %v: CoreDNS must not forward off the box", addrs)
	}
}

// TestNodePortKeepsNASAddress: radclient inside the NAS namespace reaches policing through
// the NodePort (externalTrafficPolicy: Local) and is accepted — policing knows only the NAS's
// address as a client — and the session the admin API shows carries the NAS's address.
// The same request from the node itself (another source address) gets no answer.
func TestNodePortKeepsNASAddress(t *testing.T) {
	s := deploy(t)
	radclient := testenv.LookPath(t, "radclient", "FreeRADIUS's freeradius-utils: make provision")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	send := func(nas bool, port int, kind, attrs string) (string, error) {
		tries := "3"
		if !nas {
			tries = "1" // no answer expected: do not wait for retries
		}
		args := []string{"-x", "-r", tries, "-t", "2", fmt.Sprintf("%s:%d", clustertest.NodeIP, port), kind, secret}
		cmd := exec.CommandContext(ctx, radclient, args...) // from the node itself
		if nas {
			cmd = clustertest.NASExec(ctx, radclient, args...)
		}
		cmd.Stdin = strings.NewReader(attrs)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := send(true, authNode, "auth", `User-Name = "alice", User-Password = "wonderland", Message-Authenticator = 0x00`)
	if err != nil || !strings.Contains(out, "Access-Accept") {
		t.Fatalf("Access-Request from the NAS: %v\n%s", err, out)
	}
	out, err = send(true, acctNode, "acct", `User-Name = "alice", Acct-Status-Type = Start, Acct-Session-Id = "smoke-1", Framed-IP-Address = 198.18.200.1`)
	if err != nil || !strings.Contains(out, "Accounting-Response") {
		t.Fatalf("Accounting-Request Start from the NAS: %v\n%s", err, out)
	}

	code, body := httpGetToken(t, fmt.Sprintf("http://%s:9812/api/v1/sessions?user=alice", s.podIP), smokeAdminToken)
	if code != http.StatusOK {
		t.Fatalf("sessions: HTTP %d %s", code, body)
	}
	var got struct {
		Sessions []struct {
			NAS           string `json:"nas"`
			AcctSessionID string `json:"acctSessionId"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("sessions: %v: %s", err, body)
	}
	if len(got.Sessions) != 1 || got.Sessions[0].NAS != clustertest.NASIP || got.Sessions[0].AcctSessionID != "smoke-1" {
		t.Fatalf("sessions of alice: %s, want one with nas %s", body, clustertest.NASIP)
	}
	t.Logf("session seen by policing: %s", body)

	// From the node: source 198.18.0.1, not a client; policing drops it (no reply at all).
	out, err = send(false, authNode, "auth", `User-Name = "alice", User-Password = "wonderland", Message-Authenticator = 0x00`)
	if err == nil || strings.Contains(out, "Access-Accept") {
		t.Errorf("a request from an address that is not a client got an answer:\n%s", out)
	}
}

// TestFootprint logs what the cluster costs with the smoke Deployment running (docs/local-cluster.md).
func TestFootprint(t *testing.T) {
	deploy(t)
	out, err := cluster.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster up %s (node Ready after %s)\n%s", cluster.UpTime.Round(100*time.Millisecond), cluster.NodeReady, out)
}
