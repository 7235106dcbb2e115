package migrate

import (
	"context"
	"fmt"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// lease takes the migration lease (waiting for another holder up to LeaseWait) and keeps it
// alive until release is called.
func (m *migrator) lease(ctx context.Context) (func(), error) {
	ttl := int(m.o.LeaseTTL / time.Second)
	ins := fmt.Sprintf("INSERT INTO %s.schema_migrations_lease (name, owner, acquired_at) VALUES (?, ?, ?) IF NOT EXISTS USING TTL %d", m.ks, ttl)
	deadline := time.Now().Add(m.o.LeaseWait)
	said := false
	for {
		var owner string
		var at time.Time
		var name string
		applied, err := m.s.Query(ins, leaseName, m.o.Owner, time.Now()).Consistency(gocql.Quorum).
			SerialConsistency(gocql.Serial).ScanCASContext(ctx, &name, &at, &owner)
		if err == nil && (applied || owner == m.o.Owner) {
			break // owner == us: an earlier attempt timed out but did apply
		}
		if err != nil {
			// A CAS write timeout leaves the outcome unknown: look, then try again.
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
		} else if !said {
			m.say("waiting for the migration lease held by %s since %s", owner, at.Format(time.RFC3339))
			said = true
		}
		if time.Now().After(deadline) {
			if err != nil {
				return nil, fmt.Errorf("taking the migration lease: %w", err)
			}
			return nil, fmt.Errorf("the migration lease is still held by %s after %s", owner, m.o.LeaseWait)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(m.o.LeaseTTL / 3)
		defer t.Stop()
		upd := fmt.Sprintf("UPDATE %s.schema_migrations_lease USING TTL %d SET owner = ?, acquired_at = ? WHERE name = ? IF owner = ?", m.ks, ttl)
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				_, _ = m.s.Query(upd, m.o.Owner, time.Now(), leaseName, m.o.Owner).Consistency(gocql.Quorum).
					SerialConsistency(gocql.Serial).ScanCASContext(ctx)
			}
		}
	}()
	return func() {
		close(stop)
		<-done
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_, _ = m.s.Query(fmt.Sprintf("DELETE FROM %s.schema_migrations_lease WHERE name = ? IF owner = ?", m.ks), leaseName, m.o.Owner).
			Consistency(gocql.Quorum).SerialConsistency(gocql.Serial).ScanCASContext(rctx)
	}, nil
}
