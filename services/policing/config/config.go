// Package config is the policing configuration: YAML on disk, every key overridable by
// `--set path=value` flags and POLICING_<PATH> environment variables, validated with errors
// that name the offending key. docs/configuration.md documents every key. It is the one
// schema of the file: the operator fills these types and writes them with MarshalSet.
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"reflect"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Config is the whole policing configuration.
type Config struct {
	Log         Log          `json:"log"`
	Radius      Radius       `json:"radius"`
	Clients     []Client     `json:"clients"`
	ClientsFile string       `json:"clientsFile,omitempty"`
	Subscribers Subscribers  `json:"subscribers"`
	Session     SessionStore `json:"session"`
	Policy      Policy       `json:"policy"`
	Admin       Admin        `json:"admin"`
	Reload      Reload       `json:"reload"`
	Proxy       Proxy        `json:"proxy"`
	CoA         CoA          `json:"coa"`
	Diameter    Diameter     `json:"diameter"`
	EAP         EAP          `json:"eap"`
}

// Log configures structured logging.
type Log struct {
	Level  string `json:"level"`  // debug, info, warn, error; changeable at runtime
	Format string `json:"format"` // json or text
}

// Radius configures the RADIUS listeners and the worker pool.
type Radius struct {
	// AuthAddress and AcctAddress are host:port, or several separated by commas (one
	// socket each: Addresses).
	AuthAddress string `json:"authAddress"`
	AcctAddress string `json:"acctAddress"`
	// Dispatch is auto, inline or workers: see InlineDispatch.
	Dispatch        string   `json:"dispatch"`
	Workers         int      `json:"workers"`
	QueueSize       int      `json:"queueSize"`
	MaxQueueWait    Duration `json:"maxQueueWait"`
	Readers         int      `json:"readers"`
	DuplicateWindow Duration `json:"duplicateWindow"`
	DrainTimeout    Duration `json:"drainTimeout"`
	SocketBuffer    int      `json:"socketBuffer"`
	// RequireMessageAuthenticator is the default of every client's own key (BlastRADIUS).
	RequireMessageAuthenticator bool `json:"requireMessageAuthenticator"`
	// LimitProxyState is the default of every client's own key (BlastRADIUS).
	LimitProxyState bool   `json:"limitProxyState"`
	RadSec          RadSec `json:"radsec"`
	// Dictionaries are FreeRADIUS-format dictionary files loaded on top of the built-in
	// one, with their $INCLUDEs (docs/dictionaries.md); reloaded when they change.
	Dictionaries []string `json:"dictionaries,omitempty"`
}

// Client is one NAS (or a range of NAS) allowed to talk to us.
type Client struct {
	Name string `json:"name"`
	// Address is an IP address or a CIDR.
	Address string `json:"address"`
	// NASIdentifier tells apart several NAS behind one address (NAT): when set, requests from
	// Address must carry this NAS-Identifier.
	NASIdentifier string `json:"nasIdentifier,omitempty"`
	// SecretFile holds the shared secret (a mounted Secret); trailing newlines are ignored.
	SecretFile string `json:"secretFile"`
	// RequireMessageAuthenticator drops Access-Requests without a valid Message-Authenticator
	// (BlastRADIUS, CVE-2024-3596). Default: radius.requireMessageAuthenticator (true).
	RequireMessageAuthenticator *bool `json:"requireMessageAuthenticator,omitempty"`
	// LimitProxyState drops Access-Requests that carry Proxy-State without
	// Message-Authenticator, when Message-Authenticator is not required (BlastRADIUS, as
	// FreeRADIUS's limit_proxy_state). Default: radius.limitProxyState (true).
	LimitProxyState *bool `json:"limitProxyState,omitempty"`
	// CoAPort is where the NAS listens for CoA and Disconnect requests (RFC 5176).
	CoAPort int `json:"coaPort,omitempty"`
	// Origin names where a client of clientsFile was read ("clientsFile
	// /etc/clients.yaml:3:5: clients[0]"), for errors about it (its secret file); empty for
	// clients of the configuration, named clients[i].
	Origin string `json:"-"`
}

// Subscribers selects the subscriber source.
type Subscribers struct {
	Source string `json:"source"` // file, ldap
	File   string `json:"file,omitempty"`
	LDAP   LDAP   `json:"ldap"`
}

// SessionStore selects and tunes the session store.
type SessionStore struct {
	Store  string `json:"store"` // embedded, cassandra, hybrid, none
	Expiry Expiry `json:"expiry"`
	// SupersedeStale (embedded store): a new session closes the older active one of the same NAS,
	// User-Name and framed IP (its Stop was lost; docs/configuration.md).
	SupersedeStale bool      `json:"supersedeStale"`
	Embedded       Embedded  `json:"embedded"`
	Cassandra      Cassandra `json:"cassandra"`
}

// Expiry closes sessions that stopped reporting: after Multiplier × interim interval + Grace
// without a message. Multiplier 0 disables expiry.
type Expiry struct {
	InterimInterval Duration `json:"interimInterval"`
	Multiplier      int      `json:"multiplier"`
	Grace           Duration `json:"grace"`
}

// Embedded tunes the in-memory store.
type Embedded struct {
	Shards        int      `json:"shards"`
	SnapshotFile  string   `json:"snapshotFile,omitempty"`
	HistorySize   int      `json:"historySize"`
	SweepInterval Duration `json:"sweepInterval"`
}

// Admin configures the HTTP admin port (/metrics, /healthz, /readyz, /api/v1).
type Admin struct {
	Address string `json:"address"`
	// TokenFile holds the bearer token of /api/v1 and /debug/pprof (reloaded on change).
	// Empty: those answer 403 and serve nothing (docs/security.md).
	TokenFile string `json:"tokenFile,omitempty"`
	// Pprof serves /debug/pprof/ on the admin port (CPU and heap profiles for support).
	Pprof bool `json:"pprof"`
}

// The default ports, which the operator's defaults are too (its Services, container ports and
// NetworkPolicy open them).
const (
	DefaultAuthPort     = 1812
	DefaultAcctPort     = 1813
	DefaultAdminPort    = 9812
	DefaultDiameterPort = 3868
)

// Default returns the configuration used for every key the file leaves out.
func Default() Config {
	return Config{
		Log: Log{Level: "info", Format: "json"},
		Radius: Radius{
			AuthAddress:                 fmt.Sprintf(":%d", DefaultAuthPort),
			AcctAddress:                 fmt.Sprintf(":%d", DefaultAcctPort),
			Dispatch:                    "auto",
			Workers:                     64,
			QueueSize:                   256,
			MaxQueueWait:                Duration(time.Second),
			DuplicateWindow:             Duration(5 * time.Second),
			DrainTimeout:                Duration(10 * time.Second),
			SocketBuffer:                1 << 20,
			RequireMessageAuthenticator: true,
			LimitProxyState:             true,
			RadSec:                      defaultRadSec(),
		},
		Subscribers: Subscribers{Source: "file", LDAP: defaultLDAP()},
		Session: SessionStore{
			Store:          "embedded",
			Expiry:         Expiry{InterimInterval: Duration(10 * time.Minute), Multiplier: 2, Grace: Duration(time.Minute)},
			SupersedeStale: true,
			Embedded:       Embedded{Shards: 64, HistorySize: 10000, SweepInterval: Duration(10 * time.Second)},
			Cassandra:      defaultCassandra(),
		},
		Policy:   defaultPolicy(),
		Admin:    Admin{Address: fmt.Sprintf(":%d", DefaultAdminPort)},
		Reload:   defaultReload(),
		Proxy:    defaultProxy(),
		CoA:      defaultCoA(),
		Diameter: defaultDiameter(),
		EAP:      defaultEAP(),
	}
}

// Load reads the YAML file (empty path: defaults only), applies POLICING_* environment
// variables, then the --set overrides, and validates the result. The error lists every
// problem, in file order, each with file:line:column and its key (Errors of Problem).
func Load(path string, sets []string, environ []string) (*Config, error) {
	cfg, _, err := LoadWithWarnings(path, sets, environ)
	return cfg, err
}

// LoadWithWarnings is Load that also returns the warnings: what is accepted but likely
// not meant (an unknown POLICING_* variable, a client CIDR with host bits set).
// check-config prints them and serve logs them.
func LoadWithWarnings(path string, sets []string, environ []string) (*Config, []Problem, error) {
	doc := map[string]any{}
	f := &fileCheck{file: path, pos: map[string]position{}}
	if path != "" {
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, fmt.Errorf("config: %w", err)
		}
		root, err := parseNodes(path, raw)
		if err != nil {
			return nil, nil, Errors{err}
		}
		f.check(root, reflect.TypeOf(Config{}), "")
		if err := yaml.Unmarshal(raw, &doc); err != nil {
			if len(f.problems) > 0 { // the walk said why in words (a list where the mapping belongs)
				return nil, nil, problemsErr(f.problems)
			}
			return nil, nil, Errors{Problem{File: path, Msg: strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")}}
		}
		if doc == nil {
			doc = map[string]any{}
		}
		for _, d := range f.dropped {
			dropPath(doc, d)
		}
	}
	problems := f.problems
	warnings := append(f.warnings, unknownEnv(environ)...)
	overrides := map[string]string{}
	for _, kv := range envOverrides(environ) {
		src := envName(kv[0])
		if err := setPath(doc, kv[0], kv[1]); err != nil {
			problems = append(problems, Problem{Source: src, Msg: err.Error()})
			continue
		}
		overrides[kv[0]] = src
	}
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			problems = append(problems, Problem{Source: "--set", Msg: fmt.Sprintf("%q: want path=value", s)})
			continue
		}
		if err := setPath(doc, k, v); err != nil {
			problems = append(problems, Problem{Source: "--set", Msg: err.Error()})
			continue
		}
		overrides[k] = "--set " + k
	}
	if err := unknownKeys(doc, reflect.TypeOf(Config{}), ""); err != nil { // keys set by overrides
		key, rest := keyOf(err.Error())
		problems = append(problems, Problem{Source: "--set", Key: key, Msg: rest})
	}
	cfg := Default()
	js, _ := json.Marshal(doc)
	dec := json.NewDecoder(strings.NewReader(string(js)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		key, rest := keyOf(describeJSONError(err))
		problems = append(problems, f.place([]error{errors.New(key + ": " + rest)}, overrides)...)
		sortProblems(problems)
		return nil, warnings, problemsErr(problems)
	}
	if err := cfg.Validate(); err != nil {
		problems = append(problems, f.place([]error{err}, overrides)...)
	}
	for i, cl := range cfg.Clients {
		key := fmt.Sprintf("clients[%d].address", i)
		if w := hostBits(cl.Address); w != "" {
			warnings = append(warnings, f.place([]error{errors.New(key + ": " + w)}, overrides)...)
		}
	}
	sortProblems(problems)
	if err := problemsErr(problems); err != nil {
		return nil, warnings, err
	}
	return &cfg, warnings, nil
}

// hostBits warns of a CIDR with host bits set: 10.1.2.3/8 means 10.0.0.0/8, the whole
// range, which is rarely what was meant.
func hostBits(address string) string {
	if !strings.Contains(address, "/") {
		return ""
	}
	p, err := netip.ParsePrefix(address)
	if err != nil || p.Masked() == p {
		return ""
	}
	return fmt.Sprintf("%s has host bits set: it means %s, the whole range (write %s, or %s for the one address)",
		address, p.Masked(), p.Masked(), p.Addr())
}

// notConfigEnv are POLICING_* variables that are not configuration keys: the file's path
// and policingctl's admin address and token.
var notConfigEnv = map[string]bool{"POLICING_CONFIG": true, "POLICING_ADMIN": true, "POLICING_ADMIN_TOKEN": true, "POLICING_ADMIN_TOKEN_FILE": true}

// unknownEnv warns of POLICING_* variables that set nothing (a misspelled key, or a list
// key, which only the file and --set can change), with the nearest variable that does.
func unknownEnv(environ []string) []Problem {
	known := map[string]bool{}
	var names []string
	for _, kv := range EnvNames() {
		known[kv[0]] = true
		names = append(names, kv[0])
	}
	var out []Problem
	for _, e := range environ {
		k, _, _ := strings.Cut(e, "=")
		if !strings.HasPrefix(k, "POLICING_") || known[k] || notConfigEnv[k] {
			continue
		}
		msg := "unknown variable: it sets no key and is ignored"
		if s := nearest(k, names); s != "" {
			msg += "; did you mean " + s + "?"
		}
		out = append(out, Problem{Source: "environment", Key: k, Msg: msg})
	}
	return out
}

func envName(path string) string {
	return "POLICING_" + strings.ToUpper(strings.ReplaceAll(path, ".", "_"))
}

// describeJSONError turns decoder errors into messages that name the key.
func describeJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Type == reflect.TypeFor[Duration]() {
			return fmt.Sprintf("%s: %s is not a duration (\"5s\", \"10m\" or seconds)", te.Field, te.Value)
		}
		return fmt.Sprintf("%s: cannot use %s as %s", te.Field, te.Value, te.Type)
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return strings.Trim(f, `"`) + ": unknown key"
	}
	return msg
}

// unknownKeys walks the document against the configuration type and names the first key
// the type does not have by its full path (clients[0].adress), since a bare name such as
// "timeout" exists in several sections.
func unknownKeys(node any, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch n := node.(type) {
	case map[string]any:
		if t.Kind() == reflect.Map {
			for k, v := range n {
				if err := unknownKeys(v, t.Elem(), joinKey(path, k)); err != nil {
					return err
				}
			}
			return nil
		}
		if t.Kind() != reflect.Struct || t == reflect.TypeOf(Duration(0)) {
			return nil // a type mismatch, reported by the decoder with its key
		}
		fields := map[string]reflect.Type{}
		for i := 0; i < t.NumField(); i++ {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			if name != "" && name != "-" {
				fields[name] = t.Field(i).Type
			}
		}
		keys := make([]string, 0, len(n))
		for k := range n {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ft, ok := fields[k]
			if why, gone := removedKeys[joinKey(path, k)]; !ok && gone {
				return fmt.Errorf("%s: this key was removed: %s", joinKey(path, k), why)
			}
			if !ok {
				msg := "unknown key"
				names := make([]string, 0, len(fields))
				for name := range fields {
					names = append(names, name)
				}
				sort.Strings(names)
				if s := nearest(k, names); s != "" {
					msg += "; did you mean " + s + "?"
				}
				return fmt.Errorf("%s: %s", joinKey(path, k), msg)
			}
			if err := unknownKeys(n[k], ft, joinKey(path, k)); err != nil {
				return err
			}
		}
	case []any:
		if t.Kind() == reflect.Slice {
			for i, v := range n {
				if err := unknownKeys(v, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// removedKeys are keys older configurations may still set, with what replaced them: a
// clearer error than "unknown key".
var removedKeys = map[string]string{
	"radius.radsec.reloadInterval": "the RadSec certificates reload with the other mounted files, every reload.interval and on SIGHUP (docs/hot-reload.md); delete the key",
}

func joinKey(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// setPath sets a dotted path (radius.authAddress, clients.0.name) in a YAML document,
// parsing the value as YAML so numbers and booleans keep their type.
func setPath(doc map[string]any, path, value string) error {
	var v any
	if err := yaml.Unmarshal([]byte(value), &v); err != nil {
		v = value
	}
	parts := strings.Split(path, ".")
	var cur any = doc
	for i, p := range parts {
		last := i == len(parts)-1
		switch node := cur.(type) {
		case map[string]any:
			if last {
				node[p] = v
				return nil
			}
			next, ok := node[p]
			if !ok || next == nil {
				if isIndex(parts[i+1]) {
					return fmt.Errorf("override %s: %s has no item %s (overrides change list items the file has)", path, strings.Join(parts[:i+1], "."), parts[i+1])
				}
				next = map[string]any{}
				node[p] = next
			}
			cur = next
		case []any:
			var idx int
			if _, err := fmt.Sscanf(p, "%d", &idx); err != nil || idx < 0 || idx >= len(node) {
				return fmt.Errorf("override %s: %q is not an index of %s", path, p, strings.Join(parts[:i], "."))
			}
			if last {
				node[idx] = v
				return nil
			}
			cur = node[idx]
		default:
			return fmt.Errorf("override %s: %s is not a map", path, strings.Join(parts[:i], "."))
		}
	}
	return nil
}

func isIndex(s string) bool {
	var n int
	_, err := fmt.Sscanf(s, "%d", &n)
	return err == nil
}

// envOverrides maps POLICING_RADIUS_AUTHADDRESS=... to radius.authAddress for every scalar key.
func envOverrides(environ []string) [][2]string {
	byEnv := map[string]string{}
	for _, kv := range EnvNames() {
		byEnv[kv[0]] = kv[1]
	}
	var out [][2]string
	for _, e := range environ {
		k, v, _ := strings.Cut(e, "=")
		if p, ok := byEnv[k]; ok {
			out = append(out, [2]string{p, v})
		}
	}
	return out
}

// scalarPaths lists the dotted JSON paths of every scalar key below t (lists excluded).
func scalarPaths(t reflect.Type, prefix string) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		p := prefix + name
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case ft.Kind() == reflect.Struct:
			out = append(out, scalarPaths(ft, p+".")...)
		case ft.Kind() == reflect.Slice || ft.Kind() == reflect.Map:
		default:
			out = append(out, p)
		}
	}
	return out
}

// EnvNames lists every POLICING_* variable with the key it sets: the one naming rule that
// envOverrides applies and the docs test checks.
func EnvNames() [][2]string {
	var out [][2]string
	for _, p := range scalarPaths(reflect.TypeOf(Config{}), "") {
		out = append(out, [2]string{envName(p), p})
	}
	return out
}

// keyed returns the function a section's validate reports a problem with: appended to errs,
// its key below the section's ("proxy" and "timeout": proxy.timeout).
func keyed(section string, errs *[]error) func(k, format string, a ...any) {
	return func(k, format string, a ...any) {
		*errs = append(*errs, fmt.Errorf("%s.%s: %s", section, k, fmt.Sprintf(format, a...)))
	}
}

// positive reports k unless v is above zero (a timeout, an interval, a size).
func positive[T ~int | ~int64](bad func(k, format string, a ...any), k string, v T) {
	if v <= 0 {
		bad(k, "must be positive")
	}
}

// notNegative reports k if v is below zero; zero means what zero says ("0: no limit"), if
// anything.
func notNegative[T ~int | ~int64 | ~float64](bad func(k, format string, a ...any), k string, v T, zero string) {
	switch {
	case v >= 0:
	case zero == "":
		bad(k, "must not be negative")
	default:
		bad(k, "must not be negative (%s)", zero)
	}
}

// Validate checks every key and returns all problems at once, each naming its key.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, a...)))
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		bad("log.level", "%q is not one of debug, info, warn, error", c.Log.Level)
	}
	switch c.Log.Format {
	case "json", "text":
	default:
		bad("log.format", "%q is not one of json, text", c.Log.Format)
	}
	checkAddr := func(key, v string, optional bool) {
		if v == "" && optional {
			return
		}
		if _, _, err := net.SplitHostPort(v); err != nil {
			bad(key, "%q is not host:port", v)
		}
	}
	checkAddrs := func(key, v string) {
		list := Addresses(v)
		seen := map[string]bool{}
		for i, a := range list {
			_, _, err := net.SplitHostPort(a)
			switch {
			case err != nil && len(list) == 1:
				bad(key, "%q is not host:port", a)
			case err != nil:
				bad(key, "%q (address %d of %d) is not host:port", a, i+1, len(list))
			case seen[a]:
				bad(key, "%q is listed twice", a)
			}
			seen[a] = true
		}
	}
	checkAddrs("radius.authAddress", c.Radius.AuthAddress)
	checkAddrs("radius.acctAddress", c.Radius.AcctAddress)
	if c.Radius.AuthAddress == "" && c.Radius.AcctAddress == "" {
		bad("radius", "authAddress and acctAddress are both empty: nothing to serve")
	}
	switch c.Radius.Dispatch {
	case "inline":
		if c.Policy.Lua.File != "" {
			// No decision on a reader's stack unless it is known to be cheap (issue 35).
			bad("radius.dispatch", "inline serves each request on the reader that read it, and a Lua policy (policy.lua.file) decision may run for its whole budget: use auto or workers")
		}
	case "auto", "workers":
	default:
		bad("radius.dispatch", "must be auto, inline or workers, got %q", c.Radius.Dispatch)
	}
	if c.Radius.Workers < 1 {
		bad("radius.workers", "must be at least 1, got %d", c.Radius.Workers)
	}
	if c.Radius.QueueSize < 1 {
		bad("radius.queueSize", "must be at least 1, got %d", c.Radius.QueueSize)
	}
	notNegative(bad, "radius.readers", c.Radius.Readers, "0: one per CPU")
	positive(bad, "radius.maxQueueWait", c.Radius.MaxQueueWait)
	notNegative(bad, "radius.duplicateWindow", c.Radius.DuplicateWindow, "0 disables duplicate detection")
	for i, d := range c.Radius.Dictionaries {
		if strings.TrimSpace(d) == "" {
			bad(fmt.Sprintf("radius.dictionaries[%d]", i), "empty path")
		}
	}
	checkAddr("admin.address", c.Admin.Address, true)
	errs = append(errs, c.Radius.RadSec.validate("radius.radsec")...)
	errs = append(errs, c.Proxy.validate("proxy")...)
	errs = append(errs, c.CoA.validate("coa")...)
	errs = append(errs, c.Diameter.validate("diameter")...)
	if c.Diameter.Enabled && c.Diameter.Dispatch == "inline" && c.Policy.Lua.File != "" {
		bad("diameter.dispatch", "inline serves each request on its connection's reader, and a Lua policy (policy.lua.file) hook may run for its whole budget: use auto or workers")
	}
	errs = append(errs, c.EAP.validate("eap")...)
	errs = append(errs, c.Policy.Lua.validate("policy.lua")...)
	if len(c.Clients) == 0 && c.ClientsFile == "" {
		bad("clients", "no NAS clients configured (set clients or clientsFile)")
	}
	for i, cl := range c.Clients {
		errs = append(errs, cl.validate(fmt.Sprintf("clients[%d]", i))...)
	}
	errs = append(errs, duplicateClientNames(c.Clients, func(i int) string { return fmt.Sprintf("clients[%d]", i) })...)
	switch c.Subscribers.Source {
	case "file":
		if c.Subscribers.File == "" {
			bad("subscribers.file", "required when subscribers.source is file")
		}
	case "ldap":
		errs = append(errs, c.Subscribers.LDAP.validate("subscribers.ldap")...)
	default:
		bad("subscribers.source", "%q is not one of file, ldap", c.Subscribers.Source)
	}
	if caps, ok := storeCapabilities[c.Session.Store]; !ok {
		bad("session.store", "%q is not one of %s", c.Session.Store, strings.Join(StoreKinds(), ", "))
	} else if caps.Shared { // cassandra, hybrid
		errs = append(errs, c.Session.Cassandra.validate("session.cassandra")...)
	}
	notNegative(bad, "session.expiry.multiplier", c.Session.Expiry.Multiplier, "0 disables expiry")
	if c.Session.Expiry.Multiplier > 0 && c.Session.Expiry.InterimInterval <= 0 {
		bad("session.expiry.interimInterval", "must be positive when expiry is on")
	}
	if c.Session.Embedded.Shards < 1 || c.Session.Embedded.Shards&(c.Session.Embedded.Shards-1) != 0 {
		bad("session.embedded.shards", "must be a power of two, got %d", c.Session.Embedded.Shards)
	}
	notNegative(bad, "session.embedded.historySize", c.Session.Embedded.HistorySize, "")
	positive(bad, "session.embedded.sweepInterval", c.Session.Embedded.SweepInterval)
	errs = append(errs, c.Reload.validate("reload")...)
	errs = append(errs, c.storeFeatureErrors()...)
	return errors.Join(errs...)
}

func (cl Client) validate(key string) []error {
	var errs []error
	bad := keyed(key, &errs)
	if cl.Name == "" {
		bad("name", "required")
	}
	if _, err := ParseClientAddress(cl.Address); err != nil {
		bad("address", "%q is not an IP address or CIDR", cl.Address)
	}
	if cl.SecretFile == "" {
		bad("secretFile", "required")
	}
	if cl.CoAPort < 0 || cl.CoAPort > 65535 {
		bad("coaPort", "%d is not a port", cl.CoAPort)
	}
	return errs
}

// duplicateClientNames refuses two clients of one name: CoA finds a session's NAS by the
// client name recorded with the session, so the second client's sessions would get the first
// one's secret and CoA port (issue 33). key names entry i for the message.
func duplicateClientNames(cls []Client, key func(i int) string) []error {
	var errs []error
	first := map[string]int{}
	for i, cl := range cls {
		if cl.Name == "" {
			continue
		}
		if j, dup := first[cl.Name]; dup {
			errs = append(errs, fmt.Errorf("%s.name: %q is also the name of %s: client names must be unique (CoA finds a session's NAS by its client name)",
				key(i), cl.Name, key(j)))
			continue
		}
		first[cl.Name] = i
	}
	return errs
}

// ParseClientAddress accepts an IP ("192.0.2.1") or a CIDR ("192.0.2.0/24").
func ParseClientAddress(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return p.Masked(), err
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// RequiresMessageAuthenticator is the client's setting; unset means true (AllClients fills
// in radius.requireMessageAuthenticator first).
func (cl Client) RequiresMessageAuthenticator() bool {
	return cl.RequireMessageAuthenticator == nil || *cl.RequireMessageAuthenticator
}

// Addresses splits a listen address key (radius.authAddress, radius.acctAddress) into
// its addresses: one host:port, or several separated by commas; empty: none.
func Addresses(v string) []string {
	var out []string
	for _, a := range strings.Split(v, ",") {
		if a = strings.TrimSpace(a); a != "" || strings.TrimSpace(v) != "" {
			out = append(out, a)
		}
	}
	return out
}

// LimitsProxyState is the client's setting; unset means true (AllClients fills in
// radius.limitProxyState first).
func (cl Client) LimitsProxyState() bool {
	return cl.LimitProxyState == nil || *cl.LimitProxyState
}

// Duration is a time.Duration written as "5s", "10m" in YAML.
type Duration time.Duration

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// timeoutProblem is what is wrong with a timeout that is not positive or is past atMost, ""
// when neither: the bound keeps a typo (2h for 2s) from holding a connection, a stop or a
// push round that long.
func timeoutProblem(d Duration, atMost time.Duration) string {
	if d > 0 && d.D() <= atMost {
		return ""
	}
	return fmt.Sprintf("must be positive and at most %v, got %v", atMost, d.D())
}

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	// Errors are *json.UnmarshalTypeError so that the decoder adds the key's path to them.
	bad := &json.UnmarshalTypeError{Value: string(b), Type: reflect.TypeFor[Duration]()}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n float64
		if err2 := json.Unmarshal(b, &n); err2 != nil || math.Abs(n*float64(time.Second)) >= math.MaxInt64 {
			return bad
		}
		*d = Duration(n * float64(time.Second))
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return bad
	}
	*d = Duration(v)
	return nil
}

// DiameterInline tells whether each Diameter connection's reader serves the requests it read
// rather than hand them to the worker pool (diameter.dispatch). auto picks inline when
// nothing on a Gx request's path waits for I/O or may run long: the embedded or no-op store,
// subscribers from a file, no Lua policy. A reader serving a request holds up only its own
// connection's next requests: each peer's connection has its own reader.
func (c *Config) DiameterInline() bool {
	return dispatchInline(c.Diameter.Dispatch, c.nothingWaits())
}

// nothingWaits reports whether the store, the subscriber source and the policy answer
// without I/O or a long run: the embedded or no-op store, a file, no Lua policy.
func (c *Config) nothingWaits() bool {
	return c.Session.InProcess() && c.Subscribers.Source == "file" && c.Policy.Lua.File == ""
}

// dispatchInline is a dispatch setting's choice: inline or workers as set, auto as found.
func dispatchInline(setting string, auto bool) bool {
	switch setting {
	case "inline":
		return true
	case "workers":
		return false
	}
	return auto
}

// InlineDispatch tells whether the RADIUS readers serve requests themselves rather than
// hand them to the worker pool (radius.dispatch). auto picks inline when nothing on the
// request path waits for I/O: the embedded or no-op store, subscribers from a file, no
// accounting proxy (its queue fsyncs, its sync mode waits for the upstream), no EAP
// forwarding (a round waits for its owner node), no Lua policy (a decision may run for its
// whole budget: on a reader, it would stop that reader reading). A remote store
// or LDAP needs the pool, so that requests waiting on them do not hold up the others.
func (c *Config) InlineDispatch() bool {
	return dispatchInline(c.Radius.Dispatch, c.nothingWaits() && len(c.Proxy.Upstreams) == 0 && c.EAP.Forward.Address == "")
}
