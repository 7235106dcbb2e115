package config

import (
	"testing"
	"time"
)

// radius.radsec.handshakeTimeout defaults to the 10 s that was a constant; past its bound it
// is an error naming the key and its line.
func TestRadSecHandshakeTimeout(t *testing.T) {
	if d := Default().Radius.RadSec.HandshakeTimeout.D(); d != 10*time.Second {
		t.Fatalf("default %v, want 10s", d)
	}
	path := writeConfig(t, minimal+`radius:
  radsec: {address: ":2083", certFile: c, keyFile: k, caFile: a, handshakeTimeout: 5m}
`)
	_, err := Load(path, nil, nil)
	want := path + ":7:66: radius.radsec.handshakeTimeout: must be positive and at most 1m0s, got 5m0s"
	if err == nil || err.Error() != want {
		t.Fatalf("error:\n%v\nwant:\n%s", err, want)
	}
}
