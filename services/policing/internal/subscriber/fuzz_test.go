package subscriber

import (
	"errors"
	"strings"
	"testing"
)

// FuzzSubscriberFile parses arbitrary subscriber files: nothing may panic, every loaded
// subscriber is keyed by its non-empty user name, and a profile the check hook refuses is
// never loaded.
func FuzzSubscriberFile(f *testing.F) {
	f.Add(sampleFile)
	f.Add("subscribers:\n- {username: a, password: x}\n- {username: a}\n")
	f.Add("profiles: {p: {replyAttributes: {A: b}}}\nsubscribers:\n- {username: u, profileName: p, profile: {replyAttributes: {C: d}}}\n")
	f.Add("profiles: {p: {replyAttributes: {A: [b, c], N: 1492, E: []}}}\nsubscribers:\n- {username: u, password: p, profileName: p}\n")
	f.Add("")
	f.Add("[1, 2]")
	f.Add("subscribers: {username: a}")
	refuse := errors.New("refused")
	check := func(p *Profile) error {
		if strings.Contains(p.Class, "refuse") {
			return refuse
		}
		return nil
	}
	f.Fuzz(func(t *testing.T, text string) {
		db, err := ParseFile([]byte(text), check)
		for name, s := range db {
			if name == "" || s.Username != name {
				t.Fatalf("subscriber %q stored under %q", s.Username, name)
			}
			if strings.Contains(s.Profile.Class, "refuse") {
				t.Fatalf("refused profile of %q loaded", name)
			}
		}
		if err != nil && err.Error() == "" {
			t.Fatal("empty error")
		}
	})
}
