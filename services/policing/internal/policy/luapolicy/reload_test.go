package luapolicy

import (
	"context"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func rateScript(rate string) string {
	return `
inputs = { authorize = { "sub.profile" } }
function authorize(req, sub) reply("Mikrotik-Rate-Limit", "` + rate + `") end
function selftest()
  local d = check_authorize({}, { profile = "gold" })
  assert(d.accept and d.reply["Mikrotik-Rate-Limit"] == "` + rate + `", "wrong rate")
end`
}

func TestReloadSwapsAndRefusesBadScripts(t *testing.T) {
	e := newEngine(t, rateScript("1M/1M"))
	ctx := context.Background()
	rate := func() string {
		return replyText(t, e.Authorize(ctx, request(t, "alice"), sub("gold", "")), "Mikrotik-Rate-Limit")
	}
	if rate() != "1M/1M" {
		t.Fatal(rate())
	}
	write := func(src string) error {
		if err := os.WriteFile(e.opt.File, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return e.Reload()
	}
	if err := write(rateScript("2M/2M")); err != nil {
		t.Fatal(err)
	}
	if rate() != "2M/2M" {
		t.Fatalf("after reload: %s (a memoized decision of the old script must not survive)", rate())
	}
	rejected := func() float64 { return testutil.ToFloat64(testMetrics.Loads.WithLabelValues("rejected")) }
	for name, bad := range map[string]string{
		"syntax":          `function authorize(req, sub`,
		"chunk error":     `error("no")`,
		"selftest fails":  strings.Replace(rateScript("3M/3M"), `== "3M/3M"`, `== "4M/4M"`, 1),
		"bad input":       `inputs = { authorize = { "req.No-Such-Attribute" } }`,
		"unknown hook":    `inputs = { authorise = {} }`,
		"hook not a func": `authorize = 3`,
		"bad reply attr":  `function authorize() reply("No-Such", "1") end function selftest() check_authorize({}, {}) end`,
		// An editor's truncate before its write, read by the reloader: no hook at all.
		"empty":    ``,
		"no hooks": `local x = 1`,
	} {
		r0 := rejected()
		if err := write(bad); err == nil {
			t.Fatalf("%s: accepted", name)
		}
		if rejected()-r0 != 1 {
			t.Fatalf("%s: not counted", name)
		}
		if rate() != "2M/2M" {
			t.Fatalf("%s: the old script is no longer in force: %s", name, rate())
		}
	}
}

func TestSelftestSeesHookErrors(t *testing.T) {
	o := options(writeScript(t, t.TempDir(), `
inputs = { authorize = { "sub.profile" } }
function authorize(req, sub) if req["Calling-Station-Id"] then reject() end end
function selftest() check_authorize({ ["Calling-Station-Id"] = "x" }, {}) end`))
	if _, err := New(o); err == nil || !strings.Contains(err.Error(), "not declared") {
		t.Fatalf("err %v", err)
	}
}

// Reloads while calls run on every state: nothing fails, every decision is one of the two
// scripts', and the retired programs' states are all closed (run with -race).
func TestReloadUnderConcurrentCalls(t *testing.T) {
	e := newEngine(t, rateScript("1M/1M"), func(o *Options) { o.Memoize = false; o.Budget = time.Second })
	ctx := context.Background()
	var stop atomic.Bool
	var wg sync.WaitGroup
	var bad atomic.Int64
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				d := e.Authorize(ctx, request(t, "alice"), sub("gold", ""))
				if r := replyText(t, d, "Mikrotik-Rate-Limit"); !d.Accept || (r != "1M/1M" && r != "2M/2M") {
					if bad.Add(1) == 1 {
						t.Logf("decision %+v", d)
					}
				}
			}
		}()
	}
	var olds []*program
	for i := range 20 {
		olds = append(olds, e.prog.Load())
		if err := e.load([]byte(rateScript([]string{"1M/1M", "2M/2M"}[i%2]))); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if bad.Load() != 0 {
		t.Fatalf("%d bad decisions across reloads", bad.Load())
	}
	for i, p := range olds {
		if n := p.created.Load(); n != 0 {
			t.Fatalf("retired program %d still holds %d states", i, n)
		}
	}
}
