package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// configInput is what `config build` reads: cass-operator's CONFIG_FILE_DATA and the pod's
// environment (pkg/reconciliation/construct_podtemplatespec.go, v1.28.0).
type configInput struct {
	Data            []byte // CONFIG_FILE_DATA
	PodIP           string // POD_IP
	HostIP          string // HOST_IP
	Rack            string // RACK_NAME
	ProductVersion  string // PRODUCT_VERSION
	PodName         string // POD_NAME
	UseHostIPForBcx bool   // USE_HOST_IP_FOR_BROADCAST
	BaseDir         string // /cassandra-base-config (the server image's /etc/cassandra)
	OutDir          string // /config
}

func configInputFromEnv() configInput {
	env := func(k, def string) string {
		if v := os.Getenv(k); v != "" {
			return v
		}
		return def
	}
	return configInput{
		Data:            []byte(os.Getenv("CONFIG_FILE_DATA")),
		PodIP:           os.Getenv("POD_IP"),
		HostIP:          os.Getenv("HOST_IP"),
		Rack:            env("RACK_NAME", "default"),
		ProductVersion:  os.Getenv("PRODUCT_VERSION"),
		PodName:         os.Getenv("POD_NAME"),
		UseHostIPForBcx: strings.EqualFold(os.Getenv("USE_HOST_IP_FOR_BROADCAST"), "true"),
		BaseDir:         env("CONFIG_BASE_DIR", "/cassandra-base-config"),
		OutDir:          env("CONFIG_OUT_DIR", "/config"),
	}
}

// configData is the part of CONFIG_FILE_DATA we use. cass-operator writes cluster-info,
// datacenter-info and cassandra-yaml; k8ssandra-operator adds jvm-server-options,
// jvm11/jvm17-server-options and cassandra-env-sh (its cass-config tags).
type configData struct {
	ClusterInfo struct {
		Name  string `json:"name"`
		Seeds string `json:"seeds"`
	} `json:"cluster-info"`
	DatacenterInfo struct {
		Name string `json:"name"`
	} `json:"datacenter-info"`
	CassandraYaml  map[string]any `json:"cassandra-yaml"`
	JvmServer      map[string]any `json:"jvm-server-options"`
	Jvm11Server    map[string]any `json:"jvm11-server-options"`
	Jvm17Server    map[string]any `json:"jvm17-server-options"`
	CassandraEnvSh map[string]any `json:"cassandra-env-sh"`
}

// Files config build writes into /config (besides copies of the other base files).
const (
	fileYaml    = "cassandra.yaml"
	fileRackDC  = "cassandra-rackdc.properties"
	fileJvm     = "jvm-server.options"
	fileJvm17   = "jvm17-server.options"
	fileEnvOpts = "cassandra-env.options" // cassandra-env-sh additional-jvm-opts, one a line
)

// buildConfig renders /config from the base config and the operator's data. It returns the
// files it wrote, relative to OutDir.
func buildConfig(in configInput) ([]string, error) {
	var d configData
	if len(strings.TrimSpace(string(in.Data))) > 0 {
		if err := json.Unmarshal(in.Data, &d); err != nil {
			return nil, fmt.Errorf("CONFIG_FILE_DATA: %w", err)
		}
	}
	if in.PodIP == "" {
		return nil, fmt.Errorf("POD_IP is not set")
	}
	if d.DatacenterInfo.Name == "" {
		return nil, fmt.Errorf("CONFIG_FILE_DATA: datacenter-info.name is empty")
	}
	if err := os.MkdirAll(in.OutDir, 0o755); err != nil {
		return nil, err
	}
	var written []string
	// Every base file first (logback.xml and whatever else the image ships), then ours over them.
	entries, err := os.ReadDir(in.BaseDir)
	if err != nil {
		return nil, fmt.Errorf("base config: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(in.BaseDir, e.Name()))
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(in.OutDir, e.Name()), b, 0o644); err != nil {
			return nil, err
		}
	}

	yml, err := renderYaml(in, d)
	if err != nil {
		return nil, err
	}
	jvm, err := jvmServerOptions(d.JvmServer)
	if err != nil {
		return nil, err
	}
	jvm17 := additionalOpts(d.Jvm17Server)
	files := []struct {
		name string
		data []byte
	}{
		{fileYaml, yml},
		{fileRackDC, []byte(fmt.Sprintf("# Written by cassandra-mgmt config build.\ndc=%s\nrack=%s\nprefer_local=true\n", d.DatacenterInfo.Name, in.Rack))},
		{fileJvm, optionsFile(jvm)},
		{fileJvm17, optionsFile(jvm17)},
		{fileEnvOpts, optionsFile(additionalOpts(d.CassandraEnvSh))},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(in.OutDir, f.name), f.data, 0o644); err != nil {
			return nil, err
		}
		written = append(written, f.name)
	}
	return written, nil
}

func renderYaml(in configInput, d configData) ([]byte, error) {
	base := map[string]any{}
	b, err := os.ReadFile(filepath.Join(in.BaseDir, fileYaml))
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	if err == nil {
		if err := yaml.Unmarshal(b, &base); err != nil {
			return nil, fmt.Errorf("base %s: %w", fileYaml, err)
		}
		if base == nil {
			base = map[string]any{}
		}
	}
	merged := mergeMaps(base, d.CassandraYaml)
	if d.ClusterInfo.Name != "" {
		merged["cluster_name"] = d.ClusterInfo.Name
	}
	if d.ClusterInfo.Seeds != "" {
		merged["seed_provider"] = []any{map[string]any{
			"class_name": "org.apache.cassandra.locator.SimpleSeedProvider",
			"parameters": []any{map[string]any{"seeds": d.ClusterInfo.Seeds}},
		}}
	}
	broadcast := in.PodIP
	if in.UseHostIPForBcx && in.HostIP != "" {
		broadcast = in.HostIP
	}
	merged["listen_address"] = in.PodIP
	merged["rpc_address"] = in.PodIP
	merged["broadcast_address"] = broadcast
	merged["broadcast_rpc_address"] = broadcast
	if _, ok := merged["endpoint_snitch"]; !ok {
		merged["endpoint_snitch"] = "GossipingPropertyFileSnitch"
	}
	out, err := yaml.Marshal(merged)
	if err != nil {
		return nil, err
	}
	return append([]byte("# Written by cassandra-mgmt config build: the base config merged with the operator's cassandra-yaml.\n"), out...), nil
}

// mergeMaps returns base with over's keys set; maps merge key by key, anything else replaces.
func mergeMaps(base, over map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		if bm, ok := out[k].(map[string]any); ok {
			if om, ok := v.(map[string]any); ok {
				out[k] = mergeMaps(bm, om)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// jvmServerOptions turns jvm-server-options into flags: the heap sizes and the additional
// options. The other keys (GC tuning booleans) are not rendered: the launcher's own flag list
// is Cassandra 5.0's jvm-server.options + jvm17-server.options.
func jvmServerOptions(m map[string]any) ([]string, error) {
	var out []string
	for _, k := range []struct{ key, flag string }{{"initial_heap_size", "-Xms"}, {"max_heap_size", "-Xmx"}} {
		v, ok := m[k.key]
		if !ok {
			continue
		}
		size, err := heapSize(v)
		if err != nil {
			return nil, fmt.Errorf("jvm-server-options.%s: %w", k.key, err)
		}
		out = append(out, k.flag+size)
	}
	return append(out, additionalOpts(m)...), nil
}

// heapSize accepts what the operators render: "512M", "1G", a Kubernetes quantity ("512Mi",
// "1Gi") or a number of bytes.
func heapSize(v any) (string, error) {
	switch x := v.(type) {
	case float64:
		return fmt.Sprintf("%dM", int64(x)/(1<<20)), nil
	case string:
		s := strings.TrimSpace(x)
		for _, suf := range []string{"Ki", "Mi", "Gi"} {
			if strings.HasSuffix(s, suf) {
				s = strings.TrimSuffix(s, "i")
			}
		}
		if s == "" {
			return "", fmt.Errorf("empty size")
		}
		last := s[len(s)-1]
		num := strings.TrimRight(s, "KMGkmg")
		for _, c := range num {
			if c < '0' || c > '9' {
				return "", fmt.Errorf("size %q: want e.g. 512M or 1Gi", x)
			}
		}
		if last >= '0' && last <= '9' {
			var n int64
			fmt.Sscan(s, &n)
			return fmt.Sprintf("%dM", n/(1<<20)), nil
		}
		return num + strings.ToUpper(string(last)), nil
	}
	return "", fmt.Errorf("size %v: want a string or a number", v)
}

func additionalOpts(m map[string]any) []string {
	var out []string
	if l, ok := m["additional-jvm-opts"].([]any); ok {
		for _, o := range l {
			if s, ok := o.(string); ok && strings.TrimSpace(s) != "" {
				out = append(out, strings.TrimSpace(s))
			}
		}
	}
	return out
}

func optionsFile(opts []string) []byte {
	var b strings.Builder
	b.WriteString("# Written by cassandra-mgmt config build.\n")
	for _, o := range opts {
		b.WriteString(o)
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// readOptions reads the flags of an options file: one a line, # comments skipped.
func readOptions(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		out = append(out, l)
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	k := make([]string, 0, len(m))
	for s := range m {
		k = append(k, s)
	}
	sort.Strings(k)
	return k
}
