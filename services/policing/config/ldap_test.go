package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLDAPValidationNamesKeys(t *testing.T) {
	c := Default()
	c.Clients = []Client{{Name: "x", Address: "127.0.0.1", SecretFile: "/s"}}
	c.Subscribers.Source = "ldap"
	err := c.Validate()
	for _, want := range []string{"subscribers.ldap.urls", "subscribers.ldap.baseDN"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("empty ldap config: %v; want an error naming %s", err, want)
		}
	}
	c.Subscribers.LDAP.URLs = []string{"ldaps://ldap.example.net"}
	c.Subscribers.LDAP.BaseDN = "ou=subscribers,dc=example,dc=net"
	if err := c.Validate(); err != nil {
		t.Fatalf("valid ldap config: %v", err)
	}
	for _, tc := range []struct {
		mod  func(*LDAP)
		want string
	}{
		{func(l *LDAP) { l.URLs = []string{"http://x"} }, "subscribers.ldap.urls[0]"},
		{func(l *LDAP) { l.StartTLS = true }, "startTLS applies to ldap://"},
		{func(l *LDAP) { l.Filter = "(uid=%s)" }, "subscribers.ldap.filter"},
		{func(l *LDAP) { l.Filter = "(uid={username}" }, "subscribers.ldap.filter"},
		{func(l *LDAP) { l.BindDN = "cn=x" }, "subscribers.ldap.bindPasswordFile"},
		{func(l *LDAP) { l.BaseDN = "not a dn" }, "subscribers.ldap.baseDN"},
		{func(l *LDAP) { l.Scope = "deep" }, "subscribers.ldap.scope"},
		{func(l *LDAP) { l.PoolSize = 0 }, "subscribers.ldap.poolSize"},
		{func(l *LDAP) { l.Timeout = 0 }, "subscribers.ldap.timeout"},
		{func(l *LDAP) { l.LookupTimeout = 0 }, "subscribers.ldap.lookupTimeout"},
		{func(l *LDAP) { l.Cache.TTL = 0 }, "subscribers.ldap.cache.ttl"},
		{func(l *LDAP) { l.Cache.Size = 0 }, "subscribers.ldap.cache.size"},
		{func(l *LDAP) { l.Attributes.Password = "" }, "subscribers.ldap.attributes.password"},
		{func(l *LDAP) { l.ProfilesFile = "/etc/openaaa/profiles.yaml" }, "subscribers.ldap.profilesFile: profilesFile and attributes.profileName go together"},
		{func(l *LDAP) { l.Attributes.ProfileName = "openaaaProfile" }, "subscribers.ldap.profilesFile"},
	} {
		c2 := c
		tc.mod(&c2.Subscribers.LDAP)
		if err := c2.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want an error naming %q, got %v", tc.want, err)
		}
	}
	c.Reload.Interval = -1
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "reload.interval") {
		t.Errorf("negative reload.interval: %v", err)
	}
}

func TestClientsFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "clients.yaml")
	if err := os.WriteFile(path, []byte("clients:\n  - {name: a, address: 192.0.2.1, secretFile: /s}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := Default()
	c.ClientsFile = path
	c.Clients = []Client{{Name: "inline", Address: "127.0.0.1", SecretFile: "/s"}}
	all, err := c.AllClients()
	if err != nil || len(all) != 2 || all[1].Name != "a" {
		t.Fatalf("AllClients = %+v, %v", all, err)
	}
	for text, want := range map[string]string{
		"clients:\n  - {name: a, address: nope, secretFile: /s}\n": "clients[0].address",
		"clients:\n  - {name: a, adress: 192.0.2.1}\n":             "unknown key",
		"clients: [": path,
	} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadClientsFile(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error with %q", text, err, want)
		}
	}
}
