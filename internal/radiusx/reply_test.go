package radiusx

import (
	"errors"
	"testing"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
)

func TestParseReply(t *testing.T) {
	req := encodeRequest(t, radius.CodeAccessRequest, true, testSecret)
	id, reqAuth := req[1], req[4:20]
	codes := []radius.Code{radius.CodeAccessAccept, radius.CodeAccessReject}
	good := signReply(t, req, radius.CodeAccessAccept, true, testSecret)

	p, err := ParseReply(append(good, 0, 0), id, reqAuth, testSecret, true, codes...) // padding ignored
	if err != nil || p.Code != radius.CodeAccessAccept || rfc2865.ReplyMessage_GetString(p) != "hello" {
		t.Fatalf("the answer: %v, %v", p, err)
	}
	otherID := append([]byte(nil), good...)
	otherID[1]++
	for _, c := range []struct {
		name      string
		b         []byte
		id        byte
		secret    []byte
		requireMA bool
		codes     []radius.Code
		want      error
	}{
		{"short", good[:HeaderLen-1], id, testSecret, true, codes, ErrMalformed},
		{"another Identifier", good, id + 1, testSecret, true, codes, ErrUnexpected},
		{"a Code the request cannot get", good, id, testSecret, true, []radius.Code{radius.CodeAccessChallenge}, ErrUnexpected},
		{"another secret", good, id, []byte("not-the-secret"), true, codes, ErrBadAuthenticator},
		{"tampered after signing", otherID, otherID[1], testSecret, true, codes, ErrBadAuthenticator},
		{"no Message-Authenticator where required", signReply(t, req, radius.CodeAccessReject, false, testSecret), id, testSecret, true, codes, ErrBadMessageAuth},
	} {
		t.Run(c.name, func(t *testing.T) {
			if p, err := ParseReply(c.b, c.id, reqAuth, c.secret, c.requireMA, c.codes...); !errors.Is(err, c.want) || p != nil {
				t.Fatalf("ParseReply: %v, %v; want %v", p, err, c.want)
			}
		})
	}
	if _, err := ParseReply(signReply(t, req, radius.CodeAccessReject, false, testSecret), id, reqAuth, testSecret, false, codes...); err != nil {
		t.Fatalf("no Message-Authenticator where optional: %v", err)
	}
}
