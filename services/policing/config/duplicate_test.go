package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Two clients of one name are refused (issue 33: CoA would use the first one's secret and
// port for the second one's sessions): in the configuration, in the clients file (at start
// and at reload, which both read it through AllClients), and across the two.
func TestDuplicateClientNames(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfgPath := write("policing.yaml", `subscribers: {source: file, file: /s}
clients:
  - name: bng
    address: 192.0.2.1
    secretFile: /a
  - name: bng
    address: 192.0.2.2
    secretFile: /b
`)
	_, err := Load(cfgPath, nil, nil)
	if err == nil {
		t.Fatal("two clients named bng in the configuration were accepted")
	}
	for _, w := range []string{"clients[1].name", `"bng"`, "clients[0]"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("configuration: the error does not name %s: %v", w, err)
		}
	}

	clients := write("clients.yaml", "- {name: bng, address: 192.0.2.1, secretFile: /a}\n- {name: bng, address: 192.0.2.2, secretFile: /b}\n")
	_, err = LoadClientsFile(clients)
	if err == nil || !strings.Contains(err.Error(), clients) || !strings.Contains(err.Error(), "clients[1].name") || !strings.Contains(err.Error(), "clients[0]") {
		t.Errorf("clients file: %v; want a refusal naming the file, clients[1].name and clients[0]", err)
	}

	clients = write("clients2.yaml", "- {name: bng, address: 192.0.2.2, secretFile: /b}\n")
	cfg := Config{Clients: []Client{{Name: "bng", Address: "192.0.2.1", SecretFile: "/a"}}, ClientsFile: clients}
	_, err = cfg.AllClients()
	if err == nil || !strings.Contains(err.Error(), "clients[0] (configuration)") || !strings.Contains(err.Error(), clients+":1:3: clients[0]") {
		t.Errorf("configuration and clients file: %v; want a refusal naming both entries", err)
	}
}
