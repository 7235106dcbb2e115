package migrate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/openaaa/openaaa/internal/cassandratest"
	"github.com/openaaa/openaaa/services/policing/internal/store/cassandra"
)

var cluster *cassandratest.Cluster

func TestMain(m *testing.M) { os.Exit(cassandratest.Main(m, 1, &cluster)) }

var ksSeq atomic.Int64

const leaseTestTTL = 15 * time.Second

// leaseTest runs a migration whose only statement waits (beforeStatement) until its context
// ends or 90 s pass; lose is called once the migration holds the lease and is in that step.
// The lease (leaseTestTTL) and the request timeout leave room for a Cassandra node slowed by
// the rest of `make test` (a 3 s lease was lost to one slow LWT there).
// It returns Run's error, what Run said, and the status of version 1 in schema_migrations.
func leaseTest(t *testing.T, o Options, lose func(c context.Context, s *gocql.Session, ks string)) (out, status string, err error) {
	t.Helper()
	cassandratest.Skip(t, cluster)
	ks := fmt.Sprintf("lease%d_%d", time.Now().Unix()%100000, ksSeq.Add(1))
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	o.Conn = cassandra.ConnOptions{
		ContactPoints: []string{cluster.ContactPoint(1)}, LocalDC: cluster.DC(1), Keyspace: ks,
		Timeout: 15 * time.Second, ConnectTimeout: 15 * time.Second, NumConns: 1,
	}
	o.FS = fstest.MapFS{"migrations/0001_slow.cql": {Data: []byte("CREATE TABLE IF NOT EXISTS a (k text PRIMARY KEY);")}}
	o.Owner = "first"
	o.LeaseTTL = leaseTestTTL // renewed every 5 s
	var buf bytes.Buffer
	o.Out = &buf
	inStep := make(chan struct{})
	o.beforeStatement = func(ctx context.Context) error {
		close(inStep)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(90 * time.Second): // without the fix nothing stops the step
			return nil
		}
	}
	errc := make(chan error, 1)
	go func() {
		_, err := Run(c, o)
		errc <- err
	}()
	conn := o.Conn
	conn.Keyspace = ""
	sess, err := cassandra.Connect(c, conn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sess.Close)
	select {
	case <-inStep:
	case err := <-errc:
		t.Fatalf("Run ended before its step: %v\n%s", err, buf.String())
	}
	lose(c, sess, ks)
	select {
	case err = <-errc:
	case <-time.After(2 * time.Minute):
		t.Fatal("Run did not end")
	}
	var st string
	if serr := sess.Query("SELECT status FROM "+ks+".schema_migrations WHERE version = 1").Consistency(gocql.Quorum).
		ScanContext(c, &st); serr != nil && !errors.Is(serr, gocql.ErrNotFound) {
		t.Fatal(serr)
	}
	return buf.String(), st, err
}

// Another process takes the lease row (here: deletes it and inserts its own, as after an
// expiry): the first process's next renewal is not applied, and it must stop at once.
func TestLeaseStolenStopsTheMigration(t *testing.T) {
	out, status, err := leaseTest(t, Options{}, func(c context.Context, s *gocql.Session, ks string) {
		for _, q := range []string{
			"DELETE FROM " + ks + ".schema_migrations_lease WHERE name = 'migrate'",
			"INSERT INTO " + ks + ".schema_migrations_lease (name, owner, acquired_at) VALUES ('migrate', 'thief', toTimestamp(now())) USING TTL 60",
		} {
			if err := s.Query(q).Consistency(gocql.Quorum).ExecContext(c); err != nil {
				t.Fatal(err)
			}
		}
	})
	if err == nil || !strings.Contains(err.Error(), "lost the migration lease") || !strings.Contains(err.Error(), "thief") {
		t.Fatalf("err = %v\n%s", err, out)
	}
	t.Logf("err = %v; version 1: %q", err, status)
	if status == "applied" {
		t.Fatalf("version 1 recorded as applied after the lease was lost\n%s", out)
	}
}

// Renewals that keep failing (a timeout, Cassandra unreachable) are retried only while the
// lease surely still runs; then the holder stops rather than outlive its lease unknowingly.
func TestLeaseRenewalErrorsStopTheMigration(t *testing.T) {
	var failing atomic.Bool
	o := Options{renewErr: func() error {
		if failing.Load() {
			return errors.New("injected timeout")
		}
		return nil
	}}
	start := time.Now()
	out, status, err := leaseTest(t, o, func(context.Context, *gocql.Session, string) {
		start = time.Now()
		failing.Store(true)
	})
	if err == nil || !strings.Contains(err.Error(), "lost the migration lease") || !strings.Contains(err.Error(), "injected timeout") {
		t.Fatalf("err = %v\n%s", err, out)
	}
	// Retried until a third of the lease is left, so stopped within 2/3 of it after the last
	// renewal; the step itself would last 90 s.
	if d := time.Since(start); d > leaseTestTTL {
		t.Fatalf("stopped after %s", d)
	}
	t.Logf("err = %v; version 1: %q", err, status)
	if status == "applied" {
		t.Fatalf("version 1 recorded as applied after the lease was lost\n%s", out)
	}
}
