package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
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

// ClientsFileDoc is the clientsFile as a `clients:` document. A file may also be the bare
// list (what the operator's samples and the aaacluster chart write); both load alike.
type ClientsFileDoc struct {
	Clients []Client `json:"clients"`
}

// LoadClientsFile reads and validates a clients file: a YAML list of clients, or a mapping
// with a `clients:` list. Errors name the file and the key.
func LoadClientsFile(path string) ([]Client, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("clientsFile: %w", err)
	}
	var node any
	if err := yaml.Unmarshal(raw, &node); err != nil {
		return nil, fmt.Errorf("clientsFile %s: %w", path, err)
	}
	switch n := node.(type) {
	case nil:
		return nil, nil
	case []any:
		node = map[string]any{"clients": n}
	case map[string]any:
	default:
		return nil, fmt.Errorf("clientsFile %s: want a list of clients or a mapping with a clients: list, not a %s", path, yamlKind(n))
	}
	if list, ok := node.(map[string]any)["clients"].([]any); ok {
		for i, e := range list {
			if _, ok := e.(map[string]any); !ok {
				return nil, fmt.Errorf("clientsFile %s: clients[%d]: want a mapping (name, address, secretFile...), not a %s", path, i, yamlKind(e))
			}
		}
	}
	if err := unknownKeys(node, reflect.TypeOf(ClientsFileDoc{}), ""); err != nil {
		return nil, fmt.Errorf("clientsFile %s: %w", path, err)
	}
	js, _ := json.Marshal(node)
	var doc ClientsFileDoc
	if err := json.Unmarshal(js, &doc); err != nil {
		return nil, fmt.Errorf("clientsFile %s: %s", path, describeJSONError(err))
	}
	var errs []error
	for i, cl := range doc.Clients {
		errs = append(errs, cl.validate(fmt.Sprintf("clients[%d]", i))...)
	}
	errs = append(errs, duplicateClientNames(doc.Clients, func(i int) string { return fmt.Sprintf("clients[%d]", i) })...)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("clientsFile %s: %w", path, err)
	}
	return doc.Clients, nil
}

// yamlKind names a decoded YAML scalar's type for an error message.
func yamlKind(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	default:
		return "number"
	}
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
		// A name both in clients and in clientsFile (Validate and LoadClientsFile each
		// refuse duplicates of their own).
		inline := len(c.Clients)
		if err := errors.Join(duplicateClientNames(out, func(i int) string {
			if i < inline {
				return fmt.Sprintf("clients[%d] (configuration)", i)
			}
			return fmt.Sprintf("clientsFile %s: clients[%d]", c.ClientsFile, i-inline)
		})...); err != nil {
			return nil, err
		}
	} else if err := errors.Join(duplicateClientNames(out, func(i int) string { return fmt.Sprintf("clients[%d]", i) })...); err != nil {
		return nil, err // a Config that Validate did not see
	}
	// A client that does not say whether it must send Message-Authenticator, or whether
	// its Proxy-State is limited, follows the node-wide radius.requireMessageAuthenticator
	// and radius.limitProxyState.
	for i := range out {
		if out[i].RequireMessageAuthenticator == nil {
			v := c.Radius.RequireMessageAuthenticator
			out[i].RequireMessageAuthenticator = &v
		}
		if out[i].LimitProxyState == nil {
			v := c.Radius.LimitProxyState
			out[i].LimitProxyState = &v
		}
	}
	return out, nil
}
