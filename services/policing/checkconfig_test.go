package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
