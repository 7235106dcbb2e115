package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// minimal is the smallest valid file: everything else comes from the defaults.
const minimal = `
clients:
  - {name: bng, address: 192.0.2.1, secretFile: /run/secrets/bng}
  - {name: wifi, address: 198.51.100.0/24, secretFile: /run/secrets/wifi, requireMessageAuthenticator: false}
subscribers: {file: /etc/openaaa/subscribers.yaml}
`

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policing.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func load(t *testing.T, text string, sets []string, env []string) (*Config, error) {
	t.Helper()
	return Load(writeConfig(t, text), sets, env)
}

func TestLoadDefaults(t *testing.T) {
	c, err := load(t, minimal, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := Default()
	if c.Radius.AuthAddress != ":1812" || c.Radius.AcctAddress != ":1813" || c.Radius.Workers != d.Radius.Workers ||
		c.Radius.DuplicateWindow.D() != 5*time.Second || c.Log.Level != "info" || c.Session.Store != "embedded" ||
		c.Session.Embedded.Shards != 64 || c.Admin.Address != ":9812" || c.Subscribers.Source != "file" {
		t.Fatalf("defaults not applied: %+v", c)
	}
	if len(c.Clients) != 2 || c.Clients[1].Address != "198.51.100.0/24" {
		t.Fatalf("clients %+v", c.Clients)
	}
	if !c.Clients[0].RequiresMessageAuthenticator() {
		t.Fatal("requireMessageAuthenticator must default to true")
	}
	if !c.Session.SupersedeStale {
		t.Fatal("session.supersedeStale must default to true")
	}
	if c, err := load(t, minimal, []string{"session.supersedeStale=false"}, nil); err != nil || c.Session.SupersedeStale {
		t.Fatalf("session.supersedeStale=false: %v", err)
	}
	if c.Clients[1].RequiresMessageAuthenticator() {
		t.Fatal("requireMessageAuthenticator: false ignored")
	}
}

func TestLoadEmptyPathAndEmptyFile(t *testing.T) {
	// Defaults alone have no clients: the error names the key.
	if _, err := Load("", nil, nil); err == nil || !strings.Contains(err.Error(), "clients") {
		t.Fatalf("empty config: %v", err)
	}
	if _, err := load(t, "", nil, nil); err == nil || !strings.Contains(err.Error(), "clients") {
		t.Fatalf("empty file: %v", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml"), nil, nil); err == nil {
		t.Fatal("missing file accepted")
	}
	if _, err := load(t, "radius: [unclosed", nil, nil); err == nil {
		t.Fatal("invalid YAML accepted")
	}
}

// Every validation error names the key at fault.
func TestValidationNamesTheKey(t *testing.T) {
	cases := []struct {
		set string
		key string
	}{
		{"log.level=verbose", "log.level"},
		{"log.format=xml", "log.format"},
		{"radius.authAddress=1812", "radius.authAddress"},
		{"radius.acctAddress=localhost", "radius.acctAddress"},
		{"radius.authAddress=127.0.0.2:1812,1812", "radius.authAddress"},
		{"radius.acctAddress=127.0.0.2:1813,,127.0.0.3:1813", "radius.acctAddress"},
		{"radius.authAddress=127.0.0.2:1812,127.0.0.2:1812", "radius.authAddress"},
		{"radius.dispatch=threads", "radius.dispatch"},
		{"radius.workers=0", "radius.workers"},
		{"radius.queueSize=-1", "radius.queueSize"},
		{"radius.readers=-1", "radius.readers"},
		{"radius.maxQueueWait=0", "radius.maxQueueWait"},
		{"radius.duplicateWindow=-1s", "radius.duplicateWindow"},
		{`radius.dictionaries=["/usr/share/freeradius/dictionary", " "]`, "radius.dictionaries[1]"},
		{"radius.dictionaries=/usr/share/freeradius/dictionary", "radius.dictionaries"}, // a list, not a string
		{"admin.address=nope", "admin.address"},
		{"clients.0.name=", "clients[0].name"},
		{"clients.0.address=999.1.1.1", "clients[0].address"},
		{"clients.1.address=10.0.0.0/33", "clients[1].address"},
		{"clients.0.secretFile=", "clients[0].secretFile"},
		{"clients.1.coaPort=70000", "clients[1].coaPort"},
		{"subscribers.file=", "subscribers.file"},
		{"subscribers.source=carrier-pigeon", "subscribers.source"},
		{"session.store=redis", "session.store"},
		{"session.expiry.multiplier=-1", "session.expiry.multiplier"},
		{"session.expiry.interimInterval=0", "session.expiry.interimInterval"},
		{"session.embedded.shards=6", "session.embedded.shards"},
		{"session.embedded.shards=0", "session.embedded.shards"},
		{"session.embedded.historySize=-5", "session.embedded.historySize"},
		{"session.embedded.sweepInterval=0s", "session.embedded.sweepInterval"},
		// Type errors while decoding name the key too.
		{"radius.workers=many", "radius.workers"},
		{"session.embedded.shards=true", "session.embedded.shards"},
		{"radius.maxQueueWait=soon", "radius.maxQueueWait"},
		{"radius.duplicateWindow=[1]", "radius.duplicateWindow"},
		{"session.expiry.grace=5 parsecs", "session.expiry.grace"},
	}
	for _, c := range cases {
		t.Run(c.set, func(t *testing.T) {
			_, err := load(t, minimal, []string{c.set}, nil)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), c.key+":") {
				t.Fatalf("error %q does not name %s", err, c.key)
			}
		})
	}
}

// All problems are reported at once.
func TestValidationReportsAll(t *testing.T) {
	_, err := load(t, minimal, []string{"log.level=x", "radius.workers=0", "session.store=x"}, nil)
	if err == nil {
		t.Fatal("accepted")
	}
	for _, k := range []string{"log.level", "radius.workers", "session.store"} {
		if !strings.Contains(err.Error(), k) {
			t.Errorf("%s missing from %q", k, err)
		}
	}
}

func TestBothListenersEmpty(t *testing.T) {
	_, err := load(t, minimal, []string{`radius.authAddress=""`, `radius.acctAddress=""`}, nil)
	if err == nil || !strings.Contains(err.Error(), "radius:") {
		t.Fatalf("no listener: %v", err)
	}
	c, err := load(t, minimal, []string{`radius.acctAddress=""`}, nil)
	if err != nil || c.Radius.AcctAddress != "" {
		t.Fatalf("auth-only node: %v", err)
	}
}

func TestUnknownKeyRejected(t *testing.T) {
	for text, path := range map[string]string{
		minimal + "radius: {authAdress: ':1812'}\n": `"radius.authAdress"`,
		minimal + "bogus: 1\n":                      `"bogus"`,
		"clients:\n  - {name: a, address: 192.0.2.1, secretFile: /s, sekret: x}\nsubscribers: {file: /f}\n": `"clients[0].sekret"`,
		minimal + "session: {cassandra: {spool: {dirr: /x}}}\n":                                             `"session.cassandra.spool.dirr"`,
	} {
		_, err := load(t, text, nil, nil)
		if err == nil || !strings.Contains(err.Error(), strings.Trim(path, `"`)+": unknown key") {
			t.Fatalf("unknown key %s accepted or not named by its full path: %v", path, err)
		}
	}
	if _, err := load(t, minimal, []string{"radius.authAdress=:1"}, nil); err == nil || !strings.Contains(err.Error(), "authAdress") {
		t.Fatalf("--set of an unknown key: %v", err)
	}
}

// A key that was removed says what replaced it, in the file and in --set.
func TestRemovedKeyExplained(t *testing.T) {
	for _, c := range []struct {
		text string
		sets []string
	}{
		{minimal + "radius: {radsec: {reloadInterval: 5s}}\n", nil},
		{minimal, []string{"radius.radsec.reloadInterval=5s"}},
	} {
		_, err := load(t, c.text, c.sets, nil)
		if err == nil || !strings.Contains(err.Error(), `radius.radsec.reloadInterval: this key was removed`) || !strings.Contains(err.Error(), "reload.interval") {
			t.Fatalf("removed key: %v", err)
		}
	}
}

func TestSetOverrides(t *testing.T) {
	c, err := load(t, minimal, []string{
		"radius.workers=8",
		"radius.authAddress=127.0.0.1:11812",
		"log.level=debug",
		"clients.1.name=wifi-ctrl",
		"clients.0.requireMessageAuthenticator=false",
		"session.embedded.snapshotFile=/var/lib/openaaa/snap.jsonl",
		"radius.duplicateWindow=2s",
		"radius.maxQueueWait=0.5",
		"policy.rejectMessage=[not yaml",
		`policy.rateLimitAttribute="a: b"`,
		"radius.dictionaries=[/usr/share/freeradius/dictionary, /etc/openaaa/dictionary.local]",
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Radius.Workers != 8 || c.Radius.AuthAddress != "127.0.0.1:11812" || c.Log.Level != "debug" {
		t.Fatalf("%+v", c.Radius)
	}
	if c.Clients[1].Name != "wifi-ctrl" || c.Clients[0].Name != "bng" || c.Clients[0].RequiresMessageAuthenticator() {
		t.Fatalf("list index override: %+v", c.Clients)
	}
	if c.Session.Embedded.SnapshotFile != "/var/lib/openaaa/snap.jsonl" {
		t.Fatal("nested map created on demand")
	}
	if c.Radius.DuplicateWindow.D() != 2*time.Second || c.Radius.MaxQueueWait.D() != 500*time.Millisecond {
		t.Fatalf("durations %v %v", c.Radius.DuplicateWindow.D(), c.Radius.MaxQueueWait.D())
	}
	if c.Policy.RejectMessage != "[not yaml" {
		t.Fatalf("a value YAML cannot parse stays text: %q", c.Policy.RejectMessage)
	}
	if fmt.Sprint(c.Radius.Dictionaries) != "[/usr/share/freeradius/dictionary /etc/openaaa/dictionary.local]" {
		t.Fatalf("radius.dictionaries %q", c.Radius.Dictionaries)
	}
	if c.Policy.RateLimitAttribute != "a: b" {
		t.Fatalf("quoted YAML string: %q", c.Policy.RateLimitAttribute)
	}
	// Later --set wins.
	c, err = load(t, minimal, []string{"radius.workers=8", "radius.workers=9"}, nil)
	if err != nil || c.Radius.Workers != 9 {
		t.Fatalf("last --set must win: %v %d", err, c.Radius.Workers)
	}
}

func TestSetOverrideErrors(t *testing.T) {
	for _, set := range []string{
		"radius.workers",         // no '='
		"clients.5.name=x",       // no such item
		"clients.x.name=x",       // not an index
		"clients.-1.name=x",      // negative
		"log.level.deeper=x",     // through a scalar
		"clients.0.name.first=x", // through a scalar in a list item
	} {
		if _, err := load(t, minimal, []string{set}, nil); err == nil {
			t.Errorf("%q accepted", set)
		}
	}
}

func TestEnvOverrides(t *testing.T) {
	env := []string{
		"POLICING_RADIUS_WORKERS=12",
		"POLICING_LOG_LEVEL=warn",
		"POLICING_SESSION_EMBEDDED_SHARDS=16",
		"POLICING_RADIUS_DUPLICATEWINDOW=750ms",
		"POLICING_SESSION_EXPIRY_GRACE=30",
		"POLICING_ADMIN_ADDRESS=127.0.0.1:0",
		"POLICING_NOT_A_KEY=1",
		"HOME=/root",
		"POLICING_RADIUS_WORKERS_EXTRA",
	}
	c, err := load(t, minimal, nil, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.Radius.Workers != 12 || c.Log.Level != "warn" || c.Session.Embedded.Shards != 16 ||
		c.Radius.DuplicateWindow.D() != 750*time.Millisecond || c.Session.Expiry.Grace.D() != 30*time.Second ||
		c.Admin.Address != "127.0.0.1:0" {
		t.Fatalf("env not applied: %+v %+v", c.Radius, c.Session)
	}
	// --set beats the environment.
	c, err = load(t, minimal, []string{"radius.workers=3"}, []string{"POLICING_RADIUS_WORKERS=12"})
	if err != nil || c.Radius.Workers != 3 {
		t.Fatalf("--set must win over env: %v %d", err, c.Radius.Workers)
	}
	// A bad env value names the key.
	if _, err := load(t, minimal, nil, []string{"POLICING_RADIUS_WORKERS=lots"}); err == nil || !strings.Contains(err.Error(), "radius.workers") {
		t.Fatalf("bad env: %v", err)
	}
}

func TestEnvNames(t *testing.T) {
	names := map[string]string{}
	for _, kv := range EnvNames() {
		names[kv[0]] = kv[1]
	}
	for env, key := range map[string]string{
		"POLICING_RADIUS_AUTHADDRESS":           "radius.authAddress",
		"POLICING_SESSION_EXPIRY_MULTIPLIER":    "session.expiry.multiplier",
		"POLICING_SESSION_EMBEDDED_HISTORYSIZE": "session.embedded.historySize",
	} {
		if names[env] != key {
			t.Errorf("%s -> %q, want %q", env, names[env], key)
		}
	}
	if _, ok := names["POLICING_CLIENTS"]; ok {
		t.Error("lists have no environment variable")
	}
}

func TestDuration(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{`"5s"`, 5 * time.Second, false},
		{`"1m30s"`, 90 * time.Second, false},
		{`"250ms"`, 250 * time.Millisecond, false},
		{`10`, 10 * time.Second, false},
		{`0.25`, 250 * time.Millisecond, false},
		{`"-1s"`, -time.Second, false},
		{`"5"`, 0, true}, // a string needs a unit
		{`"fast"`, 0, true},
		{`true`, 0, true},
		{`{}`, 0, true},
		{`1e300`, 0, true}, // would overflow into a negative duration
		{`-1e300`, 0, true},
	}
	for _, c := range cases {
		var d Duration
		err := json.Unmarshal([]byte(c.in), &d)
		if c.err {
			if err == nil {
				t.Errorf("%s: accepted as %v", c.in, d.D())
			}
			continue
		}
		if err != nil || d.D() != c.want {
			t.Errorf("%s: %v, %v; want %v", c.in, d.D(), err, c.want)
		}
	}
	b, err := json.Marshal(Duration(90 * time.Second))
	if err != nil || string(b) != `"1m30s"` {
		t.Fatalf("MarshalJSON = %s, %v", b, err)
	}
	var back Duration
	if err := json.Unmarshal(b, &back); err != nil || back.D() != 90*time.Second {
		t.Fatal("round trip")
	}
}

func TestParseClientAddress(t *testing.T) {
	cases := []struct {
		in, want string
		err      bool
	}{
		{"192.0.2.1", "192.0.2.1/32", false},
		{"192.0.2.77/24", "192.0.2.0/24", false}, // masked
		{"2001:db8::1", "2001:db8::1/128", false},
		{"2001:db8::/32", "2001:db8::/32", false},
		{"::ffff:192.0.2.1", "192.0.2.1/32", false}, // unmapped
		{"", "", true},
		{"bng.example", "", true},
		{"192.0.2.0/40", "", true},
	}
	for _, c := range cases {
		p, err := ParseClientAddress(c.in)
		if c.err {
			if err == nil {
				t.Errorf("%q accepted as %v", c.in, p)
			}
			continue
		}
		if err != nil || p.String() != c.want {
			t.Errorf("%q = %v, %v; want %s", c.in, p, err, c.want)
		}
	}
}

// The node-wide default applies to clients that do not set their own.
func TestNodeWideMessageAuthenticatorDefault(t *testing.T) {
	text := "radius: {requireMessageAuthenticator: false}\nclients:\n  - {name: a, address: 192.0.2.1, secretFile: /s}\n  - {name: b, address: 192.0.2.2, secretFile: /s, requireMessageAuthenticator: true}\nsubscribers: {file: /f}\n"
	c, err := load(t, text, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	all, err := c.AllClients()
	if err != nil {
		t.Fatal(err)
	}
	if all[0].RequiresMessageAuthenticator() || !all[1].RequiresMessageAuthenticator() {
		t.Fatalf("a follows the node default (false), b keeps its own (true): %v %v",
			all[0].RequiresMessageAuthenticator(), all[1].RequiresMessageAuthenticator())
	}
}

// limitProxyState defaults to true node-wide; a client's own key wins over the node's.
func TestNodeWideLimitProxyStateDefault(t *testing.T) {
	c, err := load(t, minimal, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Radius.LimitProxyState || !c.Clients[0].LimitsProxyState() {
		t.Fatal("limitProxyState must default to true")
	}
	text := "radius: {limitProxyState: false}\nclients:\n  - {name: a, address: 192.0.2.1, secretFile: /s}\n  - {name: b, address: 192.0.2.2, secretFile: /s, limitProxyState: true}\nsubscribers: {file: /f}\n"
	if c, err = load(t, text, nil, nil); err != nil {
		t.Fatal(err)
	}
	all, err := c.AllClients()
	if err != nil {
		t.Fatal(err)
	}
	if all[0].LimitsProxyState() || !all[1].LimitsProxyState() {
		t.Fatalf("a follows the node default (false), b keeps its own (true): %v %v", all[0].LimitsProxyState(), all[1].LimitsProxyState())
	}
	if c, err = load(t, minimal, []string{"clients.1.limitProxyState=false"}, nil); err != nil || c.Clients[1].LimitsProxyState() {
		t.Fatalf("clients.1.limitProxyState=false: %v", err)
	}
}

// A listen key takes several addresses, one socket each.
func TestSeveralListenAddresses(t *testing.T) {
	c, err := load(t, minimal+`radius: {authAddress: "127.0.0.2:1812, [::1]:1812", acctAddress: "0.0.0.0:1813"}`+"\n", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := Addresses(c.Radius.AuthAddress); len(got) != 2 || got[0] != "127.0.0.2:1812" || got[1] != "[::1]:1812" {
		t.Fatalf("auth addresses %q", got)
	}
	if got := Addresses(c.Radius.AcctAddress); len(got) != 1 || got[0] != "0.0.0.0:1813" {
		t.Fatalf("acct addresses %q", got)
	}
	if got := Addresses(""); len(got) != 0 {
		t.Fatalf("empty key: %q", got)
	}
}

// inline with a Lua policy is refused: a decision may run for its whole budget, and on a
// reader it stops that reader reading (issue 35).
func TestInlineDispatchRefusedWithLuaPolicy(t *testing.T) {
	cfg := Default()
	cfg.Radius.Dispatch = "inline"
	cfg.Policy.Lua.File = "/etc/openaaa/policy.lua"
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "radius.dispatch: inline") || !strings.Contains(err.Error(), "policy.lua.file") {
		t.Fatalf("error %v, want one naming radius.dispatch and policy.lua.file", err)
	}
}

// auto serves inline only when nothing on the request path waits for I/O (and no Lua policy decides).
func TestInlineDispatch(t *testing.T) {
	cases := []struct {
		name string
		edit func(c *Config)
		want bool
	}{
		{"defaults", func(*Config) {}, true}, // embedded store, file subscribers, no proxy
		{"no-op store", func(c *Config) { c.Session.Store = "none" }, true},
		{"cassandra", func(c *Config) { c.Session.Store = "cassandra" }, false},
		{"hybrid", func(c *Config) { c.Session.Store = "hybrid" }, false},
		{"ldap", func(c *Config) { c.Subscribers.Source = "ldap" }, false},
		{"proxy", func(c *Config) { c.Proxy.Upstreams = []Upstream{{Address: "127.0.0.1:1813"}} }, false},
		{"lua policy", func(c *Config) { c.Policy.Lua.File = "/etc/openaaa/policy.lua" }, false}, // decisions leave the readers
		{"forced workers", func(c *Config) { c.Radius.Dispatch = "workers" }, false},
		{"forced inline", func(c *Config) { c.Radius.Dispatch = "inline"; c.Session.Store = "cassandra" }, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := Default()
			c.edit(&cfg)
			if got := cfg.InlineDispatch(); got != c.want {
				t.Fatalf("InlineDispatch() = %v, want %v", got, c.want)
			}
		})
	}
}
