package reload

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// secretVolume lays files out like a kubelet-mounted Secret and updates them the same way:
// a new ..<timestamp> directory, then an atomic swap of the ..data symlink.
type secretVolume struct {
	t   *testing.T
	dir string
	gen int
}

func newSecretVolume(t *testing.T, files map[string]string) *secretVolume {
	v := &secretVolume{t: t, dir: t.TempDir()}
	v.update(files)
	for name := range files {
		if err := os.Symlink(filepath.Join("..data", name), filepath.Join(v.dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return v
}

func (v *secretVolume) update(files map[string]string) {
	v.gen++
	ts := fmt.Sprintf("..2026_01_01_00_00_%02d", v.gen)
	must(v.t, os.Mkdir(filepath.Join(v.dir, ts), 0o755))
	for name, text := range files {
		must(v.t, os.WriteFile(filepath.Join(v.dir, ts, name), []byte(text), 0o600))
	}
	tmp := filepath.Join(v.dir, "..data_tmp")
	must(v.t, os.Symlink(ts, tmp))
	must(v.t, os.Rename(tmp, filepath.Join(v.dir, "..data")))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestSymlinkSwapIsSeenAndSameContentIsNot(t *testing.T) {
	v := newSecretVolume(t, map[string]string{"secret": "one"})
	w := New(quiet, 0, nil)
	var calls atomic.Int32
	var seen atomic.Value
	path := filepath.Join(v.dir, "secret")
	w.Mark(path) // read (here: already in force) as it is now
	w.Watch("test", []string{path}, func() error {
		calls.Add(1)
		b, _ := os.ReadFile(path)
		seen.Store(string(b))
		return nil
	})
	if ok, rej := w.Poll(); ok+rej != 0 {
		t.Fatal("reload without a change")
	}
	v.update(map[string]string{"secret": "one"}) // kubelet resync: new files, same content
	if ok, _ := w.Poll(); ok != 0 {
		t.Error("reload although the content did not change")
	}
	v.update(map[string]string{"secret": "two"})
	if ok, _ := w.Poll(); ok != 1 || seen.Load() != "two" {
		t.Errorf("symlink swap: %d reloads, content %v", ok, seen.Load())
	}
	if ok, _ := w.Poll(); ok != 0 {
		t.Error("second poll reloaded again")
	}
	if ok, _ := w.Reload(); ok != 1 || calls.Load() != 2 {
		t.Errorf("forced reload: ok=%d calls=%d", ok, calls.Load())
	}
}

func TestRejectedReloadIsCountedAndRetriedOnNextChange(t *testing.T) {
	t.Parallel() // its metrics are its own
	dir := t.TempDir()
	path := filepath.Join(dir, "clients.yaml")
	must(t, os.WriteFile(path, []byte("good"), 0o600))
	m := metrics.New(metrics.With(prometheus.NewRegistry()))
	w := New(quiet, 0, m)
	w.Watch("testkind", []string{path}, func() error {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if string(b) != "good" && string(b) != "good again" {
			return errors.New("broken file")
		}
		return nil
	})
	rejected := testutil.ToFloat64(m.ConfigReloads.WithLabelValues("testkind", "rejected"))
	must(t, os.WriteFile(path, []byte("broken"), 0o600))
	if _, rej := w.Poll(); rej != 1 {
		t.Fatalf("broken file: %d rejected, want 1", rej)
	}
	if d := testutil.ToFloat64(m.ConfigReloads.WithLabelValues("testkind", "rejected")) - rejected; d != 1 {
		t.Errorf("openaaa_config_reloads_total{result=rejected} +%v", d)
	}
	if ok, rej := w.Poll(); ok+rej != 0 {
		t.Error("an unchanged broken file was tried again")
	}
	must(t, os.Remove(path))
	if _, rej := w.Poll(); rej != 1 {
		t.Error("a removed file is a change (rejected by the callback)")
	}
	must(t, os.WriteFile(path, []byte("good again"), 0o600))
	if ok, _ := w.Poll(); ok != 1 {
		t.Error("fixed file not reloaded")
	}
}

// WatchFunc: a path the callback makes relevant (a new client's secret file that is not
// there yet) triggers a reload when it appears.
func TestWatchFuncFollowsNewPaths(t *testing.T) {
	dir := t.TempDir()
	list := filepath.Join(dir, "list")
	must(t, os.WriteFile(list, []byte("a"), 0o600))
	paths := []string{list}
	w := New(quiet, 0, nil)
	w.WatchFunc("test", func() []string { return paths }, func() error {
		paths = []string{list, filepath.Join(dir, "b")}
		if _, err := os.Stat(filepath.Join(dir, "b")); err != nil {
			return err
		}
		return nil
	})
	must(t, os.WriteFile(list, []byte("a b"), 0o600))
	if _, rej := w.Poll(); rej != 1 {
		t.Fatal("missing file b: want rejected")
	}
	if ok, rej := w.Poll(); ok+rej != 0 {
		t.Fatal("nothing changed yet")
	}
	must(t, os.WriteFile(filepath.Join(dir, "b"), []byte("secret"), 0o600))
	if ok, _ := w.Poll(); ok != 1 {
		t.Fatal("b appeared: want a reload")
	}
}

func TestStartPollsUntilStop(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	must(t, os.WriteFile(path, []byte("1"), 0o600))
	w := New(quiet, 20*time.Millisecond, nil)
	got := make(chan struct{}, 10)
	w.Watch("test", []string{path}, func() error { got <- struct{}{}; return nil })
	w.Start()
	must(t, os.WriteFile(path, []byte("2"), 0o600))
	select {
	case <-got:
	case <-time.After(2 * time.Second):
		t.Fatal("change not seen by the poller")
	}
	w.Stop()
	w.Stop() // idempotent
}

// The start-up window (issue 32): a node reads its files, then waits (Cassandra), then adds
// its watches. A file changed in between (the kubelet swapping a Secret's ..data) must be
// reloaded by the first poll, whether the caller marked it before the read or not.
func TestChangeBetweenFirstReadAndWatchIsReloaded(t *testing.T) {
	for _, mark := range []bool{true, false} {
		t.Run(fmt.Sprintf("marked=%v", mark), func(t *testing.T) {
			v := newSecretVolume(t, map[string]string{"clients.yaml": "one client"})
			path := filepath.Join(v.dir, "clients.yaml")
			w := New(quiet, 0, nil)
			if mark {
				w.Mark(path)
			}
			b, _ := os.ReadFile(path) // the first read, at start
			inForce := string(b)
			v.update(map[string]string{"clients.yaml": "two clients"}) // inside the window
			w.Watch("clients", []string{path}, func() error {
				b, err := os.ReadFile(path)
				inForce = string(b)
				return err
			})
			if ok, _ := w.Poll(); ok != 1 || inForce != "two clients" {
				t.Fatalf("first poll: %d reloads, in force %q; want the change made before the watch", ok, inForce)
			}
			if ok, _ := w.Poll(); ok != 0 {
				t.Error("second poll reloaded again")
			}
		})
	}
}

// A marked file that did not change between its read and the watch is not reloaded; an
// unmarked one is, once (the watcher cannot know what was read).
func TestMarkedUnchangedFileIsNotReloaded(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	must(t, os.WriteFile(a, []byte("a"), 0o600))
	must(t, os.WriteFile(b, []byte("b"), 0o600))
	w := New(quiet, 0, nil)
	w.Mark(a)
	w.Mark(a) // the first mark stays
	var calls atomic.Int32
	w.Watch("marked", []string{a}, func() error { calls.Add(1); return nil })
	if ok, _ := w.Poll(); ok != 0 {
		t.Fatal("marked and unchanged: reloaded")
	}
	w.Watch("unmarked", []string{b}, func() error { calls.Add(1); return nil })
	if ok, _ := w.Poll(); ok != 1 {
		t.Fatalf("unmarked: %d reloads at the first poll, want 1", ok)
	}
	if ok, _ := w.Poll(); ok != 0 {
		t.Fatal("unmarked: reloaded twice")
	}
	var nilWatcher *Watcher
	nilWatcher.Mark(a) // a node built only to check its configuration
}
