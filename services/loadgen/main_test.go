package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/services/loadgen/internal/population"
	"github.com/openaaa/openaaa/services/loadgen/internal/report"
)

func TestParseTarget(t *testing.T) {
	for in, want := range map[string][3]string{
		"127.0.0.1:1812":          {"t1", "127.0.0.1:1812", "127.0.0.1:1813"},
		"dc2=127.0.0.2:1812/1900": {"dc2", "127.0.0.2:1812", "127.0.0.2:1900"},
		"[::1]:1812":              {"t1", "[::1]:1812", "[::1]:1813"},
		"localhost:18120/18121":   {"t1", "localhost:18120", "localhost:18121"},
	} {
		tg, err := parseTarget(in, 0)
		if err != nil || [3]string{tg.Name, tg.Auth, tg.Acct} != want {
			t.Errorf("%s: %+v %v, want %v", in, tg, err, want)
		}
	}
	for _, bad := range []string{"127.0.0.1", "h:x", "h:1812/x", "h:65535"} {
		if _, err := parseTarget(bad, 0); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func lg(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := realMain(args, &out, &errb)
	return out.String(), errb.String(), code
}

// The demo mode: a bounded number of sessions of the field flow, report as JSON.
func TestRunJSONAgainstResponder(t *testing.T) {
	srv := startResponder(t, 50)
	dir := t.TempDir()
	jsonOut := filepath.Join(dir, "r.json")
	out, stderr, code := lg(t, "run", "--target", srv.Target(), "--users", "50", "--sessions", "20", "--concurrency", "4",
		"--json", "--json-out", jsonOut, "--label", "demo", "--require-reply-ma", "--server-pid", fmt.Sprint(os.Getpid()), "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r report.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if r.Label != "demo" || r.Sessions != 20 || r.SessionsDone != 20 || r.Answered != 20*8 || r.Accepts != 20 || r.CPUMicrosPerTx == nil {
		t.Errorf("report: %+v", r)
	}
	if _, err := report.ReadReport(jsonOut); err != nil {
		t.Error(err)
	}
	// The table is the default.
	out, stderr, code = lg(t, "run", "--target", srv.Target(), "--mode", "auth", "--auth", "chap", "--sessions", "5", "--quiet")
	if code != 0 || !strings.Contains(out, "incoming TPS") || !strings.Contains(out, "5 accept") {
		t.Errorf("exit %d\n%s\n%s", code, out, stderr)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"run"}, {"run", "--target", "127.0.0.1:1", "--mode", "x"}, {"run", "--target", "127.0.0.1:1", "--duration", "0s"}, {"nope"}, {}} {
		if _, _, code := lg(t, args...); code == 0 {
			t.Errorf("%v: exit 0", args)
		}
	}
}

func TestSubscribersAndCompareCommands(t *testing.T) {
	dir := t.TempDir()
	yml, users := filepath.Join(dir, "s.yaml"), filepath.Join(dir, "users")
	if out, stderr, code := lg(t, "subscribers", "--users", "7", "--policing", yml, "--freeradius", users); code != 0 || !strings.Contains(out, "7 subscribers") {
		t.Fatalf("%d %s %s", code, out, stderr)
	}
	p, err := population.Load(yml)
	if err != nil || len(p.Users) != 7 {
		t.Fatal(err)
	}
	var files []string
	for i, l := range []string{"a", "b", "a", "b"} {
		f := filepath.Join(dir, fmt.Sprintf("%d.json", i))
		r := &report.Report{Label: l, IncomingTPS: float64(100 * (i + 1)), Latency: map[string]report.Latency{report.KeyAll: {P99: 1}}}
		population.WriteFile(f, r.WriteJSON)
		files = append(files, f)
	}
	out, stderr, code := lg(t, append([]string{"compare"}, files...)...)
	if code != 0 || !strings.Contains(out, "| **median** | 200.0 |") {
		t.Fatalf("%d\n%s\n%s", code, out, stderr)
	}

	// Overload rounds: each run against its own maximum and its run at 1×.
	mk := func(name string, tps float64) string {
		f := filepath.Join(dir, name+".json")
		r := &report.Report{Label: name, IncomingTPS: tps, Latency: map[string]report.Latency{report.KeyAll: {P99: 1}}}
		population.WriteFile(f, r.WriteJSON)
		return f
	}
	args := append([]string{"compare",
		"--overload", mk("over-1", 90), "--overload-max", mk("max-1", 100), "--overload-1x", mk("at1x-1", 80),
		"--overload", mk("over-2", 50), "--overload-max", mk("max-2", 100), "--overload-1x", mk("at1x-2", 100),
		"--rate-base", mk("fresh", 120)}, files...)
	out, stderr, code = lg(t, args...)
	for _, want := range []string{"= 90.0% of the measured maximum 100.0/s (max-1)", "112.5% of that", "= 50.0% of the measured maximum 100.0/s (max-2)",
		"maximum 120.0/s (fresh", "| overload goodput ≥ 90% of max | 70.0% (median of 2 rounds: 90.0, 50.0) | no |"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("%d: output lacks %q\n%s\n%s", code, want, out, stderr)
		}
	}
	// One maximum per overload run, or one for all.
	if _, _, code := lg(t, append([]string{"compare", "--overload", mk("o1", 1), "--overload", mk("o2", 1),
		"--overload-max", mk("m1", 1), "--overload-max", mk("m2", 1), "--overload-max", mk("m3", 1)}, files...)...); code == 0 {
		t.Error("3 maxima for 2 overload runs: exit 0")
	}
}

// freeradiusSh runs hack/freeradius.sh with its instances under dir: its output.
func freeradiusSh(t *testing.T, dir string) func(args ...string) string {
	script := filepath.Join(testenv.Root(t), "hack", "freeradius.sh")
	return func(args ...string) string {
		t.Helper()
		cmd := exec.Command(script, args...)
		cmd.Env = append(os.Environ(), "FREERADIUS_HOME="+filepath.Join(dir, "fr"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("freeradius.sh %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
}

// TestFreeRADIUS drives a real FreeRADIUS, set up by hack/freeradius.sh, with the flow.
func TestFreeRADIUS(t *testing.T) {
	if testing.Short() && !testenv.Required() {
		t.Skip("integration test")
	}
	_, err := exec.LookPath("freeradius")
	if err != nil {
		_, err = os.Stat("/usr/sbin/freeradius")
	}
	testenv.Need(t, err == nil, "freeradius (hack/freeradius.sh install)")
	dir := t.TempDir()
	users := filepath.Join(dir, "users")
	if _, stderr, code := lg(t, "subscribers", "--users", "100", "--freeradius", users); code != 0 {
		t.Fatal(stderr)
	}
	port := testenv.FreeUDPPorts(t, 2)
	sh := freeradiusSh(t, dir)
	sh("config", "lg", "--port", fmt.Sprint(port), "--users", users, "--threads", "2")
	pid := sh("start", "lg")
	defer sh("stop", "lg")
	out, stderr, code := lg(t, "run", "--target", fmt.Sprintf("127.0.0.1:%d", port), "--users", "100", "--sessions", "30",
		"--concurrency", "4", "--interims", "2", "--duration", "20s", "--json", "--quiet", "--server-pid", pid)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r report.Report
	json.Unmarshal([]byte(out), &r)
	if r.Accepts != 30 || r.AcctResponses != 30*4 || r.Errors+r.Timeouts != 0 || r.ServerCPUSeconds == nil {
		t.Errorf("against FreeRADIUS: %s", out)
	}
	// Detail files were written by the default accounting.
	matches, _ := filepath.Glob(filepath.Join(dir, "fr", "lg", "radacct", "127.0.0.1", "detail-*"))
	if len(matches) == 0 {
		t.Error("no detail file written")
	}
	// CHAP and a wrong password.
	out, _, _ = lg(t, "run", "--target", fmt.Sprintf("127.0.0.1:%d", port), "--mode", "auth", "--auth", "chap", "--users", "100",
		"--sessions", "5", "--json", "--quiet")
	json.Unmarshal([]byte(out), &r)
	if r.Accepts != 5 {
		t.Errorf("CHAP against FreeRADIUS: %s", out)
	}
	out, _, _ = lg(t, "run", "--target", fmt.Sprintf("127.0.0.1:%d", port), "--mode", "auth", "--users", "100",
		"--password-pattern", "wrong%d", "--sessions", "3", "--json", "--quiet")
	json.Unmarshal([]byte(out), &r)
	if r.Rejects != 3 {
		t.Errorf("wrong password against FreeRADIUS: %s", out)
	}
}

// writeEAPCerts writes a CA, a server certificate for "radius.test" and a client certificate
// for user001 (PEM) into dir.
func writeEAPCerts(t *testing.T, dir string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "loadgen test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, der []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("ca.pem", "CERTIFICATE", caDER)
	for i, c := range []struct {
		name, cn string
		eku      x509.ExtKeyUsage
	}{{"server", "radius.test", x509.ExtKeyUsageServerAuth}, {"client", "user001", x509.ExtKeyUsageClientAuth}} {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(int64(i + 2)), Subject: pkix.Name{CommonName: c.cn}, DNSNames: []string{c.cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{c.eku}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caTmpl, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, _ := x509.MarshalPKCS8PrivateKey(key)
		write(c.name+".pem", "CERTIFICATE", der)
		write(c.name+".key", "PRIVATE KEY", kder)
	}
}

// TestFreeRADIUSEAP: the EAP peer (--auth eap-tls, peap-mschapv2) against FreeRADIUS's eap
// module, as make bench-eap runs it: accepted conversations of several rounds, and a wrong
// PEAP password rejected.
func TestFreeRADIUSEAP(t *testing.T) {
	if testing.Short() && !testenv.Required() {
		t.Skip("integration test")
	}
	_, err := os.Stat("/usr/sbin/freeradius")
	testenv.Need(t, err == nil, "freeradius (hack/freeradius.sh install)")
	dir := t.TempDir()
	writeEAPCerts(t, dir)
	users := filepath.Join(dir, "users")
	if _, stderr, code := lg(t, "subscribers", "--users", "20", "--user-pattern", "user%03d", "--freeradius", users); code != 0 {
		t.Fatal(stderr)
	}
	port := testenv.FreeUDPPorts(t, 2)
	sh := freeradiusSh(t, dir)
	sh("config", "eap", "--port", fmt.Sprint(port), "--users", users, "--threads", "2", "--require-ma",
		"--eap-cert", filepath.Join(dir, "server.pem"), "--eap-key", filepath.Join(dir, "server.key"), "--eap-ca", filepath.Join(dir, "ca.pem"))
	sh("start", "eap")
	defer sh("stop", "eap")
	run := func(method, passwords string, sessions int) report.Report {
		t.Helper()
		out, stderr, code := lg(t, "run", "--target", fmt.Sprintf("127.0.0.1:%d", port), "--mode", "auth", "--auth", method,
			"--users", "20", "--user-pattern", "user%03d", "--password-pattern", passwords, "--sessions", fmt.Sprint(sessions),
			"--concurrency", "2", "--duration", "60s", "--timeout", "5s", "--require-reply-ma", "--json", "--quiet",
			"--eap-ca", filepath.Join(dir, "ca.pem"), "--eap-server-name", "radius.test",
			"--eap-cert", filepath.Join(dir, "client.pem"), "--eap-key", filepath.Join(dir, "client.key"))
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", method, code, stderr)
		}
		var r report.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, m := range []string{"eap-tls", "peap-mschapv2"} {
		r := run(m, "pass%05d", 6)
		// A conversation takes several rounds; each authentication is one transaction.
		if r.Accepts != 6 || r.Answered != 6 || r.Errors+r.Timeouts+r.Rejects != 0 || r.EAPRounds < 6*4 {
			t.Errorf("%s against FreeRADIUS: %+v", m, r)
		}
	}
	if r := run("peap-mschapv2", "wrong%05d", 3); r.Rejects != 3 || r.Accepts != 0 {
		t.Errorf("wrong PEAP password against FreeRADIUS: %+v", r)
	}
}

// The AAALoadTest sample (config/samples) names a user count whose policing subscriber file
// fits a ConfigMap (1 MiB, less room for the object's metadata): issue 32 found 10,000 users,
// 1.13 MB, that no ConfigMap could hold.
func TestSampleLoadTestUsersFitAConfigMap(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "aaa_v1alpha1_aaaloadtest.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var count string
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "count:" {
			count = f[1]
		}
	}
	if count == "" {
		t.Fatal("the sample sets no spec.users.count")
	}
	out := filepath.Join(t.TempDir(), "subscribers.yaml")
	var stdout, stderr bytes.Buffer
	if err := cmdSubscribers([]string{"--users", count, "--policing", out}, &stdout, &stderr); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	st, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	const limit = 1<<20 - 64<<10 // 1 MiB, less 64 KiB for the ConfigMap's metadata
	t.Logf("%s users: %d bytes", count, st.Size())
	if st.Size() > limit {
		t.Errorf("%s users make a %d-byte subscriber file: no ConfigMap holds it (at most %d)", count, st.Size(), limit)
	}
}
