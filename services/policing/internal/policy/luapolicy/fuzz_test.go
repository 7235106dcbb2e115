package luapolicy

import (
	"context"
	"testing"

	lua "github.com/yuin/gopher-lua"
	"layeh.com/radius"

	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// FuzzScriptAPI feeds arbitrary request attributes (as a NAS could send them, VSAs
// included), attribute and field names, and values through the accessors, the memo hash
// and the decision API: a hook may fail, the process may not.
func FuzzScriptAPI(f *testing.F) {
	f.Add([]byte{31, 8, '0', '2', '-', '0', '0', '0'}, "Calling-Station-Id", "class", "Mikrotik-Rate-Limit", "10M/10M")
	f.Add([]byte{26, 12, 0, 0, 0x28, 0x3f, 1, 6, '0', '0', '1', '0'}, "3GPP-IMSI", "quotaOctets", "Session-Timeout", "600")
	f.Add([]byte{26, 7, 0, 0, 0x3a, 0x8c, 8}, "Mikrotik-Rate-Limit", "Framed-MTU", "Framed-IP-Address", "10.0.0.300")
	f.Add([]byte{97, 4, 0, 200}, "Framed-IPv6-Prefix", "", "Tunnel-Type", "VLAN")
	f.Add([]byte{64, 6, 0x1f, 0, 0, 13}, "Tunnel-Type", "-", "Class", "0xzz")
	o := options(writeScript(f, f.TempDir(), `
inputs = { accounting = { "req.Calling-Station-Id", "req.3GPP-IMSI", "req.Framed-IPv6-Prefix", "req.Tunnel-Type",
  "sub.class", "sub.Framed-MTU", "session.octetsGiB", "hour" } }
function authorize(req, sub)
  local v = req[arg_name]
  local s = sub[field_name]
  reply(reply_name, reply_value)
  if v ~= nil then reply("Reply-Message", tostring(v):sub(1, 200)) end
  if s ~= nil and type(s) == "string" then reply("Filter-Id", s:sub(1, 200)) end
end
function accounting(req, session, sub)
  coa(reply_name, reply_value)
end`))
	o.PoolSize = 1 // the globals set below are in the one state every call uses
	e, err := New(o)
	if err != nil {
		f.Fatal(err)
	}
	defer e.Close()
	f.Fuzz(func(t *testing.T, raw []byte, attr, field, replyName, replyValue string) {
		var attrs radius.Attributes
		for b := raw; len(b) >= 2; {
			l := int(b[1])
			if l < 2 || l > len(b) {
				break
			}
			attrs = append(attrs, &radius.AVP{Type: radius.Type(b[0]), Attribute: radius.Attribute(b[2:l])})
			b = b[l:]
		}
		req := &radius.Packet{Code: radius.CodeAccessRequest, Attributes: attrs}
		s := &subscriber.Subscriber{Username: "u", Profile: subscriber.Profile{Class: field, ReplyAttributes: subscriber.ReplyAttributes{attr: {replyValue}}}}
		p := e.prog.Load()
		st, err := p.get(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range map[string]string{"arg_name": attr, "field_name": field, "reply_name": replyName, "reply_value": replyValue} {
			st.L.SetGlobal(k, lua.LString(v))
		}
		p.put(st)
		d := e.Authorize(context.Background(), req, s)
		if d.Accept {
			if _, err := (&radius.Packet{Code: radius.CodeAccessAccept, Attributes: d.Reply, Secret: []byte("s")}).MarshalBinary(); err != nil {
				t.Fatalf("accepted with a reply that does not encode: %v", err)
			}
		}
		u := &session.Update{Kind: session.KindInterim}
		u.Session.Key = session.Key{NAS: attr, ID: field}
		e.Accounting(context.Background(), req, u, s)
	})
}
