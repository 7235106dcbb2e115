package admin

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
)

// MinTokenLength is the shortest bearer token accepted: a token must not be guessable.
const MinTokenLength = 16

// Token is the admin API's bearer token. It is replaced atomically (Set) when its mounted
// file changes, so that rotating the Secret takes effect without a restart; requests being
// checked keep the token they started with.
type Token struct {
	sum atomic.Pointer[[sha256.Size]byte]
}

// ReadTokenFile reads a token file: the first line, surrounding whitespace trimmed (a
// Secret written with `echo` ends in a newline). The error never contains the token.
func ReadTokenFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	line = bytes.TrimSpace(line)
	if len(line) < MinTokenLength {
		return nil, fmt.Errorf("%s: the token must be at least %d characters", path, MinTokenLength)
	}
	return line, nil
}

// Set replaces the token. Only its SHA-256 is kept: comparing fixed-size digests in constant
// time does not reveal the token's length or content through timing.
func (t *Token) Set(token []byte) {
	sum := sha256.Sum256(token)
	t.sum.Store(&sum)
}

// configured reports whether a token was set.
func (t *Token) configured() bool { return t != nil && t.sum.Load() != nil }

// allows reports whether r carries the token as "Authorization: Bearer <token>".
func (t *Token) allows(r *http.Request) bool {
	want := t.sum.Load()
	scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if want == nil || !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(got)))
	return subtle.ConstantTimeCompare(sum[:], want[:]) == 1
}

// errNoToken is what the API answers when the node has no token: it serves no state rather
// than serve it to anyone (secure by default; docs/security.md).
var errNoToken = errors.New("the admin API is disabled: no token configured (admin.tokenFile)")

// requireToken lets through only requests that carry the token. 401 (with the challenge of
// RFC 6750) when it is missing or wrong, 403 when the node has none; the body says nothing
// of the state behind.
func (s *Server) requireToken(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.Token.configured() {
			httpError(w, http.StatusForbidden, errNoToken.Error())
			return
		}
		if !s.Token.allows(r) {
			s.Metrics.unauthorized.Inc()
			w.Header().Set("WWW-Authenticate", `Bearer realm="policing admin"`)
			httpError(w, http.StatusUnauthorized, "a valid bearer token is required (Authorization: Bearer <token>)")
			return
		}
		h.ServeHTTP(w, r)
	})
}
