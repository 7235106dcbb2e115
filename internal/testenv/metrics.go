package testenv

import (
	"bufio"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// Metric reads one series — its exact name with labels, as /metrics prints it, e.g.
// `openaaa_radius_requests_dropped_total{reason="duplicate"}` — from a Prometheus text
// endpoint (host:port of an admin port); 0 when the series is absent.
func Metric(t testing.TB, adminAddr, series string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + adminAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			var f float64
			_, _ = fmt.Sscan(v, &f)
			return f
		}
	}
	return 0
}
