package migrate

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/store/cassandra"
)

// Main runs `policing migrate` and returns the exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("policing migrate", flag.ContinueOnError)
	fl.SetOutput(stderr)
	contact := fl.String("contact-points", "127.0.0.1", "Cassandra contact points, host[:port] separated by commas")
	cass := config.Default().Session.Cassandra // the store's defaults: the same keyspace and port
	port := fl.Int("port", cass.Port, "CQL port for contact points without one")
	keyspace := fl.String("keyspace", cass.Keyspace, "keyspace to create and migrate")
	localDC := fl.String("local-dc", "", "datacenter of this Job (required)")
	repl := fl.String("replication", "", "replication factor per DC, e.g. dc1:3,dc2:3 (default: keep; new keyspace: 3, at most the nodes, per DC)")
	dry := fl.Bool("dry-run", false, "print the plan, change nothing")
	userFile := fl.String("username-file", "", "file holding the Cassandra username")
	passFile := fl.String("password-file", "", "file holding the Cassandra password")
	timeout := fl.Duration("timeout", 10*time.Minute, "give up after this long")
	leaseWait := fl.Duration("lease-wait", 5*time.Minute, "how long to wait for another migration's lease")
	fl.Usage = func() {
		fmt.Fprintln(stderr, "Usage: policing migrate --local-dc DC [--contact-points H1,H2] [--keyspace K] [--replication dc1:3,dc2:3] [--dry-run]")
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "policing migrate: unexpected argument %q\n", fl.Arg(0))
		return 2
	}
	if *localDC == "" {
		fmt.Fprintln(stderr, "policing migrate: --local-dc is required")
		return 2
	}
	if !config.ValidKeyspaceName(*keyspace) {
		fmt.Fprintf(stderr, "policing migrate: --keyspace %q is not a valid keyspace name\n", *keyspace)
		return 2
	}
	var replication Replication
	if *repl != "" {
		r, err := ParseReplication(*repl)
		if err != nil {
			fmt.Fprintf(stderr, "policing migrate: %v\n", err)
			return 2
		}
		replication = r
	}
	user, pass, err := cassandra.ReadCredentials(*userFile, *passFile)
	if err != nil {
		fmt.Fprintf(stderr, "policing migrate: %v\n", err)
		return 2
	}
	var cps []string
	for cp := range strings.SplitSeq(*contact, ",") {
		if cp = strings.TrimSpace(cp); cp != "" {
			cps = append(cps, cp)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	_, err = Run(ctx, Options{
		Conn: cassandra.ConnOptions{
			ContactPoints: cps, Port: *port, LocalDC: *localDC, Keyspace: *keyspace,
			Timeout: 10 * time.Second, ConnectTimeout: 10 * time.Second, NumConns: 1,
			Username: user, Password: pass,
		},
		Replication: replication,
		DryRun:      *dry,
		LeaseWait:   *leaseWait,
		Out:         stdout,
	})
	if err != nil {
		fmt.Fprintf(stderr, "policing migrate: %v\n", err)
		return 1
	}
	return 0
}
