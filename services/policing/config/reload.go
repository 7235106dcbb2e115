package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"time"

	yamlv3 "gopkg.in/yaml.v3"
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
	var errs []error
	bad := keyed(key, &errs)
	notNegative(bad, "interval", r.Interval, "0 disables polling")
	if r.Interval > 0 && r.Interval < Duration(10*time.Millisecond) {
		bad("interval", "%s is too short (at least 10ms)", r.Interval.D())
	}
	return errs
}

// ClientsFileDoc is the clientsFile as a `clients:` document. A file may also be the bare
// list (what the operator's samples and the aaacluster chart write); both load alike.
type ClientsFileDoc struct {
	Clients []Client `json:"clients"`
}

// LoadClientsFile reads and validates a clients file: a YAML list of clients, or a mapping
// with a `clients:` list. The error lists every problem in file order, each with the file,
// line, column and key (Errors of Problem).
func LoadClientsFile(path string) ([]Client, error) {
	cls, _, err := loadClientsFile(path)
	return cls, err
}

// ClientsFileWarnings are the warnings of a clients file that loads (a CIDR with host bits
// set), with their lines; check-config prints them and serve logs them.
func ClientsFileWarnings(path string) []Problem {
	_, w, _ := loadClientsFile(path)
	return w
}

func loadClientsFile(path string) ([]Client, []Problem, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("clientsFile: %w", err)
	}
	root, err := parseNodes(path, raw)
	if err != nil {
		return nil, nil, fmt.Errorf("clientsFile: %w", Errors{err})
	}
	f := &fileCheck{file: path, pos: map[string]position{}}
	top := root
	if top.Kind == yamlv3.DocumentNode && len(top.Content) > 0 {
		top = top.Content[0]
	}
	switch {
	case top.Kind == 0 || top.Kind == yamlv3.DocumentNode || (top.Kind == yamlv3.ScalarNode && top.Tag == "!!null"):
		return nil, nil, nil
	case top.Kind == yamlv3.SequenceNode:
		f.walk(top, reflect.TypeOf([]Client{}), "clients", "clients")
	case top.Kind == yamlv3.MappingNode:
		f.check(root, reflect.TypeOf(ClientsFileDoc{}), "")
	default:
		return nil, nil, fmt.Errorf("clientsFile: %w", Errors{Problem{File: path, Line: top.Line, Column: top.Column,
			Msg: fmt.Sprintf("want a list of clients or a mapping with a clients: list, not %s", kindWords(top))}})
	}
	var node any
	if err := yaml.Unmarshal(raw, &node); err != nil {
		return nil, nil, fmt.Errorf("clientsFile: %w", Errors{Problem{File: path, Msg: strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")}})
	}
	if n, ok := node.([]any); ok {
		node = map[string]any{"clients": n}
	}
	for _, d := range f.dropped {
		dropPath(node, d)
	}
	problems := f.problems
	var doc ClientsFileDoc
	js, _ := json.Marshal(node)
	if err := json.Unmarshal(js, &doc); err != nil {
		problems = append(problems, f.place([]error{errors.New(describeJSONError(err))}, nil)...)
	} else {
		var errs []error
		for i, cl := range doc.Clients {
			errs = append(errs, cl.validate(fmt.Sprintf("clients[%d]", i))...)
		}
		errs = append(errs, duplicateClientNames(doc.Clients, func(i int) string { return fmt.Sprintf("clients[%d]", i) })...)
		problems = append(problems, f.place(errs, nil)...)
	}
	sortProblems(problems)
	if err := problemsErr(problems); err != nil {
		return nil, nil, fmt.Errorf("clientsFile: %w", err)
	}
	for i := range doc.Clients {
		doc.Clients[i].Origin = fmt.Sprintf("clientsFile %s: clients[%d]", path, i)
		if at, ok := f.pos[fmt.Sprintf("clients[%d]", i)]; ok {
			doc.Clients[i].Origin = fmt.Sprintf("clientsFile %s:%d:%d: clients[%d]", path, at.line, at.col, i)
		}
	}
	warnings := f.warnings
	for i, cl := range doc.Clients {
		if w := hostBits(cl.Address); w != "" {
			warnings = append(warnings, f.place([]error{fmt.Errorf("clients[%d].address: %s", i, w)}, nil)...)
		}
	}
	return doc.Clients, warnings, nil
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
			return out[i].Origin
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
