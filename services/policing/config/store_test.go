package config

import (
	"strings"
	"testing"
)

// A feature the store cannot serve is refused by check-config, naming the key and the stores
// that serve it; it used to pass and fail at start.
func TestFeaturesTheStoreCannotServe(t *testing.T) {
	cases := []struct {
		sets []string
		want string // "" when accepted
	}{
		{[]string{"session.store=none", `eap.methods=["aka"]`},
			`eap.methods: needs a session store that keeps EAP-AKA sequence numbers (cassandra, embedded, hybrid), not "none"`},
		{[]string{"session.store=none", `eap.methods=["md5"]`, "eap.forward.address=:1815", "eap.forward.secretFile=/s"},
			`eap.forward.address: needs a session store that keeps a node registry (cassandra, embedded, hybrid), not "none"`},
		{[]string{"session.store=embedded", `eap.methods=["aka","aka-prime"]`, "eap.forward.address=:1815", "eap.forward.secretFile=/s"}, ""},
		{[]string{"session.store=none", `eap.methods=["md5","sim"]`}, ""},
	}
	for _, c := range cases {
		_, err := load(t, minimal, c.sets, nil)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: refused: %v", c.sets, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v: error %v, want %s", c.sets, err, c.want)
		}
	}
}
