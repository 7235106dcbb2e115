package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"
	"github.com/fiorix/go-diameter/v4/diam/dict"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/test/addons"
	"github.com/openaaa/openaaa/test/cluster/clustertest"
)

// The AAACluster of the RadSec test: its own namespace and release, beside TestAAAClusterOnCluster's.
const (
	radsecNS      = "radsec"
	radsecRelease = "rs"
	// radsecNAS is the Certificate (and Secret) of the RadSec client, from the same CA.
	radsecNAS = "radsec-nas"
	// diameterPCEF is the Certificate (and Secret) of the Diameter over TLS peer, named for
	// its Origin-Host (policing checks that the certificate names it).
	diameterPCEF     = "pgw-tls"
	diameterPCEFHost = "pgw.epc.test"
)

// TestRadSecCertManagerOnCluster: cert-manager (our controller build, hack/addons) runs on the
// local cluster with a self-signed -> CA ClusterIssuer chain. An AAACluster with RadSec and
// issuerRef that ClusterIssuer, installed with the shipped charts: the Certificate the operator
// requests is issued by cert-manager, policing serves RadSec with it (through the NodePort, for
// the Service's DNS name, chaining to the CA), and FreeRADIUS as a RadSec client (a TLS proxy
// on the host with its own certificate from the same CA) gets radclient's Access-Request
// accepted. A renewal, triggered as `cmctl renew` does, is served by the same pod without a
// restart, and FreeRADIUS authenticates again over a new connection. The same AAACluster serves
// Diameter over TLS (spec.diameter.tls with the same issuer): its Certificate names the data
// center's Diameter identity, and a PCEF with a certificate from the CA gets its CER answered
// 2001 over TLS through the NodePort.
func TestRadSecCertManagerOnCluster(t *testing.T) {
	clustertest.Skip(t, cluster)
	inSerialLane(t, needAddons)
	testenv.LookPath(t, "freeradius", "FreeRADIUS (hack/freeradius.sh install: make provision)")
	root, helm, tag := needOperatorImages(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	// cert-manager and the local CA ClusterIssuer (with the other add-ons).
	clusterAddons.Wait(t, ctx)

	cassandraUp(t)

	c := aaaClient(t)
	mustApply(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: radsecNS}})
	mustApply(t, c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cassandra-credentials", Namespace: radsecNS, Labels: watched},
		StringData: map[string]string{"username": "cassandra", "password": "cassandra"}})
	mustApply(t, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "subscribers", Namespace: radsecNS, Labels: watched},
		Data: map[string]string{"subscribers.yaml": subscribersYAML(0, "")}})
	// cert-manager's webhook validates what its CRD schema cannot: a Certificate with no identity
	// is denied, naming what is missing (the cainjector gave the API server the webhook's CA).
	bad := certificate(radsecNS, "no-identity", []any{"client auth"}, "")
	unstructured.RemoveNestedField(bad.Object, "spec", "commonName")
	unstructured.RemoveNestedField(bad.Object, "spec", "dnsNames")
	if err := c.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), `admission webhook "webhook.cert-manager.io" denied`) ||
		!strings.Contains(err.Error(), "dnsNames") {
		t.Fatalf("a Certificate with no commonName or dnsNames: %v; want cert-manager's webhook to deny it naming the fields", err)
	}
	// The RadSec client's certificate, from the same CA (policing requires client certificates).
	if err := c.Create(ctx, certificate(radsecNS, radsecNAS, []any{"client auth"}, "nas.radsec.test")); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, certificate(radsecNS, diameterPCEF, []any{"client auth"}, diameterPCEFHost)); err != nil {
		t.Fatal(err)
	}

	installOperatorChart(t, ctx, helm, root, tag, radsecNS)
	defer func() {
		start := time.Now()
		_ = exec.Command(helm, "--kubeconfig", cluster.Kubeconfig, "uninstall", radsecRelease, "-n", radsecNS, "--wait", "--timeout", "2m").Run()
		_ = exec.Command(helm, "--kubeconfig", cluster.Kubeconfig, "uninstall", "openaaa-operator", "-n", operatorNS, "--wait", "--timeout", "2m").Run()
		t.Logf("both releases uninstalled in %s", time.Since(start).Round(100*time.Millisecond))
	}()
	values := filepath.Join(t.TempDir(), "values.yaml")
	radsec := fmt.Sprintf("radius:\n  radsec: {enabled: true, issuerRef: {name: %s, kind: ClusterIssuer}}\n", addons.CertManagerCAIssuer) +
		fmt.Sprintf("diameter:\n  enabled: true\n  realm: epc.test\n  peers: [{originHost: %s}]\n  tls: {enabled: true, issuerRef: {name: %s, kind: ClusterIssuer}}\n",
			diameterPCEFHost, addons.CertManagerCAIssuer)
	if err := os.WriteFile(values, []byte(aaaclusterValues()+radsec), 0o600); err != nil {
		t.Fatal(err)
	}
	runHelm(t, ctx, helm, "install", radsecRelease, filepath.Join(root, "charts", "aaacluster"), "-n", radsecNS, "-f", values)

	// 1. The operator's Certificate is issued by cert-manager; the AAACluster becomes Ready.
	key := client.ObjectKey{Namespace: radsecNS, Name: radsecRelease}
	start := time.Now()
	crt := waitCertificateReady(t, c, radsecNS, radsecRelease+"-radsec")
	issuer, _, _ := unstructured.NestedString(crt.Object, "spec", "issuerRef", "name")
	if issuer != addons.CertManagerCAIssuer {
		t.Errorf("the operator's Certificate names issuer %q", issuer)
	}
	t.Logf("Certificate %s/%s-radsec Ready %s after the AAACluster was installed", radsecNS, radsecRelease, time.Since(start).Round(time.Second))
	waitConditionOf(t, c, key, aaav1.ConditionReady, metav1.ConditionTrue, "", readyWithin)
	t.Logf("AAACluster Ready %s after it was installed", time.Since(start).Round(time.Second))
	waitCertificateReady(t, c, radsecNS, radsecNAS)
	pod := policingPodOf(t, c, key, true)

	// Diameter over TLS: the operator's second Certificate, for the Diameter identity; a PCEF
	// with its own certificate from the CA exchanges capabilities over TLS.
	waitCertificateReady(t, c, radsecNS, radsecRelease+"-diameter")
	waitCertificateReady(t, c, radsecNS, diameterPCEF)
	pcef := secretData(t, c, radsecNS, diameterPCEF)
	diamAddr := fmt.Sprintf("%s:%d", clustertest.NodeIP, nodePort(t, c, radsecRelease+"-dc1-diameter", "diameter-tls"))
	eventually(t, time.Minute, "a CER over TLS on "+diamAddr+" answered 2001", func() error {
		return diameterTLSCER(diamAddr, "pcrf.dc1.epc.test", pcef, diameterPCEFHost)
	})
	if err := diameterTLSCER(diamAddr, "pcrf.dc1.epc.test", secretData(t, c, radsecNS, radsecNAS), diameterPCEFHost); err == nil {
		t.Error("a CER over TLS with a certificate that does not name its Origin-Host was answered 2001")
	}
	t.Logf("Diameter over TLS: CER answered 2001 for %s, refused with another peer's certificate", diameterPCEFHost)

	// 2. policing serves that certificate on the RadSec NodePort.
	dir := t.TempDir()
	nas := secretData(t, c, radsecNS, radsecNAS)
	for name, data := range map[string][]byte{"client.crt": nas[corev1.TLSCertKey], "client.key": nas[corev1.TLSPrivateKeyKey], "ca.crt": nas["ca.crt"]} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	radsecAddr := fmt.Sprintf("%s:%d", clustertest.NodeIP, radsecNodePort(t, c))
	serverName := radsecRelease + "-dc1-radsec." + radsecNS + ".svc"
	issued := secretCert(t, c, radsecNS, radsecRelease+"-radsec-tls")
	eventually(t, time.Minute, "the issued certificate served on "+radsecAddr, func() error {
		return servedSerial(radsecAddr, serverName, nas, issued.SerialNumber)
	})

	// 3. A RadSec client: radclient -> FreeRADIUS (UDP) -> TLS -> NodePort -> policing.
	start = time.Now()
	fr := startRadSecProxy(t, dir, radsecAddr)
	if out, ok := hostRadclient(t, fr.addr, "auth", radsecProxySecret, `User-Name = "alice"`, `User-Password = "wonderland"`,
		`Message-Authenticator = 0x00`); !ok || !strings.Contains(out, "Access-Accept") {
		t.Fatalf("radclient -> FreeRADIUS -> RadSec -> policing: no Access-Accept:\n%s", out)
	}
	if out, _ := hostRadclient(t, fr.addr, "auth", radsecProxySecret, `User-Name = "alice"`, `User-Password = "wrong"`,
		`Message-Authenticator = 0x00`); !strings.Contains(out, "Access-Reject") {
		t.Errorf("a wrong password over RadSec: no Access-Reject:\n%s", out)
	}
	t.Logf("FreeRADIUS up; Access-Accept and Access-Reject over RadSec in %s", time.Since(start).Round(100*time.Millisecond))

	// 4. Renewal as `cmctl renew` does it: condition Issuing=True on the Certificate's status.
	restartsBefore := restarts(pod)
	renewed := time.Now()
	triggerRenewal(t, c, radsecNS, radsecRelease+"-radsec")
	var next *x509.Certificate
	eventually(t, 2*time.Minute, "a new certificate in the Secret", func() error {
		next = secretCert(t, c, radsecNS, radsecRelease+"-radsec-tls")
		if next.SerialNumber.Cmp(issued.SerialNumber) == 0 {
			return fmt.Errorf("serial still %x", issued.SerialNumber)
		}
		return nil
	})
	eventually(t, 2*time.Minute, "the renewed certificate served", func() error {
		return servedSerial(radsecAddr, serverName, nas, next.SerialNumber)
	})
	t.Logf("renewal: serial %x -> %x served %s after the trigger", issued.SerialNumber, next.SerialNumber, time.Since(renewed).Round(time.Second))
	if p := policingPodOf(t, c, key, true); p.Name != pod.Name || restarts(p) != restartsBefore {
		t.Errorf("the renewal restarted policing: %s -> %s", podState(pod), podState(p))
	}
	// FreeRADIUS, restarted so that it opens a new TLS connection, gets through again. As a
	// NAS would, the test sends again while the new connection comes up (on a busy node its
	// first request can time out: the managed-Cassandra test runs beside this one).
	fr.restart(t)
	restarted := time.Now()
	eventually(t, 30*time.Second, "an Access-Accept through FreeRADIUS after the renewal", func() error {
		if out, ok := hostRadclient(t, fr.addr, "auth", radsecProxySecret, `User-Name = "alice"`, `User-Password = "wonderland"`,
			`Message-Authenticator = 0x00`); !ok || !strings.Contains(out, "Access-Accept") {
			return fmt.Errorf("no Access-Accept:\n%s", out)
		}
		return nil
	})
	t.Logf("after the renewal: Access-Accept through the restarted FreeRADIUS %s after its restart", time.Since(restarted).Round(100*time.Millisecond))
}

// certificate is a cert-manager Certificate from the local CA ClusterIssuer.
func certificate(ns, name string, usages []any, dnsName string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"secretName": name, "commonName": dnsName, "dnsNames": []any{dnsName}, "usages": usages,
			"privateKey": map[string]any{"algorithm": "ECDSA", "size": int64(256), "rotationPolicy": "Always"},
			"issuerRef":  map[string]any{"name": addons.CertManagerCAIssuer, "kind": "ClusterIssuer", "group": "cert-manager.io"},
		},
	}}
}

func waitCertificateReady(t *testing.T, c client.Client, ns, name string) *unstructured.Unstructured {
	t.Helper()
	crt := &unstructured.Unstructured{}
	eventually(t, 3*time.Minute, "Certificate "+ns+"/"+name+" Ready", func() error {
		crt.SetAPIVersion("cert-manager.io/v1")
		crt.SetKind("Certificate")
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, crt); err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(crt.Object, "status", "conditions")
		for _, x := range conds {
			if m, _ := x.(map[string]any); m["type"] == "Ready" && m["status"] == "True" {
				return nil
			}
		}
		return fmt.Errorf("conditions %v", conds)
	})
	return crt
}

// triggerRenewal sets Issuing=True (reason ManuallyTriggered) on the Certificate's status,
// which is what `cmctl renew` writes.
func triggerRenewal(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	crt := waitCertificateReady(t, c, ns, name)
	conds, _, _ := unstructured.NestedSlice(crt.Object, "status", "conditions")
	conds = append(conds, map[string]any{"type": "Issuing", "status": "True", "reason": "ManuallyTriggered",
		"message": "Certificate re-issuance manually triggered", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)})
	if err := unstructured.SetNestedSlice(crt.Object, conds, "status", "conditions"); err != nil {
		t.Fatal(err)
	}
	if err := c.Status().Update(context.Background(), crt); err != nil {
		t.Fatal(err)
	}
}

func secretData(t *testing.T, c client.Client, ns, name string) map[string][]byte {
	t.Helper()
	s := &corev1.Secret{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		t.Fatal(err)
	}
	return s.Data
}

func secretCert(t *testing.T, c client.Client, ns, name string) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(secretData(t, c, ns, name)[corev1.TLSCertKey])
	if block == nil {
		t.Fatalf("Secret %s/%s: no certificate", ns, name)
	}
	crt, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return crt
}

// dialTLS connects to addr as a client with the certificate of a cert-manager Secret's data,
// verifying the server's against its ca.crt and serverName.
func dialTLS(addr, serverName string, client map[string][]byte) (*tls.Conn, error) {
	pair, err := tls.X509KeyPair(client[corev1.TLSCertKey], client[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(client["ca.crt"])
	return tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr,
		&tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, ServerName: serverName, MinVersion: tls.VersionTLS12})
}

// servedSerial connects to the RadSec port as a client with the NAS's certificate, verifies
// the server's against the CA and serverName, and compares its serial number with want.
func servedSerial(addr, serverName string, nas map[string][]byte, want *big.Int) error {
	conn, err := dialTLS(addr, serverName, nas)
	if err != nil {
		return err
	}
	defer conn.Close()
	if got := conn.ConnectionState().PeerCertificates[0].SerialNumber; got.Cmp(want) != 0 {
		return fmt.Errorf("served serial %x, want %x", got, want)
	}
	return nil
}

func radsecNodePort(t *testing.T, c client.Client) int32 {
	t.Helper()
	return nodePort(t, c, radsecRelease+"-dc1-radsec", "radsec")
}

// nodePort is the NodePort of the port named port of the Service name in radsecNS.
func nodePort(t *testing.T, c client.Client, name, port string) int32 {
	t.Helper()
	svc := &corev1.Service{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: radsecNS, Name: name}, svc); err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == port }); i >= 0 && svc.Spec.Ports[i].NodePort != 0 {
		return svc.Spec.Ports[i].NodePort
	}
	t.Fatalf("Service %s: no NodePort for %s: %+v", svc.Name, port, svc.Spec.Ports)
	return 0
}

// diameterTLSCER connects to addr over TLS with the peer's certificate (verifying the server's
// against the CA and serverName, the data center's Diameter identity), sends a CER as
// originHost and wants a CEA with Result-Code 2001.
func diameterTLSCER(addr, serverName string, peer map[string][]byte, originHost string) error {
	conn, err := dialTLS(addr, serverName, peer)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	cer := diam.NewRequest(diam.CapabilitiesExchange, 0, dict.Default)
	cer.NewAVP(avp.OriginHost, avp.Mbit, 0, datatype.DiameterIdentity(originHost))
	cer.NewAVP(avp.OriginRealm, avp.Mbit, 0, datatype.DiameterIdentity("epc.test"))
	cer.NewAVP(avp.HostIPAddress, avp.Mbit, 0, datatype.Address(net.ParseIP(clustertest.NodeIP)))
	cer.NewAVP(avp.VendorID, avp.Mbit, 0, datatype.Unsigned32(0))
	cer.NewAVP(avp.ProductName, 0, 0, datatype.UTF8String("cluster-test"))
	cer.NewAVP(avp.AuthApplicationID, avp.Mbit, 0, datatype.Unsigned32(16777238))
	if _, err := cer.WriteTo(conn); err != nil {
		return err
	}
	cea, err := diam.ReadMessage(conn, dict.Default)
	if err != nil {
		return fmt.Errorf("no CEA: %w", err)
	}
	rc, err := cea.FindAVP(avp.ResultCode, 0)
	if err != nil {
		return fmt.Errorf("CEA without Result-Code: %s", cea)
	}
	if code := rc.Data.(datatype.Unsigned32); code != diam.Success {
		return fmt.Errorf("CEA %d", code)
	}
	return nil
}

// The FreeRADIUS RadSec proxy (hack/freeradius.sh --role radsec-proxy) on the host: radclient
// sends it UDP with radsecProxySecret, it forwards over TLS with the NAS's certificate.
const (
	radsecProxy       = "radsec-proxy"
	radsecProxySecret = "proxy-secret-1"
)

func freeradius(t *testing.T, dir string, args ...string) {
	t.Helper()
	root, _ := clustertest.RepoRoot()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "freeradius.sh"), args...)
	cmd.Env = append(os.Environ(), "FREERADIUS_HOME="+filepath.Join(dir, "freeradius"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/freeradius.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// radsecProxyRun is a running proxy: addr takes radclient's Access-Requests.
type radsecProxyRun struct{ dir, addr string }

// startRadSecProxy configures and starts the proxy towards home.
func startRadSecProxy(t *testing.T, dir, home string) *radsecProxyRun {
	t.Helper()
	port := testenv.FreeUDPPorts(t, 2)
	freeradius(t, dir, "config", radsecProxy, "--role", "radsec-proxy", "--port", fmt.Sprint(port),
		"--secret", radsecProxySecret, "--home", home, "--tls-cert", filepath.Join(dir, "client.crt"),
		"--tls-key", filepath.Join(dir, "client.key"), "--tls-ca", filepath.Join(dir, "ca.crt"))
	freeradius(t, dir, "start", radsecProxy)
	t.Cleanup(func() { freeradius(t, dir, "stop", radsecProxy) })
	return &radsecProxyRun{dir: dir, addr: fmt.Sprintf("127.0.0.1:%d", port)}
}

// restart makes the proxy open a new TLS connection.
func (p *radsecProxyRun) restart(t *testing.T) {
	t.Helper()
	freeradius(t, p.dir, "stop", radsecProxy)
	freeradius(t, p.dir, "start", radsecProxy)
}
