package app

// Exported for the external tests (package app_test), which share the test binary: the
// helpers that take a Node. Those that need none are in package apptest.

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/apptest"
)

// SetAfterStoreOpen runs f in Start between the first read of the mounted files and their
// watches (the wait for the store); the returned func undoes it.
func SetAfterStoreOpen(f func()) (undo func()) {
	afterStoreOpen = f
	return func() { afterStoreOpen = nil }
}

// StartYAML starts a node from a YAML text in which {{dir}} is dir (written to
// dir/policing.yaml, which a test may load again); sets are --set overrides.
func StartYAML(t *testing.T, dir, text string, sets ...string) *Node {
	t.Helper()
	return startConfig(t, loadYAML(t, dir, text, sets...), slog.LevelInfo)
}

// Metric reads one series (exact name with labels) from the node's /metrics; 0 if absent.
func Metric(t testing.TB, n *Node, series string) float64 {
	t.Helper()
	return testenv.Metric(t, n.Addr("admin.address").String(), series)
}

// loadYAML is the configuration StartYAML starts.
func loadYAML(t *testing.T, dir, text string, sets ...string) *config.Config {
	t.Helper()
	path := filepath.Join(dir, "policing.yaml")
	apptest.Check(t, os.WriteFile(path, []byte(strings.ReplaceAll(text, "{{dir}}", dir)), 0o600))
	cfg, err := config.Load(path, sets, nil)
	apptest.Check(t, err)
	return cfg
}

// startConfig starts a node at the log level given (logs go to stderr under go test -v)
// and shuts it down at the end of the test.
func startConfig(t *testing.T, cfg *config.Config, at slog.Level) *Node {
	t.Helper()
	level := new(slog.LevelVar)
	level.Set(at)
	log := quietLog()
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	}
	n, err := Start(context.Background(), cfg, log, level)
	apptest.Check(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = n.Shutdown(ctx)
	})
	return n
}

// writeNodeFiles writes the files the tests' node configurations name in dir: the clients'
// secret, the subscribers and the admin token.
func writeNodeFiles(t *testing.T, dir, secret, subs string) {
	t.Helper()
	apptest.Check(t, os.WriteFile(filepath.Join(dir, "secret"), []byte(secret+"\n"), 0o600))
	apptest.Check(t, os.WriteFile(filepath.Join(dir, "subs.yaml"), []byte(subs), 0o600))
	apptest.Check(t, os.WriteFile(filepath.Join(dir, "admin-token"), []byte(adminToken+"\n"), 0o600))
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
