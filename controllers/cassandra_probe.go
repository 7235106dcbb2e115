package controllers

// The external Cassandra's reachability between reconciles. A store outage changes no
// Kubernetes object (policing's pods stay ready and spool, docs/cassandra.md), so nothing
// would trigger a reconcile: this prober dials the contact points of every AAACluster with an
// external Cassandra every few seconds and enqueues the cluster when the answer disagrees with
// its CassandraReady condition. The reconcile then dials again and writes the condition, so the
// prober writes nothing and a cluster whose store is steady costs one TCP handshake per
// interval, not a reconcile.

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
)

// cassandraProbeInterval: an outage shows on the AAACluster within this plus
// contactPointTimeout plus one reconcile (well under 15 s), and so does the recovery.
const cassandraProbeInterval = 5 * time.Second

// cassandraProber is a manager Runnable (leader only: it only enqueues).
type cassandraProber struct {
	reader   client.Reader // the manager's cache
	interval time.Duration
	dial     func(ctx context.Context, contactPoints []string, timeout time.Duration) error
	events   chan event.GenericEvent
}

func newCassandraProber(reader client.Reader, interval time.Duration) *cassandraProber {
	if interval <= 0 {
		interval = cassandraProbeInterval
	}
	return &cassandraProber{reader: reader, interval: interval, dial: DialContactPoints, events: make(chan event.GenericEvent, 64)}
}

// NeedLeaderElection: only the leader reconciles, so only it probes.
func (p *cassandraProber) NeedLeaderElection() bool { return true }

// Start probes until ctx ends.
func (p *cassandraProber) Start(ctx context.Context) error {
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			p.probe(ctx)
		}
	}
}

// probe dials every external cluster's contact points at once and enqueues those whose
// CassandraReady disagrees with what the dial found.
func (p *cassandraProber) probe(ctx context.Context) {
	list := &aaav1.AAAClusterList{}
	if err := p.reader.List(ctx, list); err != nil {
		logf.FromContext(ctx).Error(err, "Cassandra prober: list AAAClusters")
		return
	}
	var wg sync.WaitGroup
	for i := range list.Items {
		c := &list.Items[i]
		ext := c.Spec.Cassandra.External
		if ext == nil || len(ext.ContactPoints) == 0 || !c.DeletionTimestamp.IsZero() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			reachable := p.dial(ctx, ext.ContactPoints, contactPointTimeout) == nil
			if probeDisagrees(c, reachable) {
				select {
				case p.events <- event.GenericEvent{Object: c}:
				case <-ctx.Done():
				}
			}
		}()
	}
	wg.Wait()
}

// probeDisagrees: the dial found the store reachable and the condition says it is not, or
// the reverse. Only the reasons of the contact point check count (credentials missing, say,
// are the reconcile's to tell). Pure.
func probeDisagrees(c *aaav1.AAACluster, reachable bool) bool {
	cond := meta.FindStatusCondition(c.Status.Conditions, aaav1.ConditionCassandraReady)
	if cond == nil {
		return false
	}
	switch cond.Reason {
	case ReasonExternalCassandra:
		return cond.Status == metav1.ConditionTrue && !reachable
	case ReasonCassandraUnreachable:
		return cond.Status == metav1.ConditionFalse && reachable
	}
	return false
}
