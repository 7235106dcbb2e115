package cassandra

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/openaaa/openaaa/services/policing/config"
)

// ConnOptions say how to reach the cluster. Both the store and `policing migrate` use them.
type ConnOptions struct {
	ContactPoints  []string // host or host:port
	Port           int      // for contact points without a port (default 9042)
	LocalDC        string
	Keyspace       string // empty: no keyspace (migrate before the keyspace exists)
	Consistency    gocql.Consistency
	Timeout        time.Duration
	ConnectTimeout time.Duration
	NumConns       int
	Username       string
	Password       string
	Log            *slog.Logger
}

// ConnOptionsFromConfig reads the credentials files and maps the configuration.
func ConnOptionsFromConfig(c config.Cassandra, log *slog.Logger) (ConnOptions, error) {
	user, pass, err := ReadCredentials(c.UsernameFile, c.PasswordFile)
	if err != nil {
		return ConnOptions{}, err
	}
	cons, err := gocql.ParseConsistencyWrapper(c.Consistency)
	if err != nil {
		return ConnOptions{}, fmt.Errorf("session.cassandra.consistency: %w", err)
	}
	return ConnOptions{
		ContactPoints:  c.ContactPoints,
		Port:           c.Port,
		LocalDC:        c.LocalDC,
		Keyspace:       c.Keyspace,
		Consistency:    cons,
		Timeout:        c.Timeout.D(),
		ConnectTimeout: c.ConnectTimeout.D(),
		NumConns:       c.NumConns,
		Username:       user,
		Password:       pass,
		Log:            log,
	}, nil
}

// ReadCredentials reads a username and a password from mounted files (trailing newlines
// ignored). Both empty: no credentials.
func ReadCredentials(userFile, passFile string) (string, string, error) {
	if userFile == "" && passFile == "" {
		return "", "", nil
	}
	if userFile == "" || passFile == "" {
		return "", "", errors.New("cassandra credentials: username file and password file go together")
	}
	u, err := os.ReadFile(userFile)
	if err != nil {
		return "", "", fmt.Errorf("cassandra credentials: %w", err)
	}
	p, err := os.ReadFile(passFile)
	if err != nil {
		return "", "", fmt.Errorf("cassandra credentials: %w", err)
	}
	user := strings.TrimRight(string(u), "\r\n")
	if user == "" {
		return "", "", fmt.Errorf("cassandra credentials: %s is empty", userFile)
	}
	return user, strings.TrimRight(string(p), "\r\n"), nil
}

// NewCluster builds the driver configuration: token-aware routing over DC-aware round robin
// with the local DC, protocol v4+ negotiated, prepared statements cached by the driver.
func NewCluster(o ConnOptions) (*gocql.ClusterConfig, error) {
	if len(o.ContactPoints) == 0 {
		return nil, errors.New("cassandra: no contact points")
	}
	if o.LocalDC == "" {
		return nil, errors.New("cassandra: no local DC")
	}
	port := o.Port
	if port == 0 {
		port = config.Default().Session.Cassandra.Port
	}
	hosts := make([]string, 0, len(o.ContactPoints))
	for _, cp := range o.ContactPoints {
		if _, _, err := net.SplitHostPort(cp); err != nil {
			cp = net.JoinHostPort(cp, strconv.Itoa(port))
		}
		hosts = append(hosts, cp)
	}
	c := gocql.NewCluster(hosts...)
	c.Port = port
	c.Keyspace = o.Keyspace
	if o.Consistency != 0 {
		c.Consistency = o.Consistency
	} else {
		c.Consistency = gocql.LocalQuorum
	}
	c.SerialConsistency = gocql.LocalSerial
	if o.Timeout > 0 {
		c.Timeout = o.Timeout
		c.WriteTimeout = o.Timeout
	}
	if o.ConnectTimeout > 0 {
		c.ConnectTimeout = o.ConnectTimeout
	}
	if o.NumConns > 0 {
		c.NumConns = o.NumConns
	}
	c.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.DCAwareRoundRobinPolicy(o.LocalDC))
	c.ReconnectInterval = 2 * time.Second
	c.ReconnectionPolicy = &gocql.ConstantReconnectionPolicy{MaxRetries: 1 << 20, Interval: time.Second}
	// A failed request is tried once more on the next host of the plan — a remote data
	// center's node when the local one is gone — instead of going to the spool of a pod that
	// may die with its data center (TestGeoThreeDatacenters lost records so). The driver
	// retries idempotent requests only: ours are, every write carrying its key and its own
	// timestamp; the conditional ones (LWT: aka_sqn, the migration lease) say they are not.
	c.RetryPolicy = &gocql.SimpleRetryPolicy{NumRetries: 1}
	c.DefaultIdempotence = true
	c.MaxWaitSchemaAgreement = 60 * time.Second
	if o.Username != "" {
		c.Authenticator = gocql.PasswordAuthenticator{Username: o.Username, Password: o.Password}
	}
	if o.Log != nil {
		c.Logger = slogLogger{o.Log.With("component", "gocql")}
	}
	return c, nil
}

// Connect opens a driver session, bounded by ctx.
func Connect(ctx context.Context, o ConnOptions) (*gocql.Session, error) {
	c, err := NewCluster(o)
	if err != nil {
		return nil, err
	}
	type res struct {
		s   *gocql.Session
		err error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := c.CreateSession()
		ch <- res{s, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, fmt.Errorf("cassandra %s: %w", strings.Join(c.Hosts, ","), r.err)
		}
		return r.s, nil
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.s != nil {
				r.s.Close()
			}
		}()
		return nil, fmt.Errorf("cassandra %s: %w", strings.Join(c.Hosts, ","), ctx.Err())
	}
}

// slogLogger adapts slog to the driver's StructuredLogger (info and debug go to debug).
type slogLogger struct{ l *slog.Logger }

func attrs(fields []gocql.LogField) []any {
	out := make([]any, 0, len(fields))
	for _, f := range fields {
		out = append(out, slog.String(f.Name, f.Value.String()))
	}
	return out
}

func (s slogLogger) Error(msg string, f ...gocql.LogField)   { s.l.Error(msg, attrs(f)...) }
func (s slogLogger) Warning(msg string, f ...gocql.LogField) { s.l.Warn(msg, attrs(f)...) }
func (s slogLogger) Info(msg string, f ...gocql.LogField)    { s.l.Debug(msg, attrs(f)...) }
func (s slogLogger) Debug(msg string, f ...gocql.LogField)   { s.l.Debug(msg, attrs(f)...) }
