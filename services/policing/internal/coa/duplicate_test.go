package coa

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/nas"
	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// Two clients with one name (issue 33): CoA finds a session's NAS by the client name recorded
// with the session, so the second client's sessions would get the first one's secret and CoA
// port. The configuration must be refused, naming both entries; if it were accepted, the
// second client's session must get the second client's secret and port.
func TestDuplicateClientNameCoA(t *testing.T) {
	dir := t.TempDir()
	for name, secret := range map[string]string{"a": "first-secret", "b": "second-secret"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(secret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := config.Config{Clients: []config.Client{
		{Name: "bng", Address: "192.0.2.1", SecretFile: filepath.Join(dir, "a"), CoAPort: 3799},
		{Name: "bng", Address: "192.0.2.2", SecretFile: filepath.Join(dir, "b"), CoAPort: 1700},
	}}
	all, err := cfg.AllClients()
	if err != nil {
		for _, w := range []string{"clients[0]", "clients[1]", `"bng"`} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("the refusal does not name %s: %v", w, err)
			}
		}
		return
	}
	tab, err := nas.Build(all)
	if err != nil {
		t.Fatal(err)
	}
	s := &Sender{Clients: func() *nas.Table { return tab }}
	sess := &session.Session{Key: session.Key{NAS: "192.0.2.2", ID: "s2"}, ClientName: "bng",
		NASIPAddress: netip.MustParseAddr("192.0.2.2")}
	c := s.client(sess)
	if c == nil {
		t.Fatal("no client for the second NAS's session")
	}
	to, _ := target(c, sess)
	if string(c.Secret) != "second-secret" || to.Port() != 1700 {
		t.Fatalf("two clients named bng were accepted, and CoA for the second one's session (NAS 192.0.2.2) "+
			"uses secret %q and target %v: the first client's", c.Secret, to)
	}
}
