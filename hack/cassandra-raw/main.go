// Command cassandra-raw is the raw ceiling of `make bench-cassandra`: the reads and writes the
// Cassandra session store issues for the field flow (Access-Request → Start → N × Interim →
// Stop), sent straight through the driver by closed-loop workers, with no RADIUS and no
// policing in between. The statements, consistencies, client timestamps, TTLs and the
// parallelism inside one message mirror services/policing/internal/store/cassandra
// (cassandra.go: applyRecord, writeSession, writeHistory, LogAuth) on the schema that
// `policing migrate` creates:
//
//	Access-Request  INSERT auth_log (LOCAL_ONE)
//	Start           SELECT sessions row (LOCAL_QUORUM), then in parallel: a logged batch of
//	                the row + sessions_by_user/_framed_ip/_nas (LOCAL_QUORUM, TTL) and an
//	                unlogged batch of the history inserts (acct_history + the session's
//	                acct_history_by_user/_framed_ip/_hour, LOCAL_ONE)
//	Interim         one unlogged batch of the row and its acct_history row (LOCAL_QUORUM),
//	                merged onto the row the previous message wrote (the store's row cache:
//	                no read)
//	Stop            SELECT row, SELECT sessions_by_framed_ip, then in parallel: a logged batch
//	                of the stopped row + the lookups' deletes + sessions_closed_by_user, and
//	                its acct_history row
//
// -mode ref reproduces the reference figure of the field notes instead: a 20-column row,
// INSERT at LOCAL_QUORUM + SELECT at LOCAL_ONE per iteration.
//
//	go run ./hack/cassandra-raw -contact-points 127.0.0.1:9042 -local-dc dc1 -keyspace bench_raw \
//	    -concurrency 64 -duration 20s [-mode flow|ref] [-json]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

var cols = []string{
	"user_name", "state", "client_name", "nas_ip_address", "nas_identifier", "nas_port",
	"nas_port_id", "nas_port_type", "service_type", "framed_protocol", "framed_ip",
	"framed_ipv6_prefix", "calling_station_id", "called_station_id", "acct_multi_session_id",
	"class", "start_time", "last_seen", "stop_time", "session_time", "input_octets",
	"output_octets", "input_packets", "output_packets", "terminate_cause", "interim_interval",
	"updates", "disconnect_reason",
}

func colList(extra ...string) string { return strings.Join(append(extra, cols...), ", ") }
func marks(n int) string             { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }

var (
	selSession = "SELECT " + colList() + ", WRITETIME(state) FROM sessions WHERE nas = ? AND acct_session_id = ?"
	insSession = "INSERT INTO sessions (" + colList("nas", "acct_session_id") + ") VALUES (" + marks(len(cols)+2) + ") USING TTL ?"
	insByUser  = "INSERT INTO sessions_by_user (user_name, nas, acct_session_id, framed_ip, start_time) VALUES (?, ?, ?, ?, ?) USING TTL ?"
	delByUser  = "DELETE FROM sessions_by_user WHERE user_name = ? AND nas = ? AND acct_session_id = ?"
	insByIP    = "INSERT INTO sessions_by_framed_ip (framed_ip, nas, acct_session_id, user_name) VALUES (?, ?, ?, ?) USING TTL ?"
	delByIP    = "DELETE FROM sessions_by_framed_ip WHERE framed_ip = ?"
	selByIP    = "SELECT nas, acct_session_id FROM sessions_by_framed_ip WHERE framed_ip = ?"
	insByNAS   = "INSERT INTO sessions_by_nas (nas, acct_session_id, user_name) VALUES (?, ?, ?) USING TTL ?"
	delByNAS   = "DELETE FROM sessions_by_nas WHERE nas = ? AND acct_session_id = ?"
	insHist    = "INSERT INTO acct_history (" + colList("nas", "acct_session_id", "id", "kind", "at") + ") VALUES (" + marks(len(cols)+5) + ")"
	insHUser   = "INSERT INTO acct_history_by_user (user_name, day, id, nas, acct_session_id, kind, framed_ip) VALUES (?, ?, ?, ?, ?, ?, ?)"
	insHIP     = "INSERT INTO acct_history_by_framed_ip (framed_ip, day, id, nas, acct_session_id, kind, user_name) VALUES (?, ?, ?, ?, ?, ?, ?)"
	insHHour   = "INSERT INTO acct_history_by_hour (hour, shard, nas, acct_session_id, id, kind, user_name, framed_ip) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
	insClosed  = "INSERT INTO sessions_closed_by_user (" + colList("nas", "acct_session_id") + ") VALUES (" + marks(len(cols)+2) + ")"
	insAuth    = "INSERT INTO auth_log (user_name, day, id, nas, calling_station_id, result, reason) VALUES (?, ?, ?, ?, ?, ?, ?)"
)

const (
	kAuth = iota
	kStart
	kInterim
	kStop
	nKinds
)

var kindNames = [nKinds]string{"auth", "start", "interim", "stop"}

type stats struct {
	msgs, ops, errs atomic.Uint64
	mu              sync.Mutex
	lat             [nKinds][]time.Duration
}

// Report is printed as JSON with -json.
type Report struct {
	Mode        string             `json:"mode"`
	Concurrency int                `json:"concurrency"`
	Seconds     float64            `json:"seconds"`
	Messages    uint64             `json:"messages"`
	MessagesPS  float64            `json:"messagesPerSecond"`
	Ops         uint64             `json:"ops"`
	OpsPS       float64            `json:"opsPerSecond"`
	Errors      uint64             `json:"errors"`
	AvgMs       map[string]float64 `json:"avgMs"`
	P99Ms       map[string]float64 `json:"p99Ms"`
	AvgAuthMs   float64            `json:"avgAuthMs"`
	AvgAcctMs   float64            `json:"avgAcctMs"`
	ErrorSample string             `json:"errorSample,omitempty"`
}

func main() {
	contact := flag.String("contact-points", "127.0.0.1:9042", "contact points, comma-separated")
	localDC := flag.String("local-dc", "dc1", "local datacenter")
	ks := flag.String("keyspace", "bench_raw", "keyspace migrated by `policing migrate`")
	mode := flag.String("mode", "flow", "flow (the store's statements for the field flow) or ref (insert+select of a 20-column row)")
	conc := flag.Int("concurrency", 64, "closed-loop workers")
	dur := flag.Duration("duration", 20*time.Second, "run length (at most 10m)")
	interims := flag.Int("interims", 5, "Interim-Updates per session")
	numConns := flag.Int("num-conns", 2, "connections per host (the store's default)")
	asJSON := flag.Bool("json", false, "print the report as JSON")
	flag.Parse()
	if *dur <= 0 || *dur > 10*time.Minute || *conc < 1 || *conc > 4096 {
		fmt.Fprintln(os.Stderr, "cassandra-raw: -duration in (0, 10m], -concurrency in [1, 4096]")
		os.Exit(2)
	}
	c := gocql.NewCluster(strings.Split(*contact, ",")...)
	c.Keyspace = *ks
	c.Consistency = gocql.LocalQuorum
	c.Timeout = 2 * time.Second
	c.WriteTimeout = 2 * time.Second
	c.ConnectTimeout = 5 * time.Second
	c.NumConns = *numConns
	c.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.DCAwareRoundRobinPolicy(*localDC))
	c.RetryPolicy = &gocql.SimpleRetryPolicy{NumRetries: 1}
	s, err := c.CreateSession()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cassandra-raw:", err)
		os.Exit(1)
	}
	defer s.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *dur)
	defer cancel()

	var st stats
	var errSample atomic.Value
	nonce := time.Now().UnixNano()
	var seq atomic.Uint64
	work := func(w int) {
		var lat [nKinds][]time.Duration
		defer func() {
			st.mu.Lock()
			for k := range lat {
				st.lat[k] = append(st.lat[k], lat[k]...)
			}
			st.mu.Unlock()
		}()
		for ctx.Err() == nil {
			n := seq.Add(1)
			var err error
			if *mode == "ref" {
				t0 := time.Now()
				err = refIteration(ctx, s, nonce, n)
				if err == nil {
					lat[kAuth] = append(lat[kAuth], time.Since(t0))
					st.ops.Add(2)
					st.msgs.Add(1)
				}
			} else {
				err = session(ctx, s, &st, &lat, nonce, n, *interims)
			}
			if err != nil && ctx.Err() == nil {
				st.errs.Add(1)
				errSample.Store(err.Error())
			}
		}
	}
	if *mode == "ref" {
		if err := s.Query("CREATE TABLE IF NOT EXISTS bench_ref (k text PRIMARY KEY, c1 text, c2 text, c3 text, c4 text, c5 text, " +
			"c6 bigint, c7 bigint, c8 bigint, c9 bigint, c10 bigint, c11 timestamp, c12 timestamp, c13 inet, c14 inet, c15 text, " +
			"c16 text, c17 bigint, c18 bigint, c19 blob)").Exec(); err != nil {
			fmt.Fprintln(os.Stderr, "cassandra-raw:", err)
			os.Exit(1)
		}
	} else if *mode != "flow" {
		fmt.Fprintln(os.Stderr, "cassandra-raw: -mode flow or ref")
		os.Exit(2)
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i := range *conc {
		wg.Add(1)
		go func() { defer wg.Done(); work(i) }()
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	r := Report{Mode: *mode, Concurrency: *conc, Seconds: el, Messages: st.msgs.Load(), Ops: st.ops.Load(), Errors: st.errs.Load(),
		AvgMs: map[string]float64{}, P99Ms: map[string]float64{}}
	r.MessagesPS, r.OpsPS = float64(r.Messages)/el, float64(r.Ops)/el
	if v, ok := errSample.Load().(string); ok {
		r.ErrorSample = v
	}
	var acctSum time.Duration
	var acctN int
	for k := range nKinds {
		l := st.lat[k]
		if len(l) == 0 {
			continue
		}
		sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
		var sum time.Duration
		for _, d := range l {
			sum += d
		}
		name := kindNames[k]
		if *mode == "ref" {
			name = "insert+select"
		}
		r.AvgMs[name] = ms(sum) / float64(len(l))
		r.P99Ms[name] = ms(l[len(l)*99/100])
		if k != kAuth {
			acctSum += sum
			acctN += len(l)
		}
	}
	r.AvgAuthMs = r.AvgMs["auth"]
	if acctN > 0 {
		r.AvgAcctMs = ms(acctSum) / float64(acctN)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(r)
		return
	}
	fmt.Printf("cassandra-raw %s: concurrency %d, %.1f s: %.0f messages/s, %.0f CQL ops/s, %d errors\n", r.Mode, r.Concurrency, r.Seconds, r.MessagesPS, r.OpsPS, r.Errors)
	for k, v := range r.AvgMs {
		fmt.Printf("  %-14s avg %.2f ms  p99 %.2f ms\n", k, v, r.P99Ms[k])
	}
	if r.ErrorSample != "" {
		fmt.Println("  error sample:", r.ErrorSample)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func refIteration(ctx context.Context, s *gocql.Session, nonce int64, n uint64) error {
	k := fmt.Sprintf("%x-%d", nonce, n)
	now := time.Now()
	ip := net.IPv4(10, byte(n>>16), byte(n>>8), byte(n))
	if err := s.Query("INSERT INTO bench_ref (k, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, c15, c16, c17, c18, c19) "+
		"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		k, "user", "active", "bng", "nas-1", "port-1", int64(n), 15, 2, 1, 600, now, now, ip, ip, "aa-bb", "ssid", int64(n), int64(n), []byte("class")).
		Consistency(gocql.LocalQuorum).ExecContext(ctx); err != nil {
		return err
	}
	var c1 string
	return s.Query("SELECT c1 FROM bench_ref WHERE k = ?", k).Consistency(gocql.LocalOne).ScanContext(ctx, &c1)
}

// session plays one subscriber's flow with the store's statements.
func session(ctx context.Context, s *gocql.Session, st *stats, lat *[nKinds][]time.Duration, nonce int64, n uint64, interims int) error {
	nas := "127.0.0.1"
	id := fmt.Sprintf("%x%08x", nonce&0xffffffff, n)
	user := fmt.Sprintf("user%05d", n%10000+1)
	ip := net.IPv4(10, byte(n>>16), byte(n>>8), byte(n)).To4()
	nasIP := net.IPv4(127, 0, 0, 1).To4()
	start := time.Now().UTC()
	const ttl = 660 // the store's expiry TTL: 2 × 300 s + 60 s
	// Access-Request: the auth log row.
	t0 := time.Now()
	day := time.Date(start.Year(), start.Month(), start.Day(), 0, 0, 0, 0, time.UTC)
	if err := s.Query(insAuth, user, day, gocql.UUIDFromTime(t0), nas, "aa-bb-cc-dd-ee-ff", "accept", gocql.UnsetValue).
		Consistency(gocql.LocalOne).ExecContext(ctx); err != nil {
		return err
	}
	lat[kAuth] = append(lat[kAuth], time.Since(t0))
	st.ops.Add(1)
	st.msgs.Add(1)
	var wt int64
	for m := 0; m < interims+2; m++ {
		kind := kInterim
		switch m {
		case 0:
			kind = kStart
		case interims + 1:
			kind = kStop
		}
		t0 := time.Now()
		now := t0.UTC()
		secs := int64(300 * m)
		state := "active"
		var stopTime any = gocql.UnsetValue
		if kind == kStop {
			state, stopTime = "stopped", now
		}
		vals := []any{user, state, "loadgen", nasIP, "aaa-loadgen", int64(n & 0xffff), gocql.UnsetValue, int64(15), int64(2), int64(1), ip,
			gocql.UnsetValue, "aa-bb-cc-dd-ee-ff", gocql.UnsetValue, gocql.UnsetValue, gocql.UnsetValue, start, now, stopTime,
			nz(secs), nz(secs * 250 << 20), nz(secs * 1300 << 20), nz(secs * 200), nz(secs * 1000), stopCause(kind), int64(300), int64(m + 1), gocql.UnsetValue}
		// Read the row (the merge needs it), but for an Interim: the store's row cache has the
		// row the previous message wrote, and its write time.
		ops := uint64(0)
		if kind != kInterim {
			var r row
			dest := append(r.dest(), &wt)
			ops++
			err := s.Query(selSession, nas, id).Consistency(gocql.LocalQuorum).ScanContext(ctx, dest...)
			if err != nil && !errors.Is(err, gocql.ErrNotFound) {
				return err
			}
		}
		ts := max(now.UnixMicro(), wt+1)
		b := s.Batch(gocql.LoggedBatch).Consistency(gocql.LocalQuorum).WithTimestamp(ts)
		base := append([]any{nas, id}, vals...)
		if kind == kStop {
			var n2, id2 string
			if err := s.Query(selByIP, ip).Consistency(gocql.LocalQuorum).ScanContext(ctx, &n2, &id2); err != nil && !errors.Is(err, gocql.ErrNotFound) {
				return err
			}
			ops++
			b.Query(insSession, append(base, 86400)...)
			b.Query(delByUser, user, nas, id)
			b.Query(delByNAS, nas, id)
			if n2 == nas && id2 == id {
				b.Query(delByIP, ip)
			}
			b.Query(insClosed, base...)
		} else {
			b.Query(insSession, append(base, ttl)...)
			if kind == kStart {
				// policing writes the lookups at the Start, and on an Interim only when they
				// change or their (longer) TTL runs short: never within this flow.
				b.Query(insByUser, user, nas, id, ip, start, ttl)
				b.Query(insByIP, ip, nas, id, user, ttl)
				b.Query(insByNAS, nas, id, user, ttl)
			}
		}
		if kind == kInterim {
			// The row alone: one unlogged batch with the history, as policing sends it.
			b.Type = gocql.UnloggedBatch
			historyQueries(b, nas, id, user, ip, kindNames[kind], now, vals, false)
			if err := b.ExecContext(ctx); err != nil {
				return err
			}
			ops++
		} else {
			var wg sync.WaitGroup
			var batchErr error
			wg.Add(1)
			go func() { defer wg.Done(); batchErr = b.ExecContext(ctx) }()
			hb := s.Batch(gocql.UnloggedBatch).Consistency(gocql.LocalOne).WithTimestamp(now.UnixMicro())
			historyQueries(hb, nas, id, user, ip, kindNames[kind], now, vals, kind == kStart)
			histErr := hb.ExecContext(ctx)
			wg.Wait()
			if err := errors.Join(batchErr, histErr); err != nil {
				return err
			}
			ops += 2 // the row batch and the history batch
		}
		wt = ts // what the row cache keeps of the write
		lat[kind] = append(lat[kind], time.Since(t0))
		st.ops.Add(ops)
		st.msgs.Add(1)
	}
	return nil
}

// row receives a scanned session row (the store's column types).
type row struct {
	str   [10]string
	ip    [2]net.IP
	i     [12]int64
	class []byte
	t     [3]time.Time
}

func (r *row) dest() []any {
	return []any{
		&r.str[0], &r.str[1], &r.str[2], &r.ip[0], &r.str[3], &r.i[0],
		&r.str[4], &r.i[1], &r.i[2], &r.i[3], &r.ip[1],
		&r.str[5], &r.str[6], &r.str[7], &r.str[8],
		&r.class, &r.t[0], &r.t[1], &r.t[2], &r.i[4], &r.i[5], &r.i[6],
		&r.i[7], &r.i[8], &r.i[9], &r.i[10], &r.i[11], &r.str[9],
	}
}

func nz(v int64) any {
	if v == 0 {
		return gocql.UnsetValue
	}
	return v
}

func stopCause(kind int) any {
	if kind == kStop {
		return int64(1)
	}
	return gocql.UnsetValue
}

// historyQueries: the record's history row, and with lookups its user, address and hour
// lookups (the store writes them for a session's first record of a day or hour: within this
// flow, its Start).
func historyQueries(b *gocql.Batch, nas, id, user string, ip net.IP, kind string, at time.Time, vals []any, lookups bool) {
	rid := gocql.UUIDFromTime(at)
	b.Query(insHist, append([]any{nas, id, rid, kind, at}, vals...)...)
	if !lookups {
		return
	}
	day := time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, time.UTC)
	h := fnv.New32a()
	h.Write([]byte(nas))
	h.Write([]byte(id))
	shard := int(h.Sum32() % 16)
	b.Query(insHUser, user, day, rid, nas, id, kind, ip)
	b.Query(insHIP, ip, day, rid, nas, id, kind, user)
	b.Query(insHHour, at.Truncate(time.Hour), shard, nas, id, rid, kind, user, ip)
}
