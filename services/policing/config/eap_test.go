package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestEAPValidation(t *testing.T) {
	ok := []string{`eap.methods=["md5"]`, `eap.methods=["peap","ttls"]`, "eap.certFile=/c", "eap.keyFile=/k"}
	if _, err := load(t, minimal, ok, nil); err != nil {
		t.Fatalf("PEAP, TTLS and MD5 without a CA file: %v", err)
	}
	if _, err := load(t, minimal, []string{`eap.methods=["aka","aka-prime","sim"]`}, nil); err != nil {
		t.Fatalf("AKA, AKA' and SIM need no certificate: %v", err)
	}
	if c, err := load(t, minimal, nil, nil); err != nil || len(c.EAP.Methods) != 0 || c.EAP.TLSMaxVersion != "1.3" || c.EAP.AKANetworkName != "WLAN" ||
		c.EAP.Forward.Address != "" || c.EAP.Forward.Timeout.D() != time.Second || c.EAP.Forward.Retries != 2 ||
		c.EAP.Resumption.Enabled || c.EAP.Resumption.Lifetime.D() != time.Hour {
		t.Fatalf("defaults: EAP off, TLS 1.3 for EAP-TLS, no forwarding, no resumption (1h when on): %+v %v", c.EAP, err)
	}
	for _, res := range [][]string{{"eap.resumption.enabled=true"}, {"eap.resumption.enabled=true", "eap.resumption.ticketKeyFile=/t", "eap.resumption.lifetime=24h"}} {
		if c, err := load(t, minimal, append(slices.Clone(ok), res...), nil); err != nil || !c.EAP.Resumption.Enabled {
			t.Fatalf("resumption %v: %v", res, err)
		}
	}
	if c, err := load(t, minimal, []string{`eap.methods=["tls"]`, "eap.certFile=/c", "eap.keyFile=/k", "eap.caFile=/ca",
		"eap.forward.address=0.0.0.0:1815", "eap.forward.advertise=policing-0.policing:1815", "eap.forward.secretFile=/s"}, nil); err != nil || c.EAP.Forward.Advertise != "policing-0.policing:1815" {
		t.Fatalf("forwarding: %v", err)
	}
	cases := []struct {
		sets []string
		key  string
	}{
		{[]string{`eap.methods=["leap"]`}, "eap.methods[0]"},
		{[]string{`eap.methods=["md5","md5"]`}, "eap.methods[1]"},
		{[]string{`eap.methods=["peap"]`}, "eap.certFile"},
		{[]string{`eap.methods=["tls"]`, "eap.certFile=/c", "eap.keyFile=/k"}, "eap.caFile"},
		{[]string{`eap.methods=["peap"]`, "eap.certFile=/c", "eap.keyFile=/k", "eap.crlFile=/crl"}, "eap.crlFile"},
		{[]string{"eap.tlsMaxVersion=1.1"}, "eap.tlsMaxVersion"},
		{[]string{"eap.tlsIdentity=serialNumber"}, "eap.tlsIdentity"},
		{[]string{"eap.nodeID=" + strings.Repeat("n", 65)}, "eap.nodeID"},
		{[]string{"eap.maxConversations=0"}, "eap.maxConversations"},
		{[]string{"eap.timeout=500ms"}, "eap.timeout"},
		{[]string{"eap.roundTimeout=0s"}, "eap.roundTimeout"},
		{[]string{`eap.methods=["aka-prime"]`, "eap.akaNetworkName=" + strings.Repeat("w", 201)}, "eap.akaNetworkName"},
		{[]string{`eap.methods=["md5"]`, "eap.forward.address=:1815"}, "eap.forward.secretFile"},
		{[]string{"eap.forward.address=:1815", "eap.forward.secretFile=/s"}, "eap.forward.address"},
		{[]string{`eap.methods=["md5"]`, "eap.forward.address=1815", "eap.forward.secretFile=/s"}, "eap.forward.address"},
		{[]string{`eap.methods=["md5"]`, "eap.forward.address=:1815", "eap.forward.secretFile=/s", "eap.forward.advertise=10.0.0.1"}, "eap.forward.advertise"},
		{[]string{`eap.methods=["md5"]`, "eap.forward.address=:1815", "eap.forward.secretFile=/s", "eap.forward.timeout=0s"}, "eap.forward.timeout"},
		{[]string{`eap.methods=["md5"]`, "eap.forward.address=:1815", "eap.forward.secretFile=/s", "eap.forward.retries=9"}, "eap.forward.retries"},
		{[]string{`eap.methods=["md5"]`, "eap.resumption.enabled=true"}, "eap.resumption.enabled"},
		{append(slices.Clone(ok), "eap.resumption.ticketKeyFile=/t"), "eap.resumption.ticketKeyFile"},
		{append(slices.Clone(ok), "eap.resumption.enabled=true", "eap.resumption.lifetime=25h"), "eap.resumption.lifetime"},
		{append(slices.Clone(ok), "eap.resumption.enabled=true", "eap.resumption.lifetime=30s"), "eap.resumption.lifetime"},
	}
	for _, c := range cases {
		t.Run(c.key, func(t *testing.T) {
			_, err := load(t, minimal, c.sets, nil)
			if err == nil || !strings.Contains(err.Error(), c.key+":") {
				t.Fatalf("%v: error %v does not name %s", c.sets, err, c.key)
			}
		})
	}
}
