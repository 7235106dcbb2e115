package app

import "fmt"

// spooler is a store with a local spool (Cassandra, hybrid).
type spooler interface{ Spooled() int }

// At shutdown a node hands on what it acknowledged but has not delivered yet — the
// accounting spool to Cassandra (store.go), the proxy queue to any live upstream (proxy.go)
// — both at once (together in Start), until they are empty or the shutdown budget ends
// (radius.drainTimeout, which the operator derives from the pod's grace period). The
// listeners are stopped by then: nothing is added meanwhile.

// accountDrain counts and logs what a queue delivered at shutdown and what it left.
func accountDrain(d *deps, queue, dir string, before, left int) error {
	if before > left {
		d.m.drainDelivered.WithLabelValues(queue).Add(float64(before - left))
		d.log.Info("delivered at shutdown", "queue", queue, "records", before-left)
	}
	if left == 0 {
		return nil
	}
	d.m.drainLeft.WithLabelValues(queue).Add(float64(left))
	d.log.Error("ACCOUNTING RECORDS LEFT UNDELIVERED AT SHUTDOWN: lost unless the directory is on a persistent volume the next pod mounts",
		"queue", queue, "records", left, "dir", dir)
	return fmt.Errorf("%s: %d acknowledged accounting records left undelivered in %s", queue, left, dir)
}
