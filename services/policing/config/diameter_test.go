package config

import (
	"strings"
	"testing"
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
