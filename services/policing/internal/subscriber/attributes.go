package subscriber

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// ReplyAttributes are a profile's extra reply attributes by dictionary name. An attribute
// may have several values (Cisco-AVPair, ERX-Service-Activate), sent as repeated
// attributes in their order.
type ReplyAttributes map[string]Values

// Values are the values of one reply attribute, in the order they are sent.
type Values []string

// UnmarshalJSON accepts, for each attribute, one value (a string or a number) or a
// non-empty list of them; errors name the attribute.
func (r *ReplyAttributes) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("replyAttributes: want a mapping of attribute names to values")
	}
	if raw == nil {
		*r = nil
		return nil
	}
	out := make(ReplyAttributes, len(raw))
	names := make([]string, 0, len(raw))
	for n := range raw {
		names = append(names, n)
	}
	sort.Strings(names) // the first error is always the same one
	for _, n := range names {
		v, err := parseValues(raw[n])
		if err != nil {
			return fmt.Errorf("replyAttributes.%s: %w", n, err)
		}
		out[n] = v
	}
	*r = out
	return nil
}

func parseValues(b json.RawMessage) (Values, error) {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		var list []json.RawMessage
		if err := json.Unmarshal(b, &list); err != nil {
			return nil, fmt.Errorf("want a value or a list of values")
		}
		if len(list) == 0 {
			return nil, fmt.Errorf("an empty list: give at least one value or leave the attribute out")
		}
		out := make(Values, len(list))
		for i, e := range list {
			s, err := scalar(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = s
		}
		return out, nil
	}
	s, err := scalar(b)
	if err != nil {
		return nil, err
	}
	return Values{s}, nil
}

// scalar is a string, or a number as written (YAML `Framed-MTU: 1492`).
func scalar(b json.RawMessage) (string, error) {
	if string(b) == "null" {
		return "", fmt.Errorf("no value (null)")
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		return s, nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err == nil {
		return n.String(), nil
	}
	return "", fmt.Errorf("%s is not a string or a number", b)
}

// MarshalJSON writes a single value as a scalar, several as a list.
func (v Values) MarshalJSON() ([]byte, error) {
	if len(v) == 1 {
		return json.Marshal(v[0])
	}
	return json.Marshal([]string(v))
}

// First is the first value ("" when there is none).
func (v Values) First() string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}
