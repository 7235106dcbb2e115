package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// What MarshalSet writes loads back as the defaults with the fields that were set: zeros that
// were kept override the default, zeros that were not keep it.
func TestMarshalSetLoadsBack(t *testing.T) {
	no := false
	c := Config{
		Log:         Log{Level: "debug"},
		Radius:      Radius{AuthAddress: ":11812", DrainTimeout: Duration(110 * time.Second)},
		Clients:     []Client{{Name: "bng", Address: "192.0.2.1", SecretFile: "/s", LimitProxyState: &no}},
		Subscribers: Subscribers{File: "/subs.yaml"},
		Session: SessionStore{Store: "cassandra", Cassandra: Cassandra{ContactPoints: []string{"db"}, LocalDC: "dc1",
			RemoteDCs: []RemoteDC{{Name: "dc2", ContactPoints: []string{"db2"}}}}},
		Policy: Policy{Lua: PolicyLua{File: "/p.lua", Budget: Duration(20 * time.Millisecond)}},
		EAP:    EAP{Resumption: EAPResumption{Lifetime: Duration(time.Hour)}},
	}
	out, err := MarshalSet(&c, &c.Radius.RequireMessageAuthenticator, &c.Session.Cassandra.RowCache.Size)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"drainTimeout: 110s", "budget: 20ms", "lifetime: 1h0m0s", "requireMessageAuthenticator: false", "size: 0", "limitProxyState: false"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	for _, unset := range []string{"workers", "acctAddress", "format", "memoize", "diameter", "coa"} {
		if strings.Contains(string(out), unset+":") {
			t.Errorf("%s written, though not set:\n%s", unset, out)
		}
	}
	got, err := load(t, string(out), nil, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := Default()
	want.Log.Level = "debug"
	want.Radius.AuthAddress, want.Radius.DrainTimeout, want.Radius.RequireMessageAuthenticator = ":11812", Duration(110*time.Second), false
	want.Clients = c.Clients
	want.Subscribers.File = "/subs.yaml"
	want.Session.Store = "cassandra"
	cs := &want.Session.Cassandra
	cs.ContactPoints, cs.LocalDC, cs.RemoteDCs, cs.RowCache.Size = c.Session.Cassandra.ContactPoints, "dc1", c.Session.Cassandra.RemoteDCs, 0
	want.Policy.Lua.File, want.Policy.Lua.Budget = "/p.lua", Duration(20*time.Millisecond)
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("loaded back\n%+v\nwant\n%+v", *got, want)
	}
}

func TestMarshalSetKeepMustBeAField(t *testing.T) {
	var c Config
	other := 0
	for _, keep := range []any{&other, c.Radius.Workers, (*int)(nil)} {
		if _, err := MarshalSet(&c, keep); err == nil {
			t.Errorf("keep %T accepted", keep)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{110 * time.Second: "110s", 20 * time.Millisecond: "20ms",
		time.Hour: "1h0m0s", 1500 * time.Millisecond: "1.5s", 0: "0s"} {
		if got := formatDuration(d); got != want {
			t.Errorf("%v: %q, want %q", d, got, want)
		}
	}
}
