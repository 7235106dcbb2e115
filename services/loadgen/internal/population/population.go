// Package population is the set of simulated subscribers: generated from a pattern
// (user%05d / pass%05d) or read from a file, and written out as the policing subscriber file
// and the FreeRADIUS `users` file so that both servers know the same subscribers.
package population

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

// User is one simulated subscriber.
type User struct {
	Name     string
	Password string
	// FramedIP is the address the server assigns (0.0.0.0: none); accounting-only runs use it.
	FramedIP [4]byte
}

// Population is an ordered list of users; sessions take them in turn, skipping a user who
// is in a session (a subscriber line has one session at a time).
type Population struct {
	Users []User
	// Profile values written to the server files.
	SessionTimeout      uint32
	AcctInterimInterval uint32
	// Gx, when set, adds subscribers for `aaa-loadgen gx` to the policing file.
	Gx *GxSubscribers
}

// GxSubscribers are Count subscribers named by IMSI (IMSIBase, IMSIBase+1, … with 15 digits),
// whose profile "gx" carries a data policy: rule "internet", QCI 9, usage monitoring on
// MonitoringKey with a quota no run exhausts (QuotaOctets), granted GrantOctets at a time.
type GxSubscribers struct {
	Count                    int
	IMSIBase                 uint64
	MonitoringKey            string
	QuotaOctets, GrantOctets uint64
}

// Pattern makes n users from printf patterns with a 1-based index (user%05d, pass%05d);
// user i gets the i-th address after firstIP ("" or "none": no address).
func Pattern(n int, userPat, passPat, firstIP string) (*Population, error) {
	if n < 1 {
		return nil, errors.New("population: need at least one user")
	}
	if n > 10_000_000 {
		return nil, errors.New("population: at most 10,000,000 users")
	}
	var base uint32
	if firstIP != "" && firstIP != "none" {
		a, err := netip.ParseAddr(firstIP)
		if err != nil || !a.Is4() {
			return nil, fmt.Errorf("population: first framed IP %q is not an IPv4 address", firstIP)
		}
		b := a.As4()
		base = binary.BigEndian.Uint32(b[:])
	}
	p := &Population{Users: make([]User, n), SessionTimeout: 3600, AcctInterimInterval: 300}
	for i := range p.Users {
		u := &p.Users[i]
		u.Name = fmt.Sprintf(userPat, i+1)
		u.Password = fmt.Sprintf(passPat, i+1)
		if base != 0 {
			binary.BigEndian.PutUint32(u.FramedIP[:], base+uint32(i))
		}
	}
	return p, nil
}

// subscriberFile is the policing subscriber file (services/policing/internal/subscriber).
type subscriberFile struct {
	Profiles    map[string]profile `json:"profiles"`
	Subscribers []subscriber       `json:"subscribers"`
}

type profile struct {
	FramedIPAddress     string `json:"framedIPAddress,omitempty"`
	SessionTimeout      uint32 `json:"sessionTimeout,omitempty"`
	AcctInterimInterval uint32 `json:"acctInterimInterval,omitempty"`
}

type subscriber struct {
	Username    string  `json:"username"`
	Password    string  `json:"password"`
	ProfileName string  `json:"profileName,omitempty"`
	Profile     profile `json:"profile,omitzero"`
}

// Load reads users from a file: a policing subscriber file (.yaml, .yml, .json) or lines of
// "username password [framed-ip]" (# comments and blank lines ignored).
func Load(path string) (*Population, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("population: %w", err)
	}
	p := &Population{SessionTimeout: 3600, AcctInterimInterval: 300}
	if strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml") || strings.HasSuffix(path, ".json") {
		var f subscriberFile
		if err := yaml.Unmarshal(raw, &f); err != nil {
			return nil, fmt.Errorf("population %s: %w", path, err)
		}
		for _, s := range f.Subscribers {
			u := User{Name: s.Username, Password: s.Password}
			ip := s.Profile.FramedIPAddress
			if ip == "" {
				ip = f.Profiles[s.ProfileName].FramedIPAddress
			}
			if ip != "" {
				if u.FramedIP, err = parseIPv4(ip); err != nil {
					return nil, fmt.Errorf("population %s: user %s: %w", path, s.Username, err)
				}
			}
			p.Users = append(p.Users, u)
		}
	} else {
		sc := bufio.NewScanner(bytes.NewReader(raw))
		line := 0
		for sc.Scan() {
			line++
			t := strings.TrimSpace(sc.Text())
			if t == "" || strings.HasPrefix(t, "#") {
				continue
			}
			f := strings.Fields(t)
			if len(f) < 2 || len(f) > 3 {
				return nil, fmt.Errorf("population %s:%d: want \"username password [framed-ip]\"", path, line)
			}
			u := User{Name: f[0], Password: f[1]}
			if len(f) == 3 {
				if u.FramedIP, err = parseIPv4(f[2]); err != nil {
					return nil, fmt.Errorf("population %s:%d: %w", path, line, err)
				}
			}
			p.Users = append(p.Users, u)
		}
	}
	if len(p.Users) == 0 {
		return nil, fmt.Errorf("population %s: no users", path)
	}
	return p, nil
}

func parseIPv4(s string) ([4]byte, error) {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		return [4]byte{}, fmt.Errorf("%q is not an IPv4 address", s)
	}
	return a.As4(), nil
}

func ipString(ip [4]byte) string {
	if ip == [4]byte{} {
		return ""
	}
	return netip.AddrFrom4(ip).String()
}

// WritePolicing writes the policing subscriber file: one profile "default" with the session
// timeout and interim interval, and per user its password and Framed-IP-Address.
func (p *Population) WritePolicing(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# Generated by aaa-loadgen subscribers: %d users.\n", len(p.Users))
	fmt.Fprintf(bw, "profiles:\n  default: {sessionTimeout: %d, acctInterimInterval: %d}\n", p.SessionTimeout, p.AcctInterimInterval)
	if g := p.Gx; g != nil {
		fmt.Fprintf(bw, "  gx:\n    dataPolicy: {rules: [internet], qci: 9, arpPriority: 8, ambrUplink: 50000000, ambrDownlink: 100000000, "+
			"monitoringKey: %s, quotaOctets: %d, grantOctets: %d, revalidationSeconds: 3600}\n", yamlString(g.MonitoringKey), g.QuotaOctets, g.GrantOctets)
	}
	bw.WriteString("subscribers:\n")
	for _, u := range p.Users {
		fmt.Fprintf(bw, "  - {username: %s, password: %s, profileName: default", yamlString(u.Name), yamlString(u.Password))
		if ip := ipString(u.FramedIP); ip != "" {
			fmt.Fprintf(bw, ", profile: {framedIPAddress: %s}", ip)
		}
		bw.WriteString("}\n")
	}
	if g := p.Gx; g != nil {
		// The Gx subscribers authenticate with Diameter only: their password is never used.
		for i := range uint64(g.Count) {
			fmt.Fprintf(bw, "  - {username: \"%015d\", password: \"gx-only\", profileName: gx}\n", g.IMSIBase+i)
		}
	}
	return bw.Flush()
}

// yamlString quotes a string for YAML flow style (JSON strings are valid YAML).
func yamlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// WriteFreeRADIUS writes a FreeRADIUS `users` file (rlm_files) with the same subscribers:
// Cleartext-Password for PAP and CHAP, and the same reply attributes policing sends.
func (p *Population) WriteFreeRADIUS(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# Generated by aaa-loadgen subscribers: %d users.\n", len(p.Users))
	for _, u := range p.Users {
		fmt.Fprintf(bw, "%s Cleartext-Password := %s\n", u.Name, frString(u.Password))
		if ip := ipString(u.FramedIP); ip != "" {
			fmt.Fprintf(bw, "\tFramed-IP-Address = %s,\n", ip)
		}
		fmt.Fprintf(bw, "\tSession-Timeout = %d,\n\tAcct-Interim-Interval = %d\n\n", p.SessionTimeout, p.AcctInterimInterval)
	}
	return bw.Flush()
}

func frString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// WriteFile writes with fn to path: atomically (temporary file, then rename) when path is a
// regular file or does not exist yet; anything else — /dev/stdout, a pipe, a symbolic link —
// is written through, since a rename would replace it with a regular file.
func WriteFile(path string, fn func(io.Writer) error) error {
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
		if err != nil {
			return err
		}
		if err := fn(f); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}
