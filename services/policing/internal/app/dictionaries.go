package app

import (
	"fmt"

	"github.com/openaaa/openaaa/services/policing/internal/dict"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// loadDictionaries reads the built-in dictionary and radius.dictionaries (docs/dictionaries.md).
func (p *policyPart) loadDictionaries() (*dict.Dict, error) {
	c, log := p.d.cfg, p.d.log
	d, err := dict.Load(c.Radius.Dictionaries)
	if err != nil {
		return nil, fmt.Errorf("radius.dictionaries: %w", err)
	}
	if len(c.Radius.Dictionaries) > 0 {
		st := d.Stats()
		log.Info("dictionaries loaded", "files", len(st.Files), "attributes", st.Attributes, "skippedLines", st.SkippedTotal())
		for _, r := range st.Reasons() {
			log.Debug("dictionary lines skipped", "reason", r, "lines", st.Skipped[r], "example", st.Examples[r])
		}
	}
	return d, nil
}

// watchDictionaries reloads radius.dictionaries (every file read, includes too) when one
// changes or on SIGHUP.
func (p *policyPart) watchDictionaries(src subscriber.Source) {
	if len(p.d.cfg.Radius.Dictionaries) == 0 {
		return
	}
	f, _ := src.(*subscriber.File)
	p.d.reloader.WatchFunc("dictionaries", func() []string { return p.dict.Stats().Files }, func() error {
		return p.swapDictionaries(f)
	})
}

// swapDictionaries reads radius.dictionaries again and puts them in force, or changes
// nothing. The new dictionary must know policy.rateLimitAttribute and encode every profile of
// the subscriber file (f, nil for LDAP), which is re-read with it: a file and a dictionary
// changed together (a new attribute and its first use) are taken together.
func (p *policyPart) swapDictionaries(f *subscriber.File) error {
	d, err := p.loadDictionaries()
	if err != nil {
		return err
	}
	next := *p.builtin
	next.Dict = d
	if err := next.CheckRateLimitAttribute(); err != nil {
		return err
	}
	var db map[string]*subscriber.Subscriber
	if f != nil {
		if db, err = f.Read(next.CheckProfile); err != nil {
			return fmt.Errorf("radius.dictionaries: the subscriber file does not fit them: %w", err)
		}
	}
	p.dict.Set(d)
	if f != nil {
		f.Store(db)
	}
	p.d.m.dict.Export(d.Stats())
	return nil
}
