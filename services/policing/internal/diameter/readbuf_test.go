package diameter

import (
	"bytes"
	"strings"
	"testing"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"
)

// TestReadBufferNotRetained: the connection's reader reuses one buffer for every frame
// (readFrameInto), so a lean head (decodeHead) must own its bytes: a request still being
// served keeps its frame, AVPs and Session-Id when the next frames are read over it, whether
// its frame fits the head's inline array or not.
func TestReadBufferNotRetained(t *testing.T) {
	for _, pad := range []int{0, leanInline} { // inline, and larger than the inline array
		first := rawRequest(1, append([][]byte{sessionIDAVP("pcef.test;1;" + strings.Repeat("a", pad))}, originAVPs()...)...)
		second := rawRequest(2, append([][]byte{sessionIDAVP("pcef.test;2;" + strings.Repeat("b", pad))}, originAVPs()...)...)
		want := bytes.Clone(first)
		buf := make([]byte, 0, 4096)
		frame, err := readFrameInto(bytes.NewReader(first), buf)
		if err != nil {
			t.Fatal(err)
		}
		if &frame[0] != &buf[:1][0] {
			t.Fatal("readFrameInto did not read into the buffer it was given")
		}
		head := decodeHead(frame, nil, nil)
		if head == nil {
			t.Fatal("not a lean request")
		}
		if _, err := readFrameInto(bytes.NewReader(second), buf); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(head.frame, want) {
			t.Fatalf("pad %d: the head's frame changed when the next one was read", pad)
		}
		if got := head.m.AVP[0].Data.(datatype.UTF8String); string(got) != "pcef.test;1;"+strings.Repeat("a", pad) {
			t.Fatalf("pad %d: Session-Id %q", pad, got)
		}
		var a RawAVP
		l := head.avps
		if !l.Next(&a) || a.Code != avp.SessionID || !bytes.Equal(a.Data, want[diam.HeaderLength+8:diam.HeaderLength+8+len(a.Data)]) {
			t.Fatalf("pad %d: the head's AVPs changed when the next frame was read", pad)
		}
	}
}
