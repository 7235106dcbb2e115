package addons

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// TestCertManagerIssuesAndRenews runs our cert-manager controller binary against a real
// kube-apiserver (envtest) as the ServiceAccount of 50-cert-manager.yaml, with only the
// ClusterRole granted there (the API server authorizes with RBAC): the self-signed -> CA
// ClusterIssuer chain of 51-cert-manager-issuers.yaml becomes Ready, a Certificate from the
// CA issuer is issued (chains to the CA, carries its DNS names), and a renewal triggered as
// `cmctl renew` does (condition Issuing=True on the status) issues a new certificate.
// No pods run here; test/cluster runs the image on the local cluster.
func TestCertManagerIssuesAndRenews(t *testing.T) {
	NeedBuilt(t)
	c := apiClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	var issuers []*unstructured.Unstructured
	for _, o := range rendered(t) {
		switch o.GetKind() {
		case "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding":
			if o.GetKind() == "Namespace" || o.GetNamespace() == "cert-manager" || o.GetName() == "openaaa-addons-cert-manager" {
				applyObj(t, ctx, c, o)
			}
		case "ClusterIssuer", "Certificate":
			issuers = append(issuers, o)
		}
	}
	// The ServiceAccount's identity, as the kubelet's token would give it.
	user, err := apiServer.env.AddUser(envtest.User{Name: "system:serviceaccount:cert-manager:cert-manager",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:cert-manager"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kcfg, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	kpath := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kpath, kcfg, 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(CacheDir(), "bin", "cert-manager-controller"),
		"--kubeconfig", kpath, "--metrics-listen-address", "", "--v", "2")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("cert-manager-controller log:\n%s", tail(logs.String(), 60))
		}
	}()
	forbidden := func() error {
		if bytes.Contains(logs.Bytes(), []byte("forbidden")) {
			return fmt.Errorf("the controller was refused by RBAC:\n%s", tail(logs.String(), 20))
		}
		return nil
	}

	for _, o := range issuers {
		applyObj(t, ctx, c, o)
	}
	waitReady(t, ctx, c, exited, "ClusterIssuer", "", "openaaa-local-ca", forbidden)

	ns := "radsec-test"
	applyObj(t, ctx, c, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}})
	applyObj(t, ctx, c, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
		"metadata": map[string]any{"name": "radsec", "namespace": ns},
		"spec": map[string]any{
			"secretName": "radsec-tls",
			"dnsNames":   []any{"aaa-dc1-radsec.radsec-test.svc"},
			"usages":     []any{"server auth", "client auth"},
			"privateKey": map[string]any{"algorithm": "ECDSA", "size": int64(256), "rotationPolicy": "Always"},
			"issuerRef":  map[string]any{"name": "openaaa-local-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"},
		},
	}})
	waitReady(t, ctx, c, exited, "Certificate", ns, "radsec", forbidden)
	first := issuedCert(t, ctx, c, ns, "radsec-tls")
	if !slices.Contains(first.DNSNames, "aaa-dc1-radsec.radsec-test.svc") {
		t.Errorf("issued certificate names %v", first.DNSNames)
	}

	// The first issuance is over only once the controller stored its revision and dropped
	// its Issuing condition, a moment after Ready: a renewal requested before that is taken
	// for the issuance in progress, which the existing request completes, and no new
	// certificate comes (seen in a cold make test on a fast machine).
	deadline := time.Now().Add(time.Minute)
	for {
		crt := &unstructured.Unstructured{}
		crt.SetAPIVersion("cert-manager.io/v1")
		crt.SetKind("Certificate")
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "radsec"}, crt)
		rev, _, _ := unstructured.NestedInt64(crt.Object, "status", "revision")
		if err == nil && rev >= 1 && !condTrue(crt, "Issuing") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first issuance not over 1 min after Ready: revision %d, %v", rev, err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Renew as cmctl does: Issuing=True, reason ManuallyTriggered, on the status, in place of
	// an Issuing condition still there from the first issuance (appended beside it, the API
	// server refused the duplicate type in a cold run). The controller may write the status
	// between our read and our write (a conflict, as in a loaded CI run): read again and
	// retry, as cmctl does.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crt := &unstructured.Unstructured{}
		crt.SetAPIVersion("cert-manager.io/v1")
		crt.SetKind("Certificate")
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "radsec"}, crt); err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(crt.Object, "status", "conditions")
		conds = slices.DeleteFunc(conds, func(c any) bool {
			m, _ := c.(map[string]any)
			return m["type"] == "Issuing"
		})
		conds = append(conds, map[string]any{"type": "Issuing", "status": "True", "reason": "ManuallyTriggered",
			"message": "renewal requested by the test", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)})
		if err := unstructured.SetNestedSlice(crt.Object, conds, "status", "conditions"); err != nil {
			return err
		}
		return c.Status().Update(ctx, crt)
	})
	if err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(2 * time.Minute)
	for {
		second := issuedCert(t, ctx, c, ns, "radsec-tls")
		if second.SerialNumber.Cmp(first.SerialNumber) != 0 {
			t.Logf("renewed: serial %x -> %x", first.SerialNumber, second.SerialNumber)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new certificate 2 min after the renewal was triggered")
		}
		time.Sleep(time.Second)
	}
}

func applyObj(t *testing.T, ctx context.Context, c client.Client, o *unstructured.Unstructured) {
	t.Helper()
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("openaaa-test"), client.ForceOwnership); err != nil {
		t.Fatalf("apply %s %s: %v", o.GetKind(), o.GetName(), err)
	}
}

// waitReady waits for condition Ready=True of a cert-manager object, failing early when the
// controller exits or check reports a problem.
func waitReady(t *testing.T, ctx context.Context, c client.Client, exited <-chan error, kind, ns, name string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		o := &unstructured.Unstructured{}
		o.SetAPIVersion("cert-manager.io/v1")
		o.SetKind(kind)
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, o)
		if err == nil && condTrue(o, "Ready") {
			return
		}
		select {
		case err := <-exited:
			t.Fatalf("cert-manager-controller exited: %v", err)
		default:
		}
		if err := check(); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
			t.Fatalf("%s %s not Ready after 2 min: %v %v", kind, name, err, conds)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func condTrue(o *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ && m["status"] == "True" {
			return true
		}
	}
	return false
}

// issuedCert returns the certificate of a cert-manager Secret after checking that it chains
// to the Secret's ca.crt (the local CA) and matches its key.
func issuedCert(t *testing.T, ctx context.Context, c client.Client, ns, name string) *x509.Certificate {
	t.Helper()
	s := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			t.Fatalf("Secret %s/%s not written", ns, name)
		}
		t.Fatal(err)
	}
	block, _ := pem.Decode(s.Data[corev1.TLSCertKey])
	if block == nil {
		t.Fatalf("Secret %s/%s: no certificate", ns, name)
	}
	crt, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.Data["ca.crt"]) {
		t.Fatalf("Secret %s/%s: no ca.crt", ns, name)
	}
	if _, err := crt.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("certificate does not chain to the CA: %v", err)
	}
	if crt.Subject.CommonName == "openaaa local CA" || crt.IsCA {
		t.Errorf("issued certificate is the CA itself: %v", crt.Subject)
	}
	return crt
}

func tail(s string, n int) string {
	lines := bytes.Split([]byte(s), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
