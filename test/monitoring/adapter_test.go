package monitoring

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/openaaa/openaaa/controllers"
)

// TestPrometheusAdapterRule: the adapter rule reads a series policing exports and serves the
// custom metric under the name the operator's HPAs ask for by default.
func TestPrometheusAdapterRule(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "config", "prometheus", "prometheus-adapter-rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Rules struct {
			Custom []struct {
				SeriesQuery string `json:"seriesQuery"`
				Name        struct {
					Matches string `json:"matches"`
					As      string `json:"as"`
				} `json:"name"`
			} `json:"custom"`
		} `json:"rules"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	known := seriesNames(policingFamilies(t))
	served := false
	for _, r := range cfg.Rules.Custom {
		for _, n := range metricNames(r.SeriesQuery) {
			if !known[n] {
				t.Errorf("seriesQuery %q: %s is not exported by policing", r.SeriesQuery, n)
			}
		}
		served = served || r.Name.As == controllers.DefaultRequestsMetricName
	}
	if !served {
		t.Errorf("no rule serves %s (controllers.DefaultRequestsMetricName)", controllers.DefaultRequestsMetricName)
	}
}
