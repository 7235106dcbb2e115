package cluster

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/openaaa/openaaa/internal/cassandratest"
	"github.com/openaaa/openaaa/test/cluster/clustertest"
)

// One Cassandra 5 node on the node's address serves every test of the package: starting one
// costs a JVM start and a first-boot of a minute or more (more on a cold, busy machine), so it
// is started by the first test that needs it and stopped after the last (TestMain). Tests that
// take it away (TestAAAClusterOnCluster kills it twice) bring it back through cassandraUp.
// Each AAACluster migrates its keyspace with its own schema Job whatever an earlier test left,
// and every check of stored records names its own Acct-Session-Ids.
var sharedCassandra struct {
	sync.Mutex
	c    *cassandratest.Cluster
	down bool // killed by cassandraKill, not yet restarted
}

// cassandraUp returns the running shared node, starting it (or restarting a killed one, with
// its data) first.
func cassandraUp(t *testing.T) *cassandratest.Cluster {
	t.Helper()
	s := &sharedCassandra
	s.Lock()
	defer s.Unlock()
	start := time.Now()
	switch {
	case s.c == nil:
		// cassandratest binds its nodes to CASSANDRA_ADDRESSES: the node's address, which the
		// pods reach.
		os.Setenv("CASSANDRA_ADDRESSES", clustertest.NodeIP)
		c, err := cassandratest.Start(1)
		if err != nil {
			t.Fatalf("Cassandra: %v", err)
		}
		s.c = c
		t.Logf("Cassandra up in %s (shared by the package's tests)", time.Since(start).Round(100*time.Millisecond))
	case s.down:
		if err := s.c.Restart(1); err != nil {
			t.Fatalf("Cassandra restart: %v", err)
		}
		t.Logf("Cassandra back in %s", time.Since(start).Round(100*time.Millisecond))
	}
	s.down = false
	return s.c
}

// cassandraKill SIGKILLs the shared node if it runs (the next cassandraUp restarts it).
func cassandraKill(t *testing.T) {
	t.Helper()
	s := &sharedCassandra
	s.Lock()
	defer s.Unlock()
	if s.c == nil || s.down {
		return
	}
	if err := s.c.Kill(1); err != nil {
		t.Fatalf("killing Cassandra: %v", err)
	}
	s.down = true
}

// cassandraStall pauses the shared node (SIGSTOP: a long GC pause, a frozen VM) and returns
// the function that resumes it, which the caller also defers.
func cassandraStall(t *testing.T) (resume func()) {
	t.Helper()
	s := &sharedCassandra
	s.Lock()
	defer s.Unlock()
	if s.c == nil || s.down {
		t.Fatal("cassandraStall: the shared node is not up")
	}
	if err := s.c.Pause(1); err != nil {
		t.Fatalf("pausing Cassandra: %v", err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			if err := s.c.Resume(1); err != nil {
				t.Errorf("resuming Cassandra: %v", err)
			}
		})
	}
}

// stopSharedCassandra stops the node by PID and removes its data (TestMain, after the tests).
func stopSharedCassandra() {
	s := &sharedCassandra
	s.Lock()
	defer s.Unlock()
	if s.c == nil {
		return
	}
	if err := s.c.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping the shared Cassandra: %v\n", err)
	}
	s.c = nil
}
