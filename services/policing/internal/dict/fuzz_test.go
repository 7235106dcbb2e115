package dict

import (
	"testing"
)

// FuzzParse reads arbitrary dictionary text: nothing may panic, and every attribute that
// loads either encodes a value or refuses it with an error (never a panic either).
func FuzzParse(f *testing.F) {
	for _, text := range tree {
		f.Add(text)
	}
	f.Add(builtin)
	f.Add("VENDOR\tX\t1\tformat=4,0\nBEGIN-VENDOR\tX\nATTRIBUTE\tX-A\t4294967295\tinteger\nEND-VENDOR\tX\n")
	f.Add("ATTRIBUTE\tE\t241\textended\nATTRIBUTE\tE-1\t241.300\tstring\nATTRIBUTE\tT\t1.2.3.4.5\tipaddr\n")
	f.Add("BEGIN-VENDOR\tNope\nEND-VENDOR\tNope\nEND-VENDOR\tNope\nBEGIN-TLV\tx\n")
	f.Fuzz(func(t *testing.T, text string) {
		d, err := Parse(text)
		if err != nil {
			return
		}
		for _, n := range d.Names() {
			a, _ := d.Lookup(n)
			for _, v := range []string{"1", "x", "0x01", "192.0.2.1", "2001:db8::/32", ""} {
				_, _ = a.Encode(v)
			}
		}
	})
}
