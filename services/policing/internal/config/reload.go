package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Reload configures hot reload of mounted files (clientsFile, client secret files, the
// subscriber file, certificates; docs/hot-reload.md).
type Reload struct {
	// Interval is how often the files are polled (mtime, size, then a content hash:
	// Kubernetes updates mounted Secrets by swapping a symlink). 0 disables polling;
	// SIGHUP still reloads.
	Interval Duration `json:"interval"`
}

func defaultReload() Reload { return Reload{Interval: Duration(2 * time.Second)} }

func (r Reload) validate(key string) []error {
	if r.Interval < 0 {
		return []error{fmt.Errorf("%s.interval: must not be negative (0 disables polling)", key)}
	}
	if r.Interval > 0 && r.Interval < Duration(10*time.Millisecond) {
		return []error{fmt.Errorf("%s.interval: %s is too short (at least 10ms)", key, r.Interval.D())}
	}
	return nil
}

// ClientsFileDoc is the clientsFile: a YAML document with a `clients:` list of the same shape
// as the configuration's clients.
type ClientsFileDoc struct {
	Clients []Client `json:"clients"`
}

// LoadClientsFile reads and validates a clients file. Errors name the file and the key.
func LoadClientsFile(path string) ([]Client, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("clientsFile: %w", err)
	}
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("clientsFile %s: %w", path, err)
	}
	var doc ClientsFileDoc
	dec := json.NewDecoder(strings.NewReader(string(js)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("clientsFile %s: %s", path, describeJSONError(err))
	}
	var errs []error
	for i, cl := range doc.Clients {
		errs = append(errs, cl.validate(fmt.Sprintf("clients[%d]", i))...)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("clientsFile %s: %w", path, err)
	}
	return doc.Clients, nil
}

// AllClients returns the configuration's clients followed by those of clientsFile (if set).
func (c *Config) AllClients() ([]Client, error) {
	out := append([]Client(nil), c.Clients...)
	if c.ClientsFile != "" {
		more, err := LoadClientsFile(c.ClientsFile)
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
	}
	// A client that does not say whether it must send Message-Authenticator follows the
	// node-wide radius.requireMessageAuthenticator.
	for i := range out {
		if out[i].RequireMessageAuthenticator == nil {
			v := c.Radius.RequireMessageAuthenticator
			out[i].RequireMessageAuthenticator = &v
		}
	}
	return out, nil
}
