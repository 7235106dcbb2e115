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
	acked, err := acctcheck.ReadAcked(files)
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
		missing, samples := acctcheck.Missing(acked, h)
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
	s, err := acctcheck.Connect(contact, dc, ks, nil)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return acctcheck.ReadHistory(s, cons)
}
