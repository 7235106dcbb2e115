package cassandra

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/spool"
)

// pendingSessions are the sessions with records in the spool. A new record of such a session
// goes to the spool behind them (its records stay in order). The records of other sessions go
// to the spool too while Cassandra is failing (down: from a failed write until a replayed
// batch succeeds), and straight to Cassandra otherwise: a few timeouts under load do not send
// all accounting to the spool for as long as it takes to drain. After a restart the spooled
// sessions are not known: every record queues until the spool was empty once.
type pendingSessions struct {
	mu   sync.Mutex
	all  bool
	down bool
	n    map[session.Key]int
}

// enqueue reports whether a record of k must go to the spool, and counts it there if so.
func (p *pendingSessions) enqueue(k session.Key) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.all && !p.down && p.n[k] == 0 {
		return false
	}
	p.n[k]++
	return true
}

// add counts a record of k that went to the spool; done uncounts one that left it.
func (p *pendingSessions) add(k session.Key, d int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if v := p.n[k] + d; v > 0 {
		p.n[k] = v
	} else {
		delete(p.n, k)
	}
}

// setDown records whether Cassandra is failing.
func (p *pendingSessions) setDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
}

// drained: the spool was empty once, so the sessions of a previous run's records are all
// replayed. (The counts stay: a record may be on its way into the spool right now.)
func (p *pendingSessions) drained() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.all, p.down = false, false
}

func (st *Store) toSpool(rec *record, cause error) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("cassandra store: encoding for the spool: %w", err)
	}
	if err := st.o.Spool.Append(b); err != nil {
		if errors.Is(err, spool.ErrBudget) && st.errLog.ok() {
			st.log.Warn("spool: holds what this node can deliver within spool.deliverWithin: accounting is refused until it drains (NASes retransmit)",
				"records", st.o.Spool.Records())
		}
		if cause != nil {
			return fmt.Errorf("cassandra store: %v; spool: %w", cause, err)
		}
		return err
	}
	if cause != nil && st.errLog.ok() {
		st.log.Warn("cassandra unavailable: accounting goes to the spool", "err", cause)
	}
	return nil
}

// spoolable reports whether err means "Cassandra cannot take it now" (retry later) rather
// than "this request is wrong".
func spoolable(err error) bool {
	if errors.Is(err, spool.ErrBudget) || errors.Is(err, spool.ErrFull) {
		return false // the spool refused it: the NAS retransmits
	}
	var re gocql.RequestError
	if errors.As(err, &re) {
		switch re.Code() {
		case gocql.ErrCodeUnavailable, gocql.ErrCodeOverloaded, gocql.ErrCodeBootstrapping,
			gocql.ErrCodeWriteTimeout, gocql.ErrCodeReadTimeout, gocql.ErrCodeWriteFailure,
			gocql.ErrCodeReadFailure, gocql.ErrCodeServer, gocql.ErrCodeTruncate:
			return true
		}
		return false
	}
	var hist historyError
	if errors.As(err, &hist) {
		return spoolable(hist.err)
	}
	// Driver-side: no connections, timeouts, closed connections, network errors.
	return true
}

// spoolOnFailure reports whether a record whose write failed goes to the spool: whenever
// Cassandra cannot take it now, even past the request's deadline. A write that timed out may
// have landed all the same — the history of a Stop, say, while its session row did not — and
// a NAS that gives up on the unanswered request would leave the record half applied: the
// rest must follow. The replay is idempotent (content-derived history ids; a row merges by
// event time), so a record the NAS retransmits as well is applied once.
func spoolOnFailure(err error) bool {
	return spoolable(err)
}

// ReplayNow replays the spool once (also done every ReplayInterval in the background) and
// returns how many records went to Cassandra.
func (st *Store) ReplayNow(ctx context.Context) (int, error) {
	if st.o.Spool == nil {
		return 0, nil
	}
	st.replayMu.Lock()
	defer st.replayMu.Unlock()
	n, err := st.o.Spool.ReplayBatch(replayBatch, func(recs [][]byte) error { return st.replayBatch(ctx, recs) })
	if st.o.Spool.Records() == 0 {
		st.pending.drained()
	}
	return n, err
}

// Replay in batches of up to replayBatch records, the sessions of a batch in parallel (at
// most replayConcurrency at once), each session's records in order.
const (
	replayBatch       = 256
	replayConcurrency = 16
)

func (st *Store) replayBatch(ctx context.Context, recs [][]byte) error {
	var order []session.Key
	groups := map[session.Key][]*record{}
	counted := map[session.Key]int{} // records that hold their session back (see apply)
	for _, b := range recs {
		rec := &record{}
		if err := json.Unmarshal(b, rec); err != nil {
			st.log.Error("spool: undecodable record skipped", "err", err, "record", string(b))
			st.m.spoolUndecodable.Inc()
			continue
		}
		k := rec.Session.Key
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], rec)
		if !rec.HistoryOnly {
			counted[k]++
		}
	}
	err := parallel(len(order), replayConcurrency, func(i int) error {
		for _, rec := range groups[order[i]] {
			rctx, cancel := context.WithTimeout(ctx, st.o.Conn.Timeout+time.Second)
			_, err := st.applyRecord(rctx, rec)
			cancel()
			if err != nil {
				return err // the batch is replayed again: nothing of it is uncounted
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// The whole batch is in Cassandra: Cassandra works, and the batch's sessions no longer
	// wait for these records.
	st.pending.setDown(false)
	for k, n := range counted {
		st.pending.add(k, -n)
	}
	return nil
}

func (st *Store) replayer() {
	defer close(st.stopped)
	t := time.NewTicker(st.o.ReplayInterval)
	defer t.Stop()
	for {
		select {
		case <-st.stop:
			return
		case <-t.C:
		}
		if st.o.Spool == nil || !st.o.Spool.Pending() {
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-st.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		n, err := st.ReplayNow(ctx)
		cancel()
		if n > 0 {
			st.log.Info("spool: replayed accounting records to Cassandra", "records", n, "left", st.o.Spool.Records())
		}
		if err != nil && st.errLog.ok() {
			st.log.Warn("spool: replay paused: Cassandra still unavailable", "err", err, "left", st.o.Spool.Records())
		}
	}
}
