package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Cassandra configures the Cassandra and hybrid session stores (docs/cassandra.md).
type Cassandra struct {
	// ContactPoints are host or host:port entries (port defaults to Port).
	ContactPoints []string `json:"contactPoints,omitempty"`
	// Port is the CQL port used for contact points without one.
	Port int `json:"port"`
	// LocalDC is this node's datacenter: queries go to its replicas first (token- and
	// DC-aware routing) and LOCAL_* consistencies count its replicas.
	LocalDC string `json:"localDC,omitempty"`
	// RemoteDCs are the other datacenters of the cluster, each with contact points of its own.
	// At shutdown, spooled accounting that the local datacenter cannot take is delivered to
	// the first of them that can (a connection of its own, LOCAL_* counted there), so a
	// node stopping while its datacenter is down loses nothing (docs/cassandra.md).
	RemoteDCs []RemoteDC `json:"remoteDCs,omitempty"`
	Keyspace  string     `json:"keyspace"`
	// Consistency of the sessions table and its lookups (reads and writes).
	Consistency string `json:"consistency"`
	// HistoryConsistency of the insert-only accounting history and auth log.
	HistoryConsistency string `json:"historyConsistency"`
	// Timeout of one request (the driver's; the caller's context may be shorter).
	Timeout        Duration `json:"timeout"`
	ConnectTimeout Duration `json:"connectTimeout"`
	// WriteTimeout bounds the store's part of one accounting message or Gx request (read,
	// merge, write, the spool when Cassandra fails): the NAS or PCEF retransmits after it.
	WriteTimeout Duration `json:"writeTimeout"`
	// ReplicaWait is how long a Gx CCR-U/T waits for a session that another data center
	// created and whose write has not reached this one yet.
	ReplicaWait Duration `json:"replicaWait"`
	// NumConns is the number of connections per host.
	NumConns int `json:"numConns"`
	// UsernameFile and PasswordFile hold the credentials (mounted Secret); both or neither.
	UsernameFile string `json:"usernameFile,omitempty"`
	PasswordFile string `json:"passwordFile,omitempty"`
	// StoppedTTL keeps a stopped session's row (not its lookups) so that late
	// retransmissions of its accounting do not bring it back to life.
	StoppedTTL Duration `json:"stoppedTTL"`
	// Spool receives accounting records when Cassandra cannot take them.
	Spool Spool `json:"spool"`
	// Cache is the local cache of the hybrid store.
	Cache Cache `json:"cache"`
	// RowCache keeps the session rows this node wrote last, so that most Interims merge
	// onto their row without reading it (docs/cassandra.md).
	RowCache RowCache `json:"rowCache"`
}

// RowCache tunes the Cassandra store's row cache.
type RowCache struct {
	// Size is the maximum number of session rows kept; 0 turns the cache off (every
	// accounting message reads its row first). Sized right, it holds every session whose
	// NAS reaches this node within an interim interval.
	Size int `json:"size"`
}

// RemoteDC is another datacenter of the Cassandra cluster and how to reach it.
type RemoteDC struct {
	Name string `json:"name"`
	// ContactPoints are host or host:port entries (port defaults to the store's port).
	ContactPoints []string `json:"contactPoints"`
}

// Spool is the local append-only accounting spool.
type Spool struct {
	// Dir holds the spool files (a persistent volume: the spool must survive a restart).
	// Empty disables the spool: accounting then fails while Cassandra is unreachable.
	Dir string `json:"dir,omitempty"`
	// MaxBytes bounds the spool on disk; past it accounting fails (the NAS retransmits).
	MaxBytes int64 `json:"maxBytes"`
	// ReplayInterval is how often the spool tries to replay to Cassandra.
	ReplayInterval Duration `json:"replayInterval"`
	// DeliverWithin, for a directory that dies with the node (a pod's emptyDir): the spool
	// takes no more records than its replays deliver in this long at the rate they measured
	// (at least 100 records/s); past that accounting fails (the NAS retransmits or fails
	// over). Set it to at most radius.drainTimeout, so that a stopping node hands on all it
	// acknowledged. 0 (the default): the directory persists, maxBytes alone bounds it.
	DeliverWithin Duration `json:"deliverWithin,omitempty"`
}

// Cache tunes the hybrid store's local cache.
type Cache struct {
	// Size is the maximum number of sessions kept.
	Size int `json:"size"`
	// TTL is how long an entry counts as fresh for reads (the admin API's, CoA/Disconnect's).
	// Accounting never merges onto this cache (see RowCache).
	TTL Duration `json:"ttl"`
}

func defaultCassandra() Cassandra {
	return Cassandra{
		Port:               9042,
		Keyspace:           "openaaa",
		Consistency:        "LOCAL_QUORUM",
		HistoryConsistency: "LOCAL_ONE",
		Timeout:            Duration(2 * time.Second),
		ConnectTimeout:     Duration(5 * time.Second),
		WriteTimeout:       Duration(3 * time.Second),
		ReplicaWait:        Duration(2 * time.Second),
		NumConns:           2,
		StoppedTTL:         Duration(24 * time.Hour),
		Spool: Spool{
			Dir:            "/var/lib/openaaa/spool",
			MaxBytes:       1 << 30,
			ReplayInterval: Duration(time.Second),
		},
		Cache:    Cache{Size: 100000, TTL: Duration(5 * time.Second)},
		RowCache: RowCache{Size: 100000},
	}
}

// Consistencies accepted by the store.
var consistencies = []string{"ANY", "ONE", "TWO", "THREE", "QUORUM", "ALL", "LOCAL_QUORUM", "EACH_QUORUM", "LOCAL_ONE"}

func validConsistency(s string) bool {
	for _, c := range consistencies {
		if c == s {
			return true
		}
	}
	return false
}

// ValidKeyspaceName reports whether s is a CQL identifier usable as a keyspace name
// unquoted (letters, digits, underscore; starts with a letter; at most 48 characters).
func ValidKeyspaceName(s string) bool {
	if s == "" || len(s) > 48 {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r == '_' || r >= '0' && r <= '9':
			if i == 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func (c Cassandra) validate(key string) []error {
	var errs []error
	bad := keyed(key, &errs)
	if len(c.ContactPoints) == 0 {
		bad("contactPoints", "at least one contact point is required")
	}
	checkContactPoints := func(k string, cps []string) {
		for i, cp := range cps {
			host := cp
			if h, p, err := net.SplitHostPort(cp); err == nil {
				host = h
				if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
					bad(fmt.Sprintf("%s[%d]", k, i), "%q has no valid port", cp)
				}
			}
			if strings.TrimSpace(host) == "" {
				bad(fmt.Sprintf("%s[%d]", k, i), "empty host")
			}
		}
	}
	checkContactPoints("contactPoints", c.ContactPoints)
	seen := map[string]bool{c.LocalDC: true}
	for i, r := range c.RemoteDCs {
		k := fmt.Sprintf("remoteDCs[%d]", i)
		switch {
		case r.Name == "":
			bad(k+".name", "required")
		case seen[r.Name]:
			bad(k+".name", "%q is the local DC or listed twice", r.Name)
		}
		seen[r.Name] = true
		if len(r.ContactPoints) == 0 {
			bad(k+".contactPoints", "at least one contact point is required")
		}
		checkContactPoints(k+".contactPoints", r.ContactPoints)
	}
	if c.Port < 1 || c.Port > 65535 {
		bad("port", "%d is not a port", c.Port)
	}
	if c.LocalDC == "" {
		bad("localDC", "required (token- and DC-aware routing)")
	}
	if !ValidKeyspaceName(c.Keyspace) {
		bad("keyspace", "%q is not a valid keyspace name (letters, digits, _; at most 48)", c.Keyspace)
	}
	if !validConsistency(c.Consistency) {
		bad("consistency", "%q is not one of %s", c.Consistency, strings.Join(consistencies, ", "))
	} else if c.Consistency == "ANY" {
		bad("consistency", "ANY cannot be used for reads")
	}
	if !validConsistency(c.HistoryConsistency) {
		bad("historyConsistency", "%q is not one of %s", c.HistoryConsistency, strings.Join(consistencies, ", "))
	}
	positive(bad, "timeout", c.Timeout)
	positive(bad, "connectTimeout", c.ConnectTimeout)
	positive(bad, "writeTimeout", c.WriteTimeout)
	notNegative(bad, "replicaWait", c.ReplicaWait, "0: no wait")
	if c.NumConns < 1 || c.NumConns > 64 {
		bad("numConns", "must be between 1 and 64, got %d", c.NumConns)
	}
	if (c.UsernameFile == "") != (c.PasswordFile == "") {
		bad("usernameFile", "usernameFile and passwordFile go together")
	}
	notNegative(bad, "stoppedTTL", c.StoppedTTL, "0 keeps stopped rows forever")
	if c.Spool.Dir != "" {
		spoolBounds(bad, "spool.", c.Spool.MaxBytes, c.Spool.ReplayInterval, c.Spool.DeliverWithin)
	}
	if c.Cache.Size < 1 {
		bad("cache.size", "must be at least 1, got %d", c.Cache.Size)
	}
	if c.RowCache.Size < 0 {
		bad("rowCache.size", "must not be negative (0 turns the row cache off), got %d", c.RowCache.Size)
	}
	notNegative(bad, "cache.ttl", c.Cache.TTL, "0: every read goes to Cassandra")
	return errs
}

// spoolBounds checks what the accounting spool and the proxy's queue (a spool too) share:
// their size, replay interval and delivery bound, under prefix ("spool.", "queue.").
func spoolBounds(bad func(k, format string, a ...any), prefix string, maxBytes int64, replay, deliverWithin Duration) {
	if maxBytes < 1<<20 {
		bad(prefix+"maxBytes", "must be at least 1048576 (1 MiB), got %d", maxBytes)
	}
	positive(bad, prefix+"replayInterval", replay)
	notNegative(bad, prefix+"deliverWithin", deliverWithin, "0: no bound but maxBytes")
}
