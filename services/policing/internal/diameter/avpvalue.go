package diameter

import (
	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/datatype"
)

// String is the text of a string-like AVP (DiameterIdentity, UTF8String, OctetString); ""
// for any other type.
func String(a *diam.AVP) string {
	switch v := a.Data.(type) {
	case datatype.DiameterIdentity:
		return string(v)
	case datatype.UTF8String:
		return string(v)
	case datatype.OctetString:
		return string(v)
	}
	return ""
}
