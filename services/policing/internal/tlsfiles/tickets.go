package tlsfiles

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"os"
	"sync/atomic"
)

// MinTicketSecret is the shortest line a ticket key file takes (e.g. 32 random octets in
// base64: 43 characters).
const MinTicketSecret = 32

// TicketKeys are the TLS session ticket keys every node of a cluster shares (EAP session
// resumption, docs/eap.md): a file holds one secret a line, the first encrypts new tickets
// and every one decrypts (a rotation adds a key, makes it first later, then drops the old
// one). A key is the SHA-256 of its line, so any random text of MinTicketSecret characters
// or more will do (the operator's generated secrets are). Blank lines and lines starting
// with # are ignored.
type TicketKeys struct {
	keys atomic.Pointer[[][32]byte]
}

// NewRandomTicketKeys is one key of this process only: tickets resume on this node, until
// it restarts.
func NewRandomTicketKeys() *TicketKeys {
	var k [32]byte
	_, _ = rand.Read(k[:]) // never fails (crypto/rand)
	t := &TicketKeys{}
	t.keys.Store(&[][32]byte{k})
	return t
}

// Load reads file and puts its keys in force; on error the keys in force stay. The error
// names the file and a line number, never a key.
func (t *TicketKeys) Load(file string) (int, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	var keys [][32]byte
	for i, line := range bytes.Split(raw, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		if len(line) < MinTicketSecret {
			return 0, fmt.Errorf("%s line %d: a ticket key needs at least %d characters", file, i+1, MinTicketSecret)
		}
		keys = append(keys, sha256.Sum256(line))
	}
	if len(keys) == 0 {
		return 0, fmt.Errorf("%s: no ticket key", file)
	}
	t.keys.Store(&keys)
	return len(keys), nil
}

// Keys are the keys in force, the one that encrypts first (nil before a Load).
func (t *TicketKeys) Keys() [][32]byte {
	if k := t.keys.Load(); k != nil {
		return *k
	}
	return nil
}
