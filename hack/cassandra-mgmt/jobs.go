package main

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync"
	"time"
)

// Job statuses as the Management API reports them (cass-operator's cassandratask controller
// compares against these strings).
const (
	jobWaiting   = "WAITING"
	jobCompleted = "COMPLETED"
	jobError     = "ERROR"
)

// job is the executor job of /api/v0/ops/executor/job: the shape cass-operator's JobDetails
// parses — every field a string, the times milliseconds since the epoch written as strings
// (a JSON number fails its decode).
type job struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	Status     string `json:"status"`
	SubmitTime string `json:"submit_time"`
	EndTime    string `json:"end_time,omitempty"`
	Error      string `json:"error,omitempty"`
}

func nowMillis() string { return strconv.FormatInt(time.Now().UnixMilli(), 10) }

type jobs struct {
	mu   sync.Mutex
	byID map[string]*job
}

func newJobs() *jobs { return &jobs{byID: map[string]*job{}} }

// run starts fn in the background as a job of the given type and returns its id.
func (j *jobs) run(typ string, fn func() error) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:4]) + "-" + hex.EncodeToString(b[4:6]) + "-" + hex.EncodeToString(b[6:8]) + "-" +
		hex.EncodeToString(b[8:10]) + "-" + hex.EncodeToString(b[10:])
	jb := &job{ID: id, Type: typ, Status: jobWaiting, SubmitTime: nowMillis()}
	j.mu.Lock()
	j.byID[id] = jb
	j.mu.Unlock()
	go func() {
		err := fn()
		j.mu.Lock()
		defer j.mu.Unlock()
		jb.EndTime = nowMillis()
		if err != nil {
			jb.Status, jb.Error = jobError, err.Error()
		} else {
			jb.Status = jobCompleted
		}
	}()
	return id
}

func (j *jobs) get(id string) (job, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	jb, ok := j.byID[id]
	if !ok {
		return job{}, false
	}
	return *jb, true
}

// liveness tells which endpoints gossip hears from: an endpoint is alive while its gossip
// heartbeat (system_views.gossip_info, as the local node sees it) keeps advancing. This is
// what Cassandra's failure detector watches too, read over CQL instead of JMX.
type liveness struct {
	mu   sync.Mutex
	seen map[string]beat
}

type beat struct {
	heartbeat int64
	changed   time.Time
}

// deadAfter: no heartbeat change for this long marks an endpoint down (gossip beats every
// second; Cassandra's own detector convicts after about 10-20 s here).
const deadAfter = 15 * time.Second

func newLiveness() *liveness { return &liveness{seen: map[string]beat{}} }

// observe records the heartbeat of endpoint at now and says whether it is alive.
func (l *liveness) observe(endpoint string, heartbeat int64, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.seen[endpoint]
	if !ok || b.heartbeat != heartbeat {
		// First sight counts as a change: an endpoint gossip has just told us about is alive
		// until its heartbeat stalls.
		l.seen[endpoint] = beat{heartbeat: heartbeat, changed: now}
		return true
	}
	return now.Sub(b.changed) < deadAfter
}
