package subscriber

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"sigs.k8s.io/yaml"
)

// File is the embedded subscriber source: a YAML file of named profiles and subscribers,
// held in memory and swapped atomically on reload.
type File struct {
	path  string
	check func(*Profile) error
	db    atomic.Pointer[map[string]*Subscriber]
}

type fileDoc struct {
	Profiles    map[string]Profile `json:"profiles"`
	Subscribers []Subscriber       `json:"subscribers"`
}

// OpenFile loads the subscriber file.
func OpenFile(path string, check func(*Profile) error) (*File, error) {
	f := &File{path: path, check: check}
	if err := f.Reload(); err != nil {
		return nil, err
	}
	return f, nil
}

// Path is the file this source reads.
func (f *File) Path() string { return f.path }

// Len is the number of subscribers loaded.
func (f *File) Len() int { return len(*f.db.Load()) }

// Reload reads the file again; on any error the subscribers in force stay.
func (f *File) Reload() error {
	db, err := f.Read(f.check)
	if err != nil {
		return err
	}
	f.Store(db)
	return nil
}

// Read reads and checks the file with check (e.g. against a new dictionary) without
// changing the subscribers in force.
func (f *File) Read(check func(*Profile) error) (map[string]*Subscriber, error) {
	raw, err := os.ReadFile(f.path)
	if err != nil {
		return nil, fmt.Errorf("subscribers: %w", err)
	}
	db, err := ParseFile(raw, check)
	if err != nil {
		return nil, fmt.Errorf("subscribers %s: %w", f.path, err)
	}
	return db, nil
}

// Store puts subscribers from Read in force.
func (f *File) Store(db map[string]*Subscriber) { f.db.Store(&db) }

// ParseFile parses and validates a subscriber file: named profiles are resolved into each
// subscriber (fields set on the subscriber win), and check (if any) vets each profile.
func ParseFile(raw []byte, check func(*Profile) error) (map[string]*Subscriber, error) {
	doc, err := decodeFile(raw)
	if err != nil {
		return nil, err
	}
	db := make(map[string]*Subscriber, len(doc.Subscribers))
	var errs []error
	for i := range doc.Subscribers {
		s := doc.Subscribers[i]
		key := fmt.Sprintf("subscribers[%d]", i)
		if s.Username == "" {
			errs = append(errs, fmt.Errorf("%s.username: required", key))
			continue
		}
		if _, dup := db[s.Username]; dup {
			errs = append(errs, fmt.Errorf("%s.username: %q appears twice", key, s.Username))
			continue
		}
		if s.ProfileName != "" {
			base, ok := doc.Profiles[s.ProfileName]
			if !ok {
				errs = append(errs, fmt.Errorf("%s.profileName: no profile %q", key, s.ProfileName))
				continue
			}
			s.Profile = overlay(base, s.Profile)
		}
		if check != nil {
			if err := check(&s.Profile); err != nil {
				errs = append(errs, fmt.Errorf("%s (%s): %w", key, s.Username, err))
				continue
			}
		}
		if s.NTPassword != "" {
			if _, ok := NTHash(s.NTPassword); !ok {
				errs = append(errs, fmt.Errorf("%s.ntPassword: want 32 hex digits (the NT hash)", key))
				continue
			}
		}
		if err := s.checkAKA(); err != nil {
			errs = append(errs, fmt.Errorf("%s.%w", key, err))
			continue
		}
		if s.Password == "" && s.NTPassword == "" && s.Ki == "" && !s.Disabled {
			// An empty password would accept an empty PAP or CHAP password.
			errs = append(errs, fmt.Errorf("%s.password: required, or ntPassword, or ki (or set disabled: true)", key))
			continue
		}
		db[s.Username] = &s
	}
	return db, errors.Join(errs...)
}

// decodeFile decodes a subscriber file (YAML), refusing unknown keys.
func decodeFile(raw []byte) (fileDoc, error) {
	var doc fileDoc
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return doc, err
	}
	dec := json.NewDecoder(strings.NewReader(string(js)))
	dec.DisallowUnknownFields()
	return doc, dec.Decode(&doc)
}

// ParseProfiles parses a file of named profiles in the subscriber file's format (the LDAP
// source's profilesFile): profiles only, each vetted by check.
func ParseProfiles(raw []byte, check func(*Profile) error) (map[string]Profile, error) {
	doc, err := decodeFile(raw)
	if err != nil {
		return nil, err
	}
	if len(doc.Subscribers) > 0 {
		return nil, errors.New("subscribers: not read here (the subscribers are in LDAP): profiles only")
	}
	var errs []error
	for name, p := range doc.Profiles {
		if check != nil {
			if err := check(&p); err != nil {
				errs = append(errs, fmt.Errorf("profiles.%s: %w", name, err))
			}
		}
	}
	return doc.Profiles, errors.Join(errs...)
}

// overlay returns base with every field set in top replacing it.
func overlay(base, top Profile) Profile {
	out := base
	if top.FramedIPAddress != "" {
		out.FramedIPAddress = top.FramedIPAddress
	}
	if top.FramedPool != "" {
		out.FramedPool = top.FramedPool
	}
	for _, f := range []struct {
		dst *string
		v   string
	}{
		{&out.FramedIPv6Address, top.FramedIPv6Address}, {&out.FramedIPv6Prefix, top.FramedIPv6Prefix},
		{&out.DelegatedIPv6Prefix, top.DelegatedIPv6Prefix}, {&out.FramedIPv6Pool, top.FramedIPv6Pool},
		{&out.DelegatedIPv6PrefixPool, top.DelegatedIPv6PrefixPool},
	} {
		if f.v != "" {
			*f.dst = f.v
		}
	}
	if len(top.DNSServerIPv6Addresses) > 0 {
		out.DNSServerIPv6Addresses = top.DNSServerIPv6Addresses
	}
	if top.SessionTimeout != 0 {
		out.SessionTimeout = top.SessionTimeout
	}
	if top.IdleTimeout != 0 {
		out.IdleTimeout = top.IdleTimeout
	}
	if top.AcctInterimInterval != 0 {
		out.AcctInterimInterval = top.AcctInterimInterval
	}
	if top.Class != "" {
		out.Class = top.Class
	}
	if top.FilterID != "" {
		out.FilterID = top.FilterID
	}
	if top.RateLimit != "" {
		out.RateLimit = top.RateLimit
	}
	if top.QuotaOctets != 0 {
		out.QuotaOctets = top.QuotaOctets
	}
	if top.UsedOctets != 0 {
		out.UsedOctets = top.UsedOctets
	}
	if top.DataPolicy != nil {
		out.DataPolicy = top.DataPolicy
	}
	if len(top.ReplyAttributes) > 0 {
		m := make(ReplyAttributes, len(base.ReplyAttributes)+len(top.ReplyAttributes))
		for k, v := range base.ReplyAttributes {
			m[k] = v
		}
		for k, v := range top.ReplyAttributes {
			m[k] = v
		}
		out.ReplyAttributes = m
	}
	return out
}

// Lookup implements Source.
func (f *File) Lookup(_ context.Context, username string) (*Subscriber, error) {
	if s, ok := (*f.db.Load())[username]; ok {
		return s, nil
	}
	return nil, ErrNotFound
}
