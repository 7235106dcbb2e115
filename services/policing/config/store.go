package config

import (
	"fmt"
	"slices"
	"strings"
)

// StoreCapabilities is what a kind of session store serves besides sessions. It is declared
// here, where check-config reads it, so that a feature the store cannot serve is refused before
// anything starts; each store's tests hold the store to what its kind declares
// (internal/store/capabilities_test.go).
type StoreCapabilities struct {
	// InProcess: the store lives in the process; its writes never wait for I/O, so they need
	// no timeout and no worker to wait in.
	InProcess bool
	// Shared: every node of every data center reads and writes the same sessions.
	Shared bool
	// NodeRegistry: nodes find each other (a RAR relayed to the node holding the PCEF's
	// connection, an EAP round forwarded to the node holding its conversation).
	NodeRegistry bool
	// SQN: EAP-AKA sequence numbers (TS 33.102 §6.3).
	SQN bool
	// Ephemeral: EAP conversations kept between rounds.
	Ephemeral bool
	// AuthLog: a log of authentications.
	AuthLog bool
	// WideGet: a read from a majority of every data center's replicas.
	WideGet bool
}

var storeCapabilities = map[string]StoreCapabilities{
	"embedded":  {InProcess: true, NodeRegistry: true, SQN: true, Ephemeral: true},
	"none":      {InProcess: true},
	"cassandra": {Shared: true, NodeRegistry: true, SQN: true, Ephemeral: true, AuthLog: true, WideGet: true},
	"hybrid":    {Shared: true, NodeRegistry: true, SQN: true, Ephemeral: true, AuthLog: true, WideGet: true},
}

// Capabilities is what the configured store serves (nothing for an unknown store, which
// Validate refuses).
func (s SessionStore) Capabilities() StoreCapabilities { return storeCapabilities[s.Store] }

// InProcess tells whether the store lives in the process (embedded, none).
func (s SessionStore) InProcess() bool { return s.Capabilities().InProcess }

// storesWith lists the stores that have a capability, for error messages.
func storesWith(has func(StoreCapabilities) bool) string {
	var names []string
	for name, c := range storeCapabilities {
		if has(c) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// storeFeatureErrors refuses the features configured that the store cannot serve.
func (c *Config) storeFeatureErrors() []error {
	caps, ok := storeCapabilities[c.Session.Store]
	if !ok {
		return nil // session.store is refused by itself
	}
	var errs []error
	need := func(key, what string, has func(StoreCapabilities) bool) {
		if !has(caps) {
			errs = append(errs, fmt.Errorf("%s: needs a session store that %s (%s), not %q", key, what, storesWith(has), c.Session.Store))
		}
	}
	if len(c.EAP.Methods) > 0 && c.EAP.UsesAKA() {
		need("eap.methods", "keeps EAP-AKA sequence numbers", func(s StoreCapabilities) bool { return s.SQN })
	}
	if c.EAP.Forward.Address != "" {
		need("eap.forward.address", "keeps a node registry", func(s StoreCapabilities) bool { return s.NodeRegistry })
	}
	return errs
}

// StoreKinds are the values of session.store, sorted.
func StoreKinds() []string {
	kinds := make([]string, 0, len(storeCapabilities))
	for k := range storeCapabilities {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	return kinds
}
