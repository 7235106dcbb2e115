package migrate

import (
	"context"
	"errors"
	"fmt"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

const leaseName = "migrate"

// errLeaseLost is the cause of the lease context's cancellation once the lease may belong to
// another process.
var errLeaseLost = errors.New("lost the migration lease")

// leaseLost returns why the lease of ctx (from lease) was lost, or nil.
func leaseLost(ctx context.Context) error {
	if c := context.Cause(ctx); errors.Is(c, errLeaseLost) {
		return c
	}
	return nil
}

// lease takes the migration lease (waiting for another holder up to LeaseWait) and keeps it
// alive until release is called. The migration runs under the returned context: it is
// cancelled (cause errLeaseLost) as soon as the lease may no longer be ours, so that two
// processes never migrate at once.
func (m *migrator) lease(ctx context.Context) (context.Context, func(), error) {
	ttl := int(m.o.LeaseTTL / time.Second)
	ins := fmt.Sprintf("INSERT INTO %s.schema_migrations_lease (name, owner, acquired_at) VALUES (?, ?, ?) IF NOT EXISTS USING TTL %d", m.ks, ttl)
	deadline := time.Now().Add(m.o.LeaseWait)
	said := false
	var since time.Time // first attempt that may have applied: the lease's TTL runs from there at the latest
	for {
		var owner string
		var at time.Time
		var name string
		sent := time.Now()
		if since.IsZero() {
			since = sent
		}
		applied, err := m.s.Query(ins, leaseName, m.o.Owner, sent).Consistency(gocql.Quorum).
			SerialConsistency(gocql.Serial).Idempotent(false).ScanCASContext(ctx, &name, &at, &owner)
		if err == nil && applied {
			since = sent
			break
		}
		if err == nil && owner == m.o.Owner {
			break // an earlier attempt timed out but did apply
		}
		if err != nil {
			// A CAS write timeout leaves the outcome unknown: look, then try again.
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
		} else {
			since = time.Time{}
			if !said {
				m.say("waiting for the migration lease held by %s since %s", owner, at.Format(time.RFC3339))
				said = true
			}
		}
		if time.Now().After(deadline) {
			if err != nil {
				return nil, nil, fmt.Errorf("taking the migration lease: %w", err)
			}
			return nil, nil, fmt.Errorf("the migration lease is still held by %s after %s", owner, m.o.LeaseWait)
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	lctx, lose := context.WithCancelCause(ctx)
	kctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := m.keep(kctx, since); err != nil {
			lose(err)
		}
	}()
	return lctx, func() {
		stop()
		<-done
		lose(nil)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_, _ = m.s.Query(fmt.Sprintf("DELETE FROM %s.schema_migrations_lease WHERE name = ? IF owner = ?", m.ks), leaseName, m.o.Owner).
			Consistency(gocql.Quorum).SerialConsistency(gocql.Serial).Idempotent(false).ScanCASContext(rctx)
	}, nil
}

// keep renews the lease every LeaseTTL/3 until ctx ends, and returns why it lost it: a
// renewal not applied (another owner, or the row expired) at once; failing renewals (e.g.
// timeouts) once less than LeaseTTL/3 of the lease is left, as a success that late could
// land after the expiry, when another process may already hold it.
func (m *migrator) keep(ctx context.Context, renewed time.Time) error {
	ttl := m.o.LeaseTTL
	upd := fmt.Sprintf("UPDATE %s.schema_migrations_lease USING TTL %d SET owner = ?, acquired_at = ? WHERE name = ? IF owner = ?",
		m.ks, int(ttl/time.Second))
	retry := min(ttl/10, time.Second)
	t := time.NewTicker(ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		var lastErr error
		for attempts := 0; ; attempts++ {
			sent := time.Now()
			giveUp := renewed.Add(ttl - ttl/3)
			if !sent.Before(giveUp) {
				return fmt.Errorf("%w: no renewal succeeded for %s (%d attempts, last: %v)",
					errLeaseLost, sent.Sub(renewed).Round(time.Millisecond), attempts, lastErr)
			}
			owner, applied, err := m.renew(ctx, upd, sent, giveUp)
			if ctx.Err() != nil {
				return nil // released meanwhile
			}
			if err == nil && applied {
				renewed = sent
				break
			}
			if err == nil {
				if owner == "" {
					return fmt.Errorf("%w: its row expired or was deleted", errLeaseLost)
				}
				return fmt.Errorf("%w: it is now held by %s", errLeaseLost, owner)
			}
			lastErr = err
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(retry):
			}
		}
	}
}

// renew runs one renewal, abandoned at giveUp.
func (m *migrator) renew(ctx context.Context, upd string, now, giveUp time.Time) (owner string, applied bool, err error) {
	if m.o.renewErr != nil {
		if err := m.o.renewErr(); err != nil {
			return "", false, err
		}
	}
	ctx, cancel := context.WithDeadline(ctx, giveUp)
	defer cancel()
	applied, err = m.s.Query(upd, m.o.Owner, now, leaseName, m.o.Owner).Consistency(gocql.Quorum).
		SerialConsistency(gocql.Serial).Idempotent(false).ScanCASContext(ctx, &owner)
	return owner, applied, err
}
