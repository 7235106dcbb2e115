// Command acct-check checks that every accounting record a load generator got an
// Accounting-Response for is in Cassandra (make bench-geo, docs/benchmarks.md). It reads the
// files of `aaa-loadgen run --acked-out` ("Acct-Session-Id starts interims stops" per
// session) and acct_history (internal/acctcheck, as the multi-DC end-to-end test does):
// through the first node at -consistency (ALL: every DC's replica consulted), then through
// each node alone at LOCAL_ONE (what each DC holds by itself once hints and spools have
// been delivered). A record is missing when a session has fewer history rows of its kind than
// were acknowledged (a record has one row whatever its retransmissions and replays). Prints
// one JSON object; exits 0 whatever it found (the caller judges), 1 when it cannot read.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/openaaa/openaaa/internal/acctcheck"
)

// result is the JSON printed.
type result struct {
	Sessions     int            `json:"sessions"`
	Acknowledged int            `json:"acknowledged"`
	Missing      int            `json:"missing"`
	Consistency  string         `json:"consistency"`
	MissingByDC  map[string]int `json:"missingByDC,omitempty"`
	Samples      []string       `json:"missingSamples,omitempty"`
}

func main() {
	nodes := flag.String("nodes", "", "the nodes, one per DC: dc1=127.0.4.1:39042,dc2=...; the first is read at -consistency")
	ks := flag.String("keyspace", "", "keyspace")
	cons := flag.String("consistency", "ALL", "consistency of the read through the first node")
	flag.Parse()
	if err := run(*nodes, *ks, *cons, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "acct-check:", err)
		os.Exit(1)
	}
}

func run(nodes, ks, consName string, files []string) error {
	if nodes == "" || ks == "" || len(files) == 0 {
		return errors.New("usage: acct-check -nodes dc1=host:port[,...] -keyspace KS ACKED-FILE…")
	}
	var dcs, contacts []string
	for _, n := range strings.Split(nodes, ",") {
		dc, contact, ok := strings.Cut(n, "=")
		if !ok || dc == "" || contact == "" {
			return fmt.Errorf("-nodes %q: want dc=host:port", n)
		}
		dcs, contacts = append(dcs, dc), append(contacts, contact)
	}
	var cons gocql.Consistency
	if err := cons.UnmarshalText([]byte(consName)); err != nil {
		return fmt.Errorf("-consistency %q: %w", consName, err)
	}
	acked, err := readAcked(files)
	if err != nil {
		return err
	}
	res := result{Sessions: len(acked), Consistency: cons.String(), MissingByDC: map[string]int{}}
	for _, a := range acked {
		res.Acknowledged += a.Starts + a.Interims + a.Stops
	}
	for i := range dcs {
		c := gocql.LocalOne
		if i == 0 {
			c = cons
		}
		h, err := readOne(contacts[i], dcs[i], ks, c)
		if err != nil {
			return err
		}
		missing, samples := compare(acked, h)
		if i == 0 {
			res.Missing, res.Samples = missing, samples
		}
		res.MissingByDC[dcs[i]] = missing
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}

func readOne(contact, dc, ks string, cons gocql.Consistency) (map[acctcheck.Key]*acctcheck.Records, error) {
	s, err := acctcheck.Connect(contact, dc, ks)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return acctcheck.ReadHistory(s, cons)
}

// readAcked sums the sessions' acknowledged records over the files, by Acct-Session-Id.
func readAcked(files []string) (map[string]*acctcheck.Records, error) {
	out := map[string]*acctcheck.Records{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(fh)
		line := 0
		for sc.Scan() {
			line++
			var id string
			var r acctcheck.Records
			if _, err := fmt.Sscanf(sc.Text(), "%s %d %d %d", &id, &r.Starts, &r.Interims, &r.Stops); err != nil {
				fh.Close()
				return nil, fmt.Errorf("%s:%d: %q: want \"id starts interims stops\"", f, line, sc.Text())
			}
			a := out[id]
			if a == nil {
				a = &acctcheck.Records{}
				out[id] = a
			}
			a.Starts, a.Interims, a.Stops = a.Starts+r.Starts, a.Interims+r.Interims, a.Stops+r.Stops
		}
		err = sc.Err()
		fh.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
	}
	return out, nil
}

// compare counts the acknowledged records that h lacks (sessions matched by Acct-Session-Id:
// the generator's ids are unique per run) and names up to 10 of their sessions.
func compare(acked map[string]*acctcheck.Records, h map[acctcheck.Key]*acctcheck.Records) (int, []string) {
	stored := map[string]acctcheck.Records{}
	for k, r := range h {
		s := stored[k.ID]
		s.Starts, s.Interims, s.Stops = s.Starts+r.Starts, s.Interims+r.Interims, s.Stops+r.Stops
		stored[k.ID] = s
	}
	missing := 0
	var samples []string
	for id, a := range acked {
		s := stored[id]
		n := max(a.Starts-s.Starts, 0) + max(a.Interims-s.Interims, 0) + max(a.Stops-s.Stops, 0)
		if n > 0 {
			missing += n
			if len(samples) < 10 {
				samples = append(samples, fmt.Sprintf("%s: acknowledged %d/%d/%d, stored %d/%d/%d", id, a.Starts, a.Interims, a.Stops, s.Starts, s.Interims, s.Stops))
			}
		}
	}
	return missing, samples
}
