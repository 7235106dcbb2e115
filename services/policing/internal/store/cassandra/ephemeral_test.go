package cassandra_test

import (
	"errors"
	"testing"
	"time"

	"github.com/openaaa/openaaa/internal/cassandratest"
	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/store/cassandra"
)

// eap_state (migration 0008): a value is read once, and not after its TTL.
func TestEphemeral(t *testing.T) {
	cassandratest.Skip(t, cluster)
	st := migratedStore(t, cassandra.Options{})
	c := ctx(t)
	if err := st.PutEphemeral(c, []byte("k1"), []byte("v1"), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if v, err := st.TakeEphemeral(c, []byte("k1")); err != nil || string(v) != "v1" {
		t.Fatalf("take: %q %v", v, err)
	}
	if _, err := st.TakeEphemeral(c, []byte("k1")); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("second take: %v, want ErrNotFound", err)
	}
	if err := st.PutEphemeral(c, []byte("k2"), []byte("v2"), time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond)
	if _, err := st.TakeEphemeral(c, []byte("k2")); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("take after the TTL: %v, want ErrNotFound", err)
	}
}
