package cassandra_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/openaaa/openaaa/internal/cassandratest"
	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/store/cassandra"
)

// The node registry (diameter_nodes, with eap_forward from migration 0010) is shared: a
// record one store writes, a Diameter node's or an EAP node's, another store of the keyspace
// (another node, a hybrid one included) reads; a record not refreshed is gone after its TTL.
func TestNodeRegistryShared(t *testing.T) {
	cassandratest.Skip(t, cluster)
	ks := keyspace(t)
	migrateKS(t, ks)
	a := openStore(t, ks, cassandra.Options{})
	t.Cleanup(func() { a.Close(context.Background()) })
	b := cassandra.NewHybrid(openStore(t, ks, cassandra.Options{}), 100, time.Minute)
	t.Cleanup(func() { b.Close(context.Background()) })
	c := ctx(t)
	gx := session.Node{Name: "pcrf-a:3868", Host: "pcrf.example", DC: "dc1", AdminURL: "http://10.0.0.1:9090"}
	ep := session.Node{Name: "policing-dc1-0", DC: "dc1", EAPForward: "10.0.0.1:1815"}
	for _, n := range []session.Node{gx, ep} {
		if err := a.RegisterNode(c, n, 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []session.Node{gx, ep} {
		got, err := b.LookupNode(c, want.Name)
		if err != nil {
			t.Fatalf("%s: %v", want.Name, err)
		}
		if got.Host != want.Host || got.DC != want.DC || got.AdminURL != want.AdminURL || got.EAPForward != want.EAPForward || got.Updated.IsZero() {
			t.Fatalf("read %+v, wrote %+v", got, want)
		}
	}
	if err := a.RegisterNode(c, session.Node{Name: "short", EAPForward: "10.0.0.2:1815"}, time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond)
	if _, err := b.LookupNode(c, "short"); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("a record after its TTL: %v, want ErrNotFound", err)
	}
}
