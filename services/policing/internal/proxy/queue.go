package proxy

import (
	"encoding/binary"
	"errors"
	"sync"
	"time"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/rfc2866"

	"github.com/openaaa/openaaa/services/policing/internal/spool"
)

// queue is queue mode: requests go to a spool (durable, bounded, in order) and one loop
// delivers them. Delivery is at least once: a record leaves the spool only after an
// upstream answered it (see replay for the one exception at the tail of a batch).
type queue struct {
	p     *Proxy
	sp    *spool.Spool
	wake  chan struct{}
	batch int
}

// Record layout: [enqueue time, unix nanos, 8 octets][encoded attributes].
func (q *queue) enqueue(attrs radius.Attributes) error {
	n, err := radius.AttributesEncodedLen(attrs)
	if err != nil {
		return err
	}
	rec := make([]byte, 8, 8+n)
	binary.BigEndian.PutUint64(rec, uint64(time.Now().UnixNano()))
	for _, a := range attrs {
		rec = append(rec, byte(a.Type), byte(len(a.Attribute)+2))
		rec = append(rec, a.Attribute...)
	}
	if err := q.sp.Append(rec); err != nil {
		return err
	}
	q.p.m.queueRecords.Set(float64(q.sp.Records()))
	q.poke()
	return nil
}

func (q *queue) poke() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func decodeRecord(rec []byte) (radius.Attributes, time.Time, error) {
	if len(rec) < 8 {
		return nil, time.Time{}, errors.New("proxy queue: short record")
	}
	at := time.Unix(0, int64(binary.BigEndian.Uint64(rec)))
	attrs, err := radius.ParseAttributes(rec[8:])
	return attrs, at, err
}

func (q *queue) run() {
	defer q.p.wg.Done()
	t := time.NewTicker(q.p.cfg.Queue.ReplayInterval.D())
	defer t.Stop()
	for {
		if q.sp.Pending() {
			q.replay()
		}
		select {
		case <-q.p.ctx.Done():
			return
		case <-q.wake:
		case <-t.C:
		}
	}
}

var errStopping = errors.New("proxy: stopping")

// replay delivers the spool in batches of up to q.batch records, sent concurrently (the
// records of one session in order). The spool advances its cursor record by record as
// apply returns, so apply holds records back until their batch is delivered: a batch is
// flushed when full, or at the record that is the last one waiting. Batch sizes divide the
// spool's cursor-save period (256), so a saved cursor never points past an undelivered
// record, except when records arrive unsynced at the very tail (then the few held back
// are delivered right after Replay returns).
func (q *queue) replay() {
	var batch [][]byte
	flush := func(inSpool bool) error {
		if len(batch) == 0 {
			return nil
		}
		err := q.deliverBatch(batch, inSpool)
		batch = batch[:0]
		return err
	}
	_, err := q.sp.Replay(func(rec []byte) error {
		batch = append(batch, append([]byte(nil), rec...))
		if len(batch) >= q.batch || q.sp.Records() <= 1 {
			if err := flush(true); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = flush(false)
	}
	q.p.m.queueRecords.Set(float64(q.sp.Records()))
	if err != nil && !errors.Is(err, errStopping) && !errors.Is(err, spool.ErrClosed) {
		q.p.log.Warn("proxy queue replay stopped", "err", err, "waiting", q.sp.Records())
	}
}

// deliverBatch delivers every record, retrying the pool until each is answered or the proxy
// stops. On stop, records already taken from the spool go back to its end; lastInSpool
// tells that the last record is still the spool's first (apply is about to fail on it).
func (q *queue) deliverBatch(batch [][]byte, lastInSpool bool) error {
	groups := map[string][]int{}
	var order []string
	for i, rec := range batch {
		attrs, _, err := decodeRecord(rec)
		if err != nil {
			q.p.log.Error("proxy queue: dropping a corrupt record", "err", err)
			q.p.m.forwarded.WithLabelValues("queue", "lost").Inc()
			continue
		}
		k := string(attrs.Get(rfc2865.NASIPAddress_Type)) + "|" + string(attrs.Get(rfc2865.NASIdentifier_Type)) +
			"|" + string(attrs.Get(rfc2866.AcctSessionID_Type))
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	done := make([]bool, len(batch))
	var wg sync.WaitGroup
	for _, k := range order {
		idx := groups[k]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, i := range idx {
				if !q.deliverOne(batch[i]) {
					return
				}
				done[i] = true
			}
		}()
	}
	wg.Wait()
	var undelivered [][]byte
	for i, ok := range done {
		if !ok {
			if _, _, err := decodeRecord(batch[i]); err == nil {
				undelivered = append(undelivered, batch[i])
			}
		}
	}
	if len(undelivered) == 0 {
		return nil
	}
	// Stopping: the last record stays first in the spool (apply fails); the others were
	// consumed already and are appended again so that nothing is lost.
	if lastInSpool && !done[len(done)-1] {
		undelivered = undelivered[:len(undelivered)-1]
	}
	for _, rec := range undelivered {
		if err := q.sp.Requeue(rec); err != nil {
			q.p.log.Error("proxy queue: record lost on stop", "err", err)
			q.p.m.forwarded.WithLabelValues("queue", "lost").Inc()
		}
	}
	return errStopping
}

// deliverOne retries one record until an upstream answers (true) or the proxy stops. The
// pool has its own backoff (per exchange) and dead marks (no traffic to a dead upstream), so
// the wait between rounds is the replay interval.
func (q *queue) deliverOne(rec []byte) bool {
	attrs, at, _ := decodeRecord(rec)
	wait := q.p.cfg.Queue.ReplayInterval.D()
	for {
		if q.p.ctx.Err() != nil {
			return false
		}
		if err := q.p.deliver(q.p.ctx, withDelay(attrs, time.Since(at))); err == nil {
			q.p.m.forwarded.WithLabelValues("queue", "ok").Inc()
			return true
		}
		select {
		case <-q.p.ctx.Done():
			return false
		case <-time.After(wait):
		}
	}
}
