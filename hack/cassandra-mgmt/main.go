// Command cassandra-mgmt is the entrypoint of OpenAAA's Cassandra test images (issue 31): a
// small stand-in for DataStax's Management API for Apache Cassandra, k8ssandra-client's
// `config build` and the Vector system logger, so that the real cass-operator and
// k8ssandra-operator can run Cassandra pods on our offline local cluster. Production uses the
// upstream images. README.md beside this file lists what it implements.
//
//	cassandra-mgmt [mgmtapi]   PID 1 of the server container: HTTP on :8080
//	                           (MGMT_API_LISTEN_TCP_PORT), starts Cassandra on
//	                           POST /api/v0/lifecycle/start (MGMT_API_EXPLICIT_START=true)
//	cassandra-mgmt config build  render /config from CONFIG_FILE_DATA and /cassandra-base-config
//	cassandra-mgmt logger      follow /var/log/cassandra/system.log on stdout
//	cassandra-mgmt nodetool …  Cassandra's nodetool on the local JMX port (also as the
//	                           image's /usr/local/bin/nodetool)
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	args := os.Args[1:]
	if filepath.Base(os.Args[0]) == "nodetool" { // the image's /usr/local/bin/nodetool link
		args = append([]string{"nodetool"}, args...)
	}
	var err error
	switch {
	case len(args) > 0 && args[0] == "nodetool":
		cmd := nodetoolCommand(context.Background(), settingsFromEnv(), args[1:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				os.Exit(exit.ExitCode())
			}
			fmt.Fprintln(os.Stderr, "nodetool:", err)
			os.Exit(1)
		}
		return
	case len(args) == 0 || args[0] == "mgmtapi":
		err = serve(log)
	case len(args) >= 2 && args[0] == "config" && args[1] == "build":
		var files []string
		files, err = buildConfig(configInputFromEnv())
		if err == nil {
			log.Info("config build", "wrote", files)
		}
	case args[0] == "logger":
		err = follow(envOr("LOG_FILE", "/var/log/cassandra/system.log"), os.Stdout)
	default:
		fmt.Fprintln(os.Stderr, "usage: cassandra-mgmt [mgmtapi] | config build | logger | nodetool ARGS...")
		os.Exit(2)
	}
	if err != nil {
		log.Error("cassandra-mgmt", "err", err)
		os.Exit(1)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// serve runs the Management API until SIGTERM/SIGINT, then stops Cassandra cleanly.
func serve(log *slog.Logger) error {
	s := settingsFromEnv()
	n := newNode(s, log)
	a := &api{n: n, log: log}
	addr := net.JoinHostPort(os.Getenv("MGMT_API_LISTEN_HOST"), envOr("MGMT_API_LISTEN_TCP_PORT", "8080"))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: a.routes(), ReadHeaderTimeout: 10 * time.Second}
	// MGMT_API_NO_KEEP_ALIVE=true (cass-operator sets it): one request per connection.
	if os.Getenv("MGMT_API_NO_KEEP_ALIVE") == "true" {
		srv.SetKeepAlivesEnabled(false)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	log.Info("management API listening", "addr", ln.Addr().String(), "conf", s.Conf, "lib", s.Lib, "data", s.Data)
	if os.Getenv("MGMT_API_EXPLICIT_START") != "true" {
		if err := n.start(""); err != nil {
			return err
		}
	}
	go watchGossip(ctx, n)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		log.Info("signal: stopping cassandra")
	case err := <-errc:
		n.stop(2 * time.Minute)
		return err
	}
	n.stop(2 * time.Minute)
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	return srv.Shutdown(sctx)
}

// watchGossip reads the gossip heartbeats every few seconds while Cassandra answers, so that
// IS_ALIVE reflects a peer that stopped beating even between the operators' requests.
func watchGossip(ctx context.Context, n *node) {
	t := time.NewTicker(3 * time.Second)
	defer t.Stop()
	a := &api{n: n, log: n.log}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, running, _ := n.state(); !running {
			continue
		}
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if s, err := n.cql(qctx); err == nil {
			_, _ = a.endpointStates(qctx, s)
		}
		cancel()
	}
}

// follow copies path to w as it grows (tail -F): it waits for the file to appear, and starts
// over when the file is replaced or truncated (logback's rolling). It returns on SIGTERM.
func follow(path string, w io.Writer) error {
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	var f *os.File
	var fi os.FileInfo
	var off int64
	buf := make([]byte, 64<<10)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		if f == nil {
			if nf, err := os.Open(path); err == nil {
				f, off = nf, 0
				fi, _ = f.Stat()
			} else if !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		if f != nil {
			for {
				k, err := f.Read(buf)
				if k > 0 {
					off += int64(k)
					if _, werr := w.Write(buf[:k]); werr != nil {
						return werr
					}
				}
				if err != nil {
					break
				}
			}
			// Replaced (another inode) or truncated: reopen from the start.
			if cur, err := os.Stat(path); err != nil || !os.SameFile(cur, fi) || cur.Size() < off {
				f.Close()
				f = nil
				continue
			}
		}
		select {
		case <-ctx.Done():
			if f != nil {
				f.Close()
			}
			return nil
		case <-tick.C:
		}
	}
}
