package config

import (
	"strings"
	"testing"
)

func validCassandra() Cassandra {
	c := defaultCassandra()
	c.ContactPoints = []string{"cassandra-dc1-service", "10.0.0.5:9142"}
	c.LocalDC = "dc1"
	return c
}

func TestCassandraDefaultsValid(t *testing.T) {
	if errs := validCassandra().validate("session.cassandra"); len(errs) != 0 {
		t.Fatalf("defaults with contact points and local DC: %v", errs)
	}
}

func TestCassandraValidationNamesTheKey(t *testing.T) {
	for _, tc := range []struct {
		mut  func(*Cassandra)
		want string
	}{
		{func(c *Cassandra) { c.ContactPoints = nil }, "session.cassandra.contactPoints: at least one"},
		{func(c *Cassandra) { c.ContactPoints = []string{"h:0"} }, "session.cassandra.contactPoints[0]: "},
		{func(c *Cassandra) { c.LocalDC = "" }, "session.cassandra.localDC: required"},
		{func(c *Cassandra) { c.Keyspace = "1bad-name" }, "session.cassandra.keyspace: "},
		{func(c *Cassandra) { c.Consistency = "LOCAL_TWO" }, "session.cassandra.consistency: "},
		{func(c *Cassandra) { c.Consistency = "ANY" }, "session.cassandra.consistency: ANY cannot be used for reads"},
		{func(c *Cassandra) { c.HistoryConsistency = "x" }, "session.cassandra.historyConsistency: "},
		{func(c *Cassandra) { c.Timeout = 0 }, "session.cassandra.timeout: must be positive"},
		{func(c *Cassandra) { c.WriteTimeout = 0 }, "session.cassandra.writeTimeout: must be positive"},
		{func(c *Cassandra) { c.ReplicaWait = -1 }, "session.cassandra.replicaWait: must not be negative"},
		{func(c *Cassandra) { c.NumConns = 0 }, "session.cassandra.numConns: "},
		{func(c *Cassandra) { c.UsernameFile = "/u" }, "session.cassandra.usernameFile: "},
		{func(c *Cassandra) { c.Spool.MaxBytes = 10 }, "session.cassandra.spool.maxBytes: must be at least"},
		{func(c *Cassandra) { c.Spool.ReplayInterval = 0 }, "session.cassandra.spool.replayInterval: "},
		{func(c *Cassandra) { c.Cache.Size = 0 }, "session.cassandra.cache.size: "},
		{func(c *Cassandra) { c.Cache.TTL = -1 }, "session.cassandra.cache.ttl: "},
		{func(c *Cassandra) { c.Port = 70000 }, "session.cassandra.port: "},
		{func(c *Cassandra) { c.RemoteDCs = []RemoteDC{{Name: "dc1", ContactPoints: []string{"h"}}} }, "session.cassandra.remoteDCs[0].name: \"dc1\" is the local DC"},
		{func(c *Cassandra) { c.RemoteDCs = []RemoteDC{{Name: "dc2"}} }, "session.cassandra.remoteDCs[0].contactPoints: at least one"},
		{func(c *Cassandra) { c.RemoteDCs = []RemoteDC{{Name: "dc2", ContactPoints: []string{"h:0"}}} }, "session.cassandra.remoteDCs[0].contactPoints[0]: "},
	} {
		c := validCassandra()
		tc.mut(&c)
		var msgs []string
		for _, e := range c.validate("session.cassandra") {
			msgs = append(msgs, e.Error())
		}
		if !strings.Contains(strings.Join(msgs, "\n"), tc.want) {
			t.Errorf("want %q, got %q", tc.want, msgs)
		}
	}
	// No spool dir: the spool limits are not checked.
	c := validCassandra()
	c.Spool = Spool{}
	if errs := c.validate("session.cassandra"); len(errs) != 0 {
		t.Fatalf("spool disabled: %v", errs)
	}
}

func TestCassandraFromSetAndEnv(t *testing.T) {
	c := Default()
	if c.Session.Cassandra.Spool.MaxBytes != 1<<30 || c.Session.Cassandra.Consistency != "LOCAL_QUORUM" {
		t.Fatalf("defaults: %+v", c.Session.Cassandra)
	}
	found := map[string]bool{}
	for _, kv := range EnvNames() {
		found[kv[0]] = true
	}
	for _, want := range []string{"POLICING_SESSION_CASSANDRA_SPOOL_MAXBYTES", "POLICING_SESSION_CASSANDRA_CACHE_TTL", "POLICING_SESSION_CASSANDRA_LOCALDC"} {
		if !found[want] {
			t.Errorf("%s is not an environment override", want)
		}
	}
}
