package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// operatorConfigData is CONFIG_FILE_DATA shaped as cass-operator v1.28.0 renders it
// (serverconfig.GetConfigAsJSON: cluster-info, datacenter-info, cassandra-yaml) with the
// keys k8ssandra-operator v1.26.0 adds (auth, num_tokens, heap, additional JVM options).
const operatorConfigData = `{
  "cassandra-yaml": {
    "authenticator": "PasswordAuthenticator",
    "authorizer": "CassandraAuthorizer",
    "num_tokens": 16,
    "role_manager": "CassandraRoleManager",
    "native_transport_port": 9142
  },
  "cluster-info": {"name": "openaaa", "seeds": "openaaa-seed-service,openaaa-dc1-additional-seed-service"},
  "datacenter-info": {"graph-enabled": 0, "name": "dc1", "solr-enabled": 0, "spark-enabled": 0},
  "jvm-server-options": {
    "initial_heap_size": "512Mi",
    "max_heap_size": "1G",
    "additional-jvm-opts": [
      "-Dcassandra.system_distributed_replication=dc1:1",
      "-Dcom.sun.management.jmxremote.authenticate=true",
      "-Dcassandra.jmx.remote.login.config=CassandraLogin",
      "-Djava.security.auth.login.config=$CASSANDRA_HOME/conf/cassandra-jaas.config"
    ]
  },
  "jvm17-server-options": {"additional-jvm-opts": ["-XX:+UseZGC"]},
  "cassandra-env-sh": {"additional-jvm-opts": ["-Dcassandra.allow_alter_rf_during_range_movement=true"]}
}`

func baseDir(t *testing.T) string {
	t.Helper()
	return filepath.Join("etc") // the image's /etc/cassandra, beside this file
}

func TestConfigBuild(t *testing.T) {
	out := t.TempDir()
	files, err := buildConfig(configInput{
		Data: []byte(operatorConfigData), PodIP: "10.244.0.7", HostIP: "192.168.1.5", Rack: "r1",
		ProductVersion: "5.0.9", PodName: "openaaa-dc1-r1-sts-0", BaseDir: baseDir(t), OutDir: out,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 5 {
		t.Errorf("wrote %v", files)
	}
	var y map[string]any
	b, err := os.ReadFile(filepath.Join(out, "cassandra.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"cluster_name": "openaaa", "listen_address": "10.244.0.7", "rpc_address": "10.244.0.7",
		"broadcast_address": "10.244.0.7", "broadcast_rpc_address": "10.244.0.7",
		"authenticator": "PasswordAuthenticator", "authorizer": "CassandraAuthorizer",
		"num_tokens": 16, "native_transport_port": 9142, "storage_port": 7000,
		"endpoint_snitch": "GossipingPropertyFileSnitch", "commitlog_sync": "periodic",
	}
	for k, v := range want {
		if !reflect.DeepEqual(y[k], v) {
			t.Errorf("cassandra.yaml %s = %#v, want %#v", k, y[k], v)
		}
	}
	seeds := y["seed_provider"].([]any)[0].(map[string]any)["parameters"].([]any)[0].(map[string]any)["seeds"]
	if seeds != "openaaa-seed-service,openaaa-dc1-additional-seed-service" {
		t.Errorf("seeds = %v", seeds)
	}
	rackdc, _ := os.ReadFile(filepath.Join(out, "cassandra-rackdc.properties"))
	if !strings.Contains(string(rackdc), "dc=dc1\nrack=r1\n") {
		t.Errorf("rackdc:\n%s", rackdc)
	}
	for _, f := range []string{"logback.xml", "jvm-server.options", "jvm17-server.options", "cassandra-env.options"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}

	// The launcher's view: the heap from the operator, its extra flags, minus remote-JMX auth.
	s := settings{Lib: t.TempDir(), Conf: out, Data: "/var/lib/cassandra", LogDir: "/var/log/cassandra", JMXPort: 7199, Heap: "256M"}
	args, err := javaArgs(s, "10.244.0.3")
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Join(args, " ")
	for _, w := range []string{"-Xms512M", "-Xmx1G", "-Dcassandra.system_distributed_replication=dc1:1", "-XX:+UseZGC",
		"-Dcassandra.allow_alter_rf_during_range_movement=true", "-Dcassandra.replace_address_first_boot=10.244.0.3",
		"-Dcassandra.config=file://" + out + "/cassandra.yaml", "-Dcassandra.jmx.local.port=7199",
		"org.apache.cassandra.service.CassandraDaemon"} {
		if !strings.Contains(line, w) {
			t.Errorf("java args lack %s", w)
		}
	}
	for _, no := range []string{"jmxremote", "CassandraLogin", "-Xmx256M", "$CASSANDRA_HOME"} {
		if strings.Contains(line, no) {
			t.Errorf("java args have %s", no)
		}
	}
	n, err := readNodeConfig(out)
	if err != nil {
		t.Fatal(err)
	}
	if n.RPC != "10.244.0.7" || n.NativePort != 9142 || n.DC != "dc1" || n.ClusterName != "openaaa" {
		t.Errorf("node config %+v", n)
	}
	// The image's base config alone (no config build): localhost becomes an address.
	if n, err := readNodeConfig("etc"); err != nil || n.RPC != "127.0.0.1" || n.NativePort != 9042 {
		t.Errorf("base node config %+v %v", n, err)
	}
}

func TestConfigBuildHostIPBroadcast(t *testing.T) {
	out := t.TempDir()
	_, err := buildConfig(configInput{Data: []byte(operatorConfigData), PodIP: "10.244.0.7", HostIP: "192.168.1.5",
		UseHostIPForBcx: true, Rack: "r1", BaseDir: baseDir(t), OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(out, "cassandra.yaml"))
	if !strings.Contains(string(b), "broadcast_address: 192.168.1.5") || !strings.Contains(string(b), "listen_address: 10.244.0.7") {
		t.Errorf("cassandra.yaml:\n%s", b)
	}
}

func TestConfigBuildErrors(t *testing.T) {
	for name, in := range map[string]configInput{
		"no pod IP":   {Data: []byte(operatorConfigData), BaseDir: "etc"},
		"bad JSON":    {Data: []byte("{"), PodIP: "10.0.0.1", BaseDir: "etc"},
		"no DC":       {Data: []byte(`{"cluster-info":{"name":"c"}}`), PodIP: "10.0.0.1", BaseDir: "etc"},
		"bad heap":    {Data: []byte(`{"datacenter-info":{"name":"d"},"jvm-server-options":{"max_heap_size":"lots"}}`), PodIP: "10.0.0.1", BaseDir: "etc"},
		"no base dir": {Data: []byte(operatorConfigData), PodIP: "10.0.0.1", BaseDir: "/nonexistent"},
	} {
		in.OutDir = t.TempDir()
		if _, err := buildConfig(in); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestHeapSize(t *testing.T) {
	for in, want := range map[any]string{"512M": "512M", "1Gi": "1G", "768Mi": "768M", "2g": "2G", float64(1 << 30): "1024M"} {
		got, err := heapSize(in)
		if err != nil || got != want {
			t.Errorf("heapSize(%v) = %q, %v; want %q", in, got, err, want)
		}
	}
}
