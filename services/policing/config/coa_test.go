package config

import (
	"strings"
	"testing"
	"time"
)

// The CoA deadlines are keys, defaulted to the values that were constants in the code
// (coa.policyTimeout 30s, coa.apiTimeout 60s); one that is not positive or past 5m is an
// error naming the key and its line.
func TestCoATimeouts(t *testing.T) {
	d := Default().CoA
	if d.PolicyTimeout.D() != 30*time.Second || d.APITimeout.D() != time.Minute {
		t.Fatalf("defaults: policyTimeout %v, apiTimeout %v", d.PolicyTimeout, d.APITimeout)
	}
	c, err := load(t, minimal+"coa: {policyTimeout: 2m, apiTimeout: 300ms}\n", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.CoA.PolicyTimeout.D() != 2*time.Minute || c.CoA.APITimeout.D() != 300*time.Millisecond {
		t.Fatalf("set: %+v", c.CoA)
	}
	path := writeConfig(t, minimal+"coa:\n  policyTimeout: 0s\n  apiTimeout: 10m\n")
	_, err = Load(path, nil, nil)
	if err == nil {
		t.Fatal("timeouts out of range accepted")
	}
	want := []string{
		path + ":7:3: coa.policyTimeout: must be positive and at most 5m0s, got 0s",
		path + ":8:3: coa.apiTimeout: must be positive and at most 5m0s, got 10m0s",
	}
	if got := err.Error(); got != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}
