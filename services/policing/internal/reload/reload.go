// Package reload watches mounted files and calls back when they change, so that clients,
// secrets, the subscriber file and certificates are replaced without a restart
// (docs/hot-reload.md).
//
// Files are polled: os.Stat (following symlinks) first, and only when mtime, size or inode moved,
// a SHA-256 of the content. Polling rather than inotify because Kubernetes updates a mounted
// Secret or ConfigMap by swapping a symlink (..data) in the volume's directory: events on the
// watched path itself do not fire, and content that did not change must not cause a reload.
//
// The first read and the watch. A file read at start and watched afterwards can change in
// between (a node reads its clients, then waits seconds for Cassandra, then starts watching):
// the watch must compare against what was read, not against the file as it is when the watch
// is added. So a caller Marks its files before it reads them the first time, and Watch starts
// from those fingerprints; a path that was never marked is taken as unseen, and its watch
// reloads once at the first poll (the watcher cannot know what was read; a reload of the same
// content is harmless, a missed change is not).
//
// A callback builds the new state completely, then swaps it in atomically; when it returns
// an error the old state stays in force, the reason is logged and counted as rejected
// (metrics.ConfigReloads{kind, result}), and the files are tried again when they change next.
package reload

import (
	"context"
	"crypto/sha256"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
)

// Watcher polls the files of its watches. Its methods are safe for concurrent use; Watch may
// be called before or after Start.
type Watcher struct {
	log      *slog.Logger
	interval time.Duration
	reloads  *prometheus.CounterVec // metrics.ConfigReloads

	mu      sync.Mutex // serialises polls and callbacks
	watches []*watch
	marks   map[string]fingerprint // the files as they were before their first read (Mark)

	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
}

type watch struct {
	kind     string
	paths    func() []string
	onChange func() error
	prints   map[string]fingerprint
}

type fingerprint struct {
	exists bool
	size   int64
	mtime  time.Time
	ino    uint64 // a symlink swap or a rename-over gives a new inode
	sum    [sha256.Size]byte
	err    string // unreadable: the error text, so that a change of error counts too
}

func (a fingerprint) sameContent(b fingerprint) bool {
	return a.exists == b.exists && a.sum == b.sum && a.err == b.err
}

// New returns a watcher that polls every interval once started (0: only Reload calls).
func New(log *slog.Logger, interval time.Duration, m *metrics.Metrics) *Watcher {
	if m == nil {
		m = metrics.New(metrics.Factory{})
	}
	return &Watcher{log: log, interval: interval, reloads: m.ConfigReloads, stop: make(chan struct{}), done: make(chan struct{})}
}

// Mark records the fingerprints of paths as they are now, before the caller reads them for
// the first time; a later Watch of these paths reloads if they differ from this by its first
// poll. A path marked twice keeps its first mark. Mark on a nil Watcher does nothing (a node
// built only to check its configuration).
func (w *Watcher) Mark(paths ...string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.marks == nil {
		w.marks = make(map[string]fingerprint)
	}
	for _, p := range paths {
		if _, done := w.marks[p]; p != "" && !done {
			w.marks[p] = fingerprintOf(p, fingerprint{})
		}
	}
}

// Watch calls onChange whenever the content of one of paths changes (appears, disappears,
// differs) from its Mark, and after that from what the last callback read. kind labels logs and metrics (clients, subscribers, certificates, policy).
func (w *Watcher) Watch(kind string, paths []string, onChange func() error) {
	ps := slices.Clone(paths)
	w.WatchFunc(kind, func() []string { return ps }, onChange)
}

// WatchFunc is Watch with a list of paths that may change with the files themselves (e.g.
// the secret files named by a clients file): paths is called on every poll.
func (w *Watcher) WatchFunc(kind string, paths func() []string, onChange func() error) {
	wa := &watch{kind: kind, paths: paths, onChange: onChange, prints: make(map[string]fingerprint)}
	w.mu.Lock()
	defer w.mu.Unlock()
	// Start from the files as they were before they were read (Mark), never as they are now:
	// a change since the first read must be seen at the first poll. Unmarked paths stay
	// unseen, so their first poll reloads.
	for _, p := range paths() {
		if f, ok := w.marks[p]; ok {
			wa.prints[p] = f
		}
	}
	w.watches = append(w.watches, wa)
}

// Start polls in the background until Stop.
func (w *Watcher) Start() {
	if w.interval <= 0 {
		close(w.done)
		return
	}
	go func() {
		defer close(w.done)
		t := time.NewTicker(w.interval)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
				w.Poll()
			}
		}
	}()
}

// Stop ends polling and waits for a callback in progress.
func (w *Watcher) Stop() {
	w.stopOnce.Do(func() { close(w.stop) })
	<-w.done
}

// Poll checks every watch once and calls back those whose files changed. It returns how
// many reloads were done and how many were rejected.
func (w *Watcher) Poll() (ok, rejected int) { return w.check(false) }

// Reload calls back every watch whether or not its files changed (SIGHUP).
func (w *Watcher) Reload() (ok, rejected int) { return w.check(true) }

func (w *Watcher) check(force bool) (ok, rejected int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, wa := range w.watches {
		paths := wa.paths()
		now := fingerprints(paths, wa.prints)
		changed := force
		var which []string
		for _, p := range paths {
			if old, seen := wa.prints[p]; !seen || !old.sameContent(now[p]) {
				changed = true
				which = append(which, p)
			}
		}
		if !changed {
			wa.prints = now // keep the cheaper stat data current
			continue
		}
		start := time.Now()
		err := wa.onChange()
		// Paths the callback made relevant (e.g. a new client's secret file) are taken as
		// they are now; the others as they were before the callback read them, so that a
		// change racing with the reload is seen on the next poll.
		after := fingerprints(wa.paths(), now)
		for p, f := range now {
			if _, still := after[p]; still {
				after[p] = f
			}
		}
		wa.prints = after
		if err != nil {
			rejected++
			w.reloads.WithLabelValues(wa.kind, "rejected").Inc()
			w.log.Error("reload rejected: the previous version stays in force", "kind", wa.kind, "files", which, "forced", force, "err", err.Error())
			continue
		}
		ok++
		w.reloads.WithLabelValues(wa.kind, "ok").Inc()
		w.log.Info("reloaded", "kind", wa.kind, "files", which, "forced", force, "took", time.Since(start).String())
	}
	return ok, rejected
}

// fingerprints stats each path and hashes those whose mtime or size differ from prev.
func fingerprints(paths []string, prev map[string]fingerprint) map[string]fingerprint {
	out := make(map[string]fingerprint, len(paths))
	for _, p := range paths {
		if p == "" {
			continue
		}
		out[p] = fingerprintOf(p, prev[p])
	}
	return out
}

func fingerprintOf(path string, prev fingerprint) fingerprint {
	st, err := os.Stat(path)
	if err != nil {
		if os.IsNotExist(err) {
			return fingerprint{}
		}
		return fingerprint{err: err.Error()}
	}
	f := fingerprint{exists: true, size: st.Size(), mtime: st.ModTime()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		f.ino = sys.Ino
	}
	if prev.exists && prev.err == "" && prev.size == f.size && prev.mtime.Equal(f.mtime) && prev.ino == f.ino {
		f.sum = prev.sum
		return f
	}
	fh, err := os.Open(path)
	if err != nil {
		return fingerprint{exists: true, err: err.Error()}
	}
	defer fh.Close()
	h := sha256.New()
	if _, err := io.Copy(h, fh); err != nil {
		return fingerprint{exists: true, err: err.Error()}
	}
	copy(f.sum[:], h.Sum(nil))
	return f
}

// OnSignal calls Reload each time a value arrives on sig, until ctx ends.
func (w *Watcher) OnSignal(ctx context.Context, sig <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sig:
			w.log.Info("reload requested by signal")
			w.Reload()
		}
	}
}
