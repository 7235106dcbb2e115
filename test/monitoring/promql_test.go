package monitoring

import (
	"reflect"
	"strings"
	"testing"

	"github.com/openaaa/openaaa/internal/testenv"
)

func repoRoot(t testing.TB) string {
	t.Helper()
	return testenv.Root(t)
}

// grafanaVars replaces Grafana's interval variables with durations PromQL accepts.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h",
	"${__rate_interval}", "5m", "${__interval}", "1m", "${__range}", "1h")

// labelListWords are followed by a parenthesised label list, not by an expression.
var labelListWords = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true,
	"group_left": true, "group_right": true}

var keywords = map[string]bool{"bool": true, "and": true, "or": true, "unless": true, "offset": true,
	"atan2": true, "inf": true, "nan": true, "start": true, "end": true,
	// aggregation operators, which may be followed by a label list before their argument
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
	"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true,
	"limitk": true, "limit_ratio": true}

func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdent(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

// metricNames returns the metric names a PromQL expression selects: a small lexer that skips
// strings, label matchers, ranges, label lists, numbers, durations, functions and keywords.
func metricNames(expr string) []string {
	s := grafanaVars.Replace(expr)
	var names []string
	skipString := func(i int) int {
		q := s[i]
		for i++; i < len(s) && s[i] != q; i++ {
			if s[i] == '\\' && q != '`' {
				i++
			}
		}
		return i + 1
	}
	skipUntil := func(i int, closer byte) int {
		for i < len(s) && s[i] != closer {
			if s[i] == '"' || s[i] == '\'' || s[i] == '`' {
				i = skipString(i)
				continue
			}
			i++
		}
		return i + 1
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i = skipString(i)
		case c == '{':
			i = skipUntil(i+1, '}')
		case c == '[':
			i = skipUntil(i+1, ']')
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c >= '0' && c <= '9', c == '.':
			for i < len(s) && (isIdent(s[i]) || s[i] == '.') {
				i++
			}
		case isIdentStart(c):
			j := i
			for j < len(s) && isIdent(s[j]) {
				j++
			}
			word := s[i:j]
			k := j
			for k < len(s) && (s[k] == ' ' || s[k] == '\n' || s[k] == '\t') {
				k++
			}
			switch {
			case labelListWords[strings.ToLower(word)] && k < len(s) && s[k] == '(':
				j = skipUntil(k+1, ')')
			case k < len(s) && s[k] == '(':
				// a function or an aggregation: its arguments are lexed next
			case keywords[strings.ToLower(word)]:
			default:
				names = append(names, word)
			}
			i = j
		default:
			i++
		}
	}
	return names
}

func TestMetricNamesLexer(t *testing.T) {
	cases := map[string][]string{
		`sum by (aaa_openaaa_io_datacenter) (rate(openaaa_radius_requests_total{namespace=~"$namespace", kind="auth"}[$__rate_interval]))`: {"openaaa_radius_requests_total"},
		`histogram_quantile(0.99, sum by (le) (rate(a_bucket{x="{y}"}[5m])))`:                                                              {"a_bucket"},
		`max by (namespace, pod) (up) == 0 and on (namespace, pod) sum(increase(b_total[5m])) > 0`:                                         {"up", "b_total"},
		`sum(rate(x[5m] offset 1h)) / sum(y) by (z) > bool 1e3`:                                                                            {"x", "y"},
		`openaaa_spool_records > 0 and deriv(openaaa_spool_records[15m]) > 0`:                                                              {"openaaa_spool_records", "openaaa_spool_records"},
	}
	for expr, want := range cases {
		if got := metricNames(expr); !reflect.DeepEqual(got, want) {
			t.Errorf("metricNames(%s) = %v, want %v", expr, got, want)
		}
	}
}
