package main_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// checkConfigDir writes a configuration whose subscriber file has the given profile reply
// attributes, and extra configuration lines.
func checkConfigDir(t *testing.T, replyAttributes, extra string) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("secret", "s3cret\n")
	write("subscribers.yaml", fmt.Sprintf(`
profiles:
  bng: {replyAttributes: %s}
subscribers:
  - {username: alice, password: wonderland, profileName: bng}
`, replyAttributes))
	write("policing.yaml", fmt.Sprintf(`
radius: {authAddress: "127.0.0.1:0", acctAddress: "127.0.0.1:0"%s}
admin: {address: ""}
clients:
  - {name: loopback, address: 127.0.0.1, secretFile: %s/secret}
subscribers: {source: file, file: %s/subscribers.yaml}
session: {store: none}
`, extra, dir, dir))
	return filepath.Join(dir, "policing.yaml")
}

// check-config refuses what serve refuses: a subscriber file naming an attribute that no
// dictionary has, with the subscriber and the attribute named; and it accepts what serve
// accepts.
func TestCheckConfigValidatesSubscribersAndDictionaries(t *testing.T) {
	bad := checkConfigDir(t, `{No-Such-Attribute: "1", Framed-MTU: "1492"}`, "")
	out, err := exec.Command(policingBin, "check-config", "--config", bad).CombinedOutput()
	if err == nil {
		t.Fatalf("check-config passed a subscriber file that serve refuses:\n%s", out)
	}
	for _, w := range []string{"alice", "No-Such-Attribute"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("error does not name %s:\n%s", w, out)
		}
	}
	serve, err := exec.Command(policingBin, "serve", "--config", bad).CombinedOutput()
	if err == nil || !strings.Contains(string(serve), "No-Such-Attribute") {
		t.Fatalf("serve with the same file: %v\n%s", err, serve)
	}

	good := checkConfigDir(t, `{Cisco-AVPair: ["ip:addr-pool=a", "ip:vrf-id=b"], Framed-MTU: 1492}`, "")
	if out, err := exec.Command(policingBin, "check-config", "--config", good).CombinedOutput(); err != nil {
		t.Fatalf("check-config refused a good configuration: %v\n%s", err, out)
	}

	// A dictionary that cannot be read is refused, naming the key.
	missing := checkConfigDir(t, `{Framed-MTU: "1492"}`, `, dictionaries: [/nonexistent/dictionary]`)
	out, err = exec.Command(policingBin, "check-config", "--config", missing).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "radius.dictionaries") {
		t.Fatalf("check-config with a missing dictionary: %v\n%s", err, out)
	}
}

// check-config on a broken file prints every error, each with file:line:column and its key,
// in file order, and exits non-zero; warnings (an unknown POLICING_* variable, a CIDR with host
// bits set) are printed and do not fail it (issue 33).
func TestCheckConfigPrintsEveryError(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policing.yaml")
	if err := os.WriteFile(path, []byte(`radius:
  authAdress: ":1812"
  workers: 0
clients:
  - {name: bng, address: 192.0.2.1, secretFile: /a}
  - {name: bng, address: 192.0.2.2, secretFile: /b}
subscribers: {source: file, file: /s}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(policingBin, "check-config", "--config", path).CombinedOutput()
	if err == nil {
		t.Fatalf("check-config passed a broken file:\n%s", out)
	}
	want := []string{
		"3 errors in the configuration",
		path + ":2:3: radius.authAdress: unknown key; did you mean authAddress?",
		path + ":3:3: radius.workers: must be at least 1, got 0",
		path + `:6:6: clients[1].name: "bng" is also the name of clients[0] (line 5)`,
	}
	last := -1
	for _, w := range want {
		i := strings.Index(string(out), w)
		if i < 0 {
			t.Errorf("check-config does not print %q:\n%s", w, out)
		} else if i < last {
			t.Errorf("%q is out of file order:\n%s", w, out)
		}
		last = i
	}

	good := checkConfigDir(t, `{Framed-MTU: 1492}`, "")
	text, _ := os.ReadFile(good)
	if err := os.WriteFile(good, []byte(strings.Replace(string(text), "address: 127.0.0.1,", "address: 127.0.0.1/8,", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(policingBin, "check-config", "--config", good)
	cmd.Env = append(os.Environ(), "POLICING_RADIUS_WORKER=8")
	out, err = cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("warnings failed check-config: %v\n%s", err, out)
	}
	for _, w := range []string{
		"policing: warning: environment: POLICING_RADIUS_WORKER: unknown variable: it sets no key and is ignored; did you mean POLICING_RADIUS_WORKERS?",
		"policing: warning: " + good + ":5:22: clients[0].address: 127.0.0.1/8 has host bits set: it means 127.0.0.0/8",
	} {
		if !strings.Contains(string(out), w) {
			t.Errorf("check-config does not warn %q:\n%s", w, out)
		}
	}

	// A missing certificate file is named by its key.
	certs := checkConfigDir(t, `{Framed-MTU: 1492}`, `, radsec: {address: "127.0.0.1:0", certFile: /nonexistent/tls.crt, keyFile: /nonexistent/tls.key, caFile: /nonexistent/ca.crt}`)
	out, err = exec.Command(policingBin, "check-config", "--config", certs).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "radius.radsec.certFile: open /nonexistent/tls.crt") {
		t.Fatalf("check-config with a missing certificate: %v\n%s", err, out)
	}
}

// A client of clientsFile whose secret file is missing is named by its file, line and index
// there, not by its index in the list of all clients.
func TestCheckConfigClientsFileSecretNamed(t *testing.T) {
	path := checkConfigDir(t, `{Framed-MTU: 1492}`, "")
	dir := filepath.Dir(path)
	clients := filepath.Join(dir, "clients.yaml")
	if err := os.WriteFile(clients, []byte("- {name: other, address: 192.0.2.9, secretFile: /nonexistent/secret}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	text, _ := os.ReadFile(path)
	if err := os.WriteFile(path, append(text, []byte("clientsFile: "+clients+"\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(policingBin, "check-config", "--config", path).CombinedOutput()
	if want := "clientsFile " + clients + ":1:3: clients[0].secretFile: open /nonexistent/secret"; err == nil || !strings.Contains(string(out), want) {
		t.Fatalf("check-config: %v\n%s\nwant %q", err, out, want)
	}
}

// serve logs the warnings at start and starts all the same.
func TestServeLogsConfigWarnings(t *testing.T) {
	path := checkConfigDir(t, `{Framed-MTU: 1492}`, "")
	cmd := exec.Command(policingBin, "serve", "--config", path)
	cmd.Env = append(os.Environ(), "POLICING_RADIUS_WORKER=8")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	found := make(chan bool, 1)
	go func() {
		s := bufio.NewScanner(stderr)
		warned := false
		for s.Scan() {
			line := s.Text()
			if strings.Contains(line, "POLICING_RADIUS_WORKER: unknown variable") && strings.Contains(line, "WARN") {
				warned = true
			}
			if strings.Contains(line, "policing started") {
				found <- warned
				return
			}
		}
		found <- false
	}()
	select {
	case ok := <-found:
		if !ok {
			t.Fatal("serve did not log the warning before it started")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not start")
	}
}
