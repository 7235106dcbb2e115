package config

import (
	"fmt"
	"net"
	"time"
)

// Proxy configures the accounting proxy (docs/proxy.md): every accounting request, once
// stored locally, is forwarded to a pool of upstream RADIUS accounting servers.
type Proxy struct {
	// Upstreams is the pool; empty disables the proxy.
	Upstreams []Upstream `json:"upstreams,omitempty"`
	// Mode is queue (default: the request is written to a durable local queue before the
	// NAS is answered and forwarded in the background, so a slow or dead upstream never
	// slows local answers) or sync (the NAS is answered only once an upstream answered).
	Mode string `json:"mode"`
	// Strategy is failover (the first live upstream takes everything) or loadbalance
	// (round robin over the live upstreams).
	Strategy string `json:"strategy"`
	// Timeout is the first retransmission timer of one upstream; it doubles after each
	// retransmission up to MaxTimeout (RFC 5080 §2.2.1 backoff).
	Timeout    Duration `json:"timeout"`
	MaxTimeout Duration `json:"maxTimeout"`
	// Retries is the number of retransmissions to one upstream before failing over.
	Retries int `json:"retries"`
	// SyncTimeout bounds the whole forwarding of one request in sync mode.
	SyncTimeout Duration `json:"syncTimeout"`
	// DeadAfter consecutive failed exchanges mark an upstream dead.
	DeadAfter int `json:"deadAfter"`
	// StatusInterval is the period of Status-Server health checks (RFC 5997); 0 disables
	// them, and a dead upstream is then tried again after ReviveAfter.
	StatusInterval Duration `json:"statusInterval"`
	ReviveAfter    Duration `json:"reviveAfter"`
	// MaxProxyState is the most Proxy-State attributes an upstream reply may carry
	// (BlastRADIUS hardening: we add exactly one and expect it back unchanged).
	MaxProxyState int `json:"maxProxyState"`
	// Queue is the durable queue of queue mode.
	Queue ProxyQueue `json:"queue"`
}

// Upstream is one RADIUS accounting server of the pool.
type Upstream struct {
	Name    string `json:"name"`
	Address string `json:"address"` // host:port
	// SecretFile holds the shared secret (a mounted Secret).
	SecretFile string `json:"secretFile"`
	// RequireMessageAuthenticator drops replies without a valid Message-Authenticator.
	RequireMessageAuthenticator bool `json:"requireMessageAuthenticator,omitempty"`
}

// ProxyQueue configures the durable queue (a spool: fsync'd segment files).
type ProxyQueue struct {
	Dir      string `json:"dir"`
	MaxBytes int64  `json:"maxBytes"`
	// ReplayInterval is how often the queue is retried while upstreams fail.
	ReplayInterval Duration `json:"replayInterval"`
	// Concurrency is how many queued requests are in flight at once (a power of two up to 256).
	Concurrency int `json:"concurrency"`
	// DeliverWithin bounds a queue whose directory dies with the node (an emptyDir) as
	// session.cassandra.spool.deliverWithin does the spool. 0: no bound but maxBytes.
	DeliverWithin Duration `json:"deliverWithin,omitempty"`
}

func defaultProxy() Proxy {
	return Proxy{
		Mode:           "queue",
		Strategy:       "failover",
		Timeout:        Duration(time.Second),
		MaxTimeout:     Duration(8 * time.Second),
		Retries:        2,
		SyncTimeout:    Duration(2 * time.Second),
		DeadAfter:      1,
		StatusInterval: Duration(10 * time.Second),
		ReviveAfter:    Duration(30 * time.Second),
		MaxProxyState:  1,
		Queue: ProxyQueue{Dir: "/var/lib/openaaa/proxy-queue", MaxBytes: 256 << 20,
			ReplayInterval: Duration(time.Second), Concurrency: 32},
	}
}

// Enabled reports whether any upstream is configured.
func (p Proxy) Enabled() bool { return len(p.Upstreams) > 0 }

func (p Proxy) validate(key string) []error {
	var errs []error
	bad := keyed(key, &errs)
	if !p.Enabled() {
		return nil
	}
	switch p.Mode {
	case "queue", "sync":
	default:
		bad("mode", "%q is not one of queue, sync", p.Mode)
	}
	switch p.Strategy {
	case "failover", "loadbalance":
	default:
		bad("strategy", "%q is not one of failover, loadbalance", p.Strategy)
	}
	positive(bad, "timeout", p.Timeout)
	if p.MaxTimeout < p.Timeout {
		bad("maxTimeout", "must be at least timeout")
	}
	notNegative(bad, "retries", p.Retries, "")
	if p.Mode == "sync" {
		positive(bad, "syncTimeout", p.SyncTimeout)
	}
	if p.DeadAfter < 1 {
		bad("deadAfter", "must be at least 1")
	}
	notNegative(bad, "statusInterval", p.StatusInterval, "0 disables health checks")
	if p.StatusInterval == 0 && p.ReviveAfter <= 0 {
		bad("reviveAfter", "must be positive when statusInterval is 0")
	}
	if p.MaxProxyState < 1 || p.MaxProxyState > 16 {
		bad("maxProxyState", "must be between 1 and 16, got %d", p.MaxProxyState)
	}
	names := map[string]bool{}
	for i, u := range p.Upstreams {
		k := fmt.Sprintf("upstreams[%d]", i)
		if u.Name == "" {
			bad(k+".name", "required")
		} else if names[u.Name] {
			bad(k+".name", "%q is used twice", u.Name)
		}
		names[u.Name] = true
		if _, _, err := net.SplitHostPort(u.Address); err != nil {
			bad(k+".address", "%q is not host:port", u.Address)
		}
		if u.SecretFile == "" {
			bad(k+".secretFile", "required")
		}
	}
	if p.Mode == "queue" {
		if p.Queue.Dir == "" {
			bad("queue.dir", "required in queue mode")
		}
		spoolBounds(bad, "queue.", p.Queue.MaxBytes, p.Queue.ReplayInterval, p.Queue.DeliverWithin)
		if c := p.Queue.Concurrency; c < 1 || c > 256 || c&(c-1) != 0 {
			bad("queue.concurrency", "must be a power of two up to 256, got %d", c)
		}
	}
	return errs
}
