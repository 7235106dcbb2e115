package store

import (
	"testing"
	"time"

	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/store/cassandra"
	"github.com/openaaa/openaaa/services/policing/internal/store/embedded"
)

func implements[I any](v any) bool { _, ok := v.(I); return ok }

// Each store serves exactly what its kind declares (config/store.go), which check-config
// reads: declared and missing fails at start; served and undeclared refuses a configuration
// the store could serve.
func TestStoresServeWhatTheirKindDeclares(t *testing.T) {
	emb, err := embedded.Open(embedded.Options{Shards: 1, SweepInterval: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emb.Close(t.Context()) })
	stores := map[string]session.Store{"embedded": emb, "none": Noop{},
		// Their types: opening them needs a Cassandra.
		"cassandra": (*cassandra.Store)(nil), "hybrid": (*cassandra.Hybrid)(nil)}
	for _, kind := range config.StoreKinds() {
		st, ok := stores[kind]
		if !ok {
			t.Errorf("session.store %q: no store in this test", kind)
			continue
		}
		caps := config.SessionStore{Store: kind}.Capabilities()
		for _, c := range []struct {
			what          string
			declared, has bool
		}{
			{"a node registry", caps.NodeRegistry, implements[session.NodeRegistry](st)},
			{"sequence numbers", caps.SQN, implements[session.SQNCounter](st)},
			{"ephemeral values", caps.Ephemeral, implements[session.Ephemeral](st)},
			{"an auth log", caps.AuthLog, implements[session.AuthLogger](st)},
			{"wide reads", caps.WideGet, implements[session.WideGetter](st)},
		} {
			if c.declared != c.has {
				t.Errorf("session.store %q: declares %s: %v; serves it: %v", kind, c.what, c.declared, c.has)
			}
		}
	}
}
