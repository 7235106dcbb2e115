package app

import (
	"fmt"

	"github.com/openaaa/openaaa/services/policing/internal/dict"
	"github.com/openaaa/openaaa/services/policing/internal/policy"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// loadDictionaries reads the built-in dictionary and radius.dictionaries (docs/dictionaries.md).
func (n *Node) loadDictionaries() (*dict.Dict, error) {
	d, err := dict.Load(n.Config.Radius.Dictionaries)
	if err != nil {
		return nil, fmt.Errorf("radius.dictionaries: %w", err)
	}
	if len(n.Config.Radius.Dictionaries) > 0 {
		st := d.Stats()
		n.Log.Info("dictionaries loaded", "files", len(st.Files), "attributes", st.Attributes, "skippedLines", st.SkippedTotal())
		for _, r := range st.Reasons() {
			n.Log.Debug("dictionary lines skipped", "reason", r, "lines", st.Skipped[r], "example", st.Examples[r])
		}
	}
	return d, nil
}

// watchDictionaries reloads radius.dictionaries (every file read, includes too) when one
// changes or on SIGHUP.
func (n *Node) watchDictionaries(pol *policy.Default, src subscriber.Source) {
	if len(n.Config.Radius.Dictionaries) == 0 {
		return
	}
	f, _ := src.(*subscriber.File)
	n.Reloader.WatchFunc("dictionaries", func() []string { return n.Dict.Stats().Files }, func() error {
		return n.swapDictionaries(pol, f)
	})
}

// swapDictionaries reads radius.dictionaries again and puts them in force, or changes
// nothing. The new dictionary must know policy.rateLimitAttribute and encode every profile of
// the subscriber file (f, nil for LDAP), which is re-read with it: a file and a dictionary
// changed together (a new attribute and its first use) are taken together.
func (n *Node) swapDictionaries(pol *policy.Default, f *subscriber.File) error {
	d, err := n.loadDictionaries()
	if err != nil {
		return err
	}
	next := *pol
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
	n.Dict.Set(d)
	if f != nil {
		f.Store(db)
	}
	dict.Export(d.Stats())
	return nil
}
