package config

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestDiameter(t *testing.T) {
	c, err := load(t, minimal+`diameter:
  enabled: true
  originHost: pcrf1
  originRealm: example.net
  peers:
    - {originHost: pgw1, address: 10.1.2.3}
    - {originRealm: epc.example.net, address: 10.2.0.0/16}
`, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Diameter.Address != ":3868" || c.Diameter.MaxInFlight != 1024 {
		t.Fatalf("defaults: %+v", c.Diameter)
	}
	n, err := c.Diameter.Peers[0].Network()
	if err != nil || n.String() != "10.1.2.3/32" {
		t.Fatalf("single address → %v, %v", n, err)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"diameter: {enabled: true, originRealm: r, peers: [{originHost: a}]}\n", "diameter.originHost"},
		{"diameter: {enabled: true, originHost: h, originRealm: r}\n", "diameter.peers"},
		{"diameter: {enabled: true, originHost: h, originRealm: r, peers: [{}]}\n", "diameter.peers[0]"},
		{"diameter: {enabled: true, originHost: h, originRealm: r, peers: [{address: 10.0.0.300}]}\n", "diameter.peers[0].address"},
		{"diameter: {enabled: true, originHost: h, originRealm: r, peers: [{originHost: a}], tls: {address: \":5658\", certFile: c, keyFile: k}}\n", "diameter.tls.caFile"},
		{"diameter: {enabled: true, originHost: h, originRealm: r, peers: [{originHost: a}], tls: {address: 5658, certFile: c, keyFile: k, caFile: a}}\n", "diameter.tls.address"},
		{"diameter: {enabled: true, originHost: h, originRealm: r, peers: [{originHost: a}], adminURL: \"10.0.0.1:9812\"}\n", "diameter.adminURL"},
	} {
		_, err := load(t, minimal+tc.yaml, nil, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %s", tc.yaml, err, tc.want)
		}
	}
	// Off by default: nothing is required.
	if _, err := load(t, minimal, nil, nil); err != nil {
		t.Fatal(err)
	}
}

// The Diameter timers are keys, defaulted to the values that were constants in the code
// (diameter.rarTimeout 5s, flushTimeout 1s, tls.handshakeTimeout 10s) and, for the wait for
// a DPA that a stopping node's DPR gets, dprTimeout 5s; one that is not positive or past its
// bound is an error naming the key and its line.
func TestDiameterTimers(t *testing.T) {
	d := Default().Diameter
	if d.RARTimeout.D() != 5*time.Second || d.FlushTimeout.D() != time.Second || d.TLS.HandshakeTimeout.D() != 10*time.Second ||
		d.DPRTimeout.D() != 5*time.Second {
		t.Fatalf("defaults: rarTimeout %v, flushTimeout %v, tls.handshakeTimeout %v, dprTimeout %v", d.RARTimeout, d.FlushTimeout,
			d.TLS.HandshakeTimeout, d.DPRTimeout)
	}
	const enabled = `diameter:
  enabled: true
  originHost: pcrf1
  originRealm: example.net
  peers: [{originHost: pgw1}]
`
	c, err := load(t, minimal+enabled+"  rarTimeout: 30s\n  flushTimeout: 5s\n  dprTimeout: 300ms\n  tls: {handshakeTimeout: 20s}\n", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Diameter.RARTimeout.D() != 30*time.Second || c.Diameter.FlushTimeout.D() != 5*time.Second || c.Diameter.TLS.HandshakeTimeout.D() != 20*time.Second ||
		c.Diameter.DPRTimeout.D() != 300*time.Millisecond {
		t.Fatalf("set: %+v", c.Diameter)
	}
	path := writeConfig(t, minimal+enabled+"  rarTimeout: 0s\n  flushTimeout: 2h\n  dprTimeout: 2m\n  tls: {handshakeTimeout: -1s}\n")
	_, err = Load(path, nil, nil)
	if err == nil {
		t.Fatal("timers out of range accepted")
	}
	want := []string{
		path + ":11:3: diameter.rarTimeout: must be positive and at most 1m0s, got 0s",
		path + ":12:3: diameter.flushTimeout: must be positive and at most 30s, got 2h0m0s",
		path + ":13:3: diameter.dprTimeout: must be positive and at most 1m0s, got 2m0s",
		path + ":14:9: diameter.tls.handshakeTimeout: must be positive and at most 1m0s, got -1s",
	}
	if got := err.Error(); got != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}

// diameter.dispatch: auto serves inline only when nothing on a Gx request's path waits for
// I/O or may run long; inline with a Lua policy is refused; anything else is an error naming
// the key.
func TestDiameterDispatch(t *testing.T) {
	cases := []struct {
		name string
		edit func(c *Config)
		want bool
	}{
		{"defaults", func(*Config) {}, true}, // embedded store, file subscribers
		{"no-op store", func(c *Config) { c.Session.Store = "none" }, true},
		{"cassandra", func(c *Config) { c.Session.Store = "cassandra" }, false},
		{"ldap", func(c *Config) { c.Subscribers.Source = "ldap" }, false},
		{"lua policy", func(c *Config) { c.Policy.Lua.File = "/etc/openaaa/policy.lua" }, false},
		{"forced workers", func(c *Config) { c.Diameter.Dispatch = "workers" }, false},
		{"forced inline", func(c *Config) { c.Diameter.Dispatch = "inline"; c.Session.Store = "cassandra" }, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := Default()
			c.edit(&cfg)
			if got := cfg.DiameterInline(); got != c.want {
				t.Fatalf("DiameterInline() = %v, want %v", got, c.want)
			}
		})
	}
	const enabled = "diameter: {enabled: true, originHost: h, originRealm: r, peers: [{originHost: a}], dispatch: %s}\n"
	if _, err := load(t, minimal+fmt.Sprintf(enabled, "threads"), nil, nil); err == nil || !strings.Contains(err.Error(), "diameter.dispatch") {
		t.Errorf("dispatch threads: error %v, want one naming diameter.dispatch", err)
	}
	cfg := Default()
	cfg.Diameter.Enabled, cfg.Diameter.OriginHost, cfg.Diameter.OriginRealm = true, "h", "r"
	cfg.Diameter.Peers, cfg.Diameter.Dispatch = []DiameterPeer{{OriginHost: "a"}}, "inline"
	cfg.Policy.Lua.File = "/etc/openaaa/policy.lua"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "diameter.dispatch: inline") {
		t.Errorf("inline with a Lua policy: error %v, want one naming diameter.dispatch", err)
	}
}
