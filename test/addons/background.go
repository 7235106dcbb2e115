package addons

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"
)

// Background installs every add-on on a cluster while other tests run. Under make test the
// add-ons' build ends while the first cluster test runs, which does not need them: their
// import, install and verification (about a minute) then overlap it instead of delaying the
// tests that need them (issue 12's cold budget).
type Background struct {
	done   chan struct{}
	err    error
	took   time.Duration
	cancel context.CancelFunc
}

var errNotBuilt = errors.New("the add-on images are not built (make addons)")

// StartBackground waits for make test's build of the add-ons (BuildStatusEnv; outside make
// test there is nothing to wait for), imports their images with importArchives (given
// hack/cluster.sh import's ARCHIVE=REPO arguments), then runs `hack/addons.sh install` and
// `verify` against kubeconfig. Without built images it installs nothing.
func StartBackground(kubeconfig string, importArchives func(args ...string) error) *Background {
	ctx, cancel := context.WithTimeout(context.Background(), buildWait+10*time.Minute)
	b := &Background{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(b.done)
		b.err = b.install(ctx, kubeconfig, importArchives)
	}()
	return b
}

func (b *Background) install(ctx context.Context, kubeconfig string, importArchives func(args ...string) error) error {
	if f := os.Getenv(BuildStatusEnv); f != "" {
		if _, err := waitBuildStatus(ctx, f, partAll); err != nil {
			return err
		}
	}
	imgs, err := images()
	if err != nil {
		return err
	}
	args := make([]string, 0, len(imgs))
	for _, img := range imgs {
		if _, err := os.Stat(img.Archive); err != nil {
			return errNotBuilt
		}
		args = append(args, img.ImportArg())
	}
	start := time.Now()
	if err := importArchives(args...); err != nil {
		return fmt.Errorf("importing the add-on images: %w", err)
	}
	for _, step := range []string{"install", "verify"} {
		if out, err := Script(ctx, step, kubeconfig); err != nil {
			return fmt.Errorf("%v%s", err, out)
		}
	}
	b.took = time.Since(start)
	return nil
}

// Wait returns once the add-ons are installed and work, failing t with the background
// install's error. NeedBuilt comes first: t skips, or fails under OPENAAA_INTEGRATION=require,
// when they are not built.
func (b *Background) Wait(t testing.TB, ctx context.Context) {
	t.Helper()
	NeedBuilt(t)
	start := time.Now()
	select {
	case <-b.done:
	case <-ctx.Done():
		t.Fatalf("waiting for the add-ons' install: %v", ctx.Err())
	}
	if b.err != nil {
		t.Fatalf("the add-ons' install (started when the cluster came up): %v", b.err)
	}
	t.Logf("add-ons imported, installed and verified in %s, in the background; waited %s for them",
		b.took.Round(time.Second), time.Since(start).Round(time.Second))
}

// Stop ends an install still running (the tests are over) and waits for it.
func (b *Background) Stop() {
	b.cancel()
	<-b.done
}
