package links

import (
	"golang.org/x/net/idna"

	"errors"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrMalformed is wrapped by every Normalize error for a URL that cannot be
// parsed into a scheme and a valid host. Test with errors.Is.
var ErrMalformed = errors.New("malformed URL")

// ErrUnsupportedScheme is wrapped by the Normalize error for a well-formed
// link whose scheme is not http or https (ftp:, file:, javascript:, …).
var ErrUnsupportedScheme = errors.New("unsupported scheme")

// DNS limits, RFC 1035 §2.3.4: labels of at most 63 octets and names of at
// most 255 octets on the wire, which is 253 characters in dotted text form
// without the trailing dot.
const (
	maxLabelLen = 63
	maxHostLen  = 253
)

// urlError is the error Normalize returns. Its text never contains the URL,
// so it can be logged and shown (user input stays out of error texts); why is the
// user-facing detail that Extract copies into Skipped.Detail.
type urlError struct {
	kind error // ErrMalformed or ErrUnsupportedScheme
	why  string
}

func (e *urlError) Error() string { return "links: " + e.kind.Error() + ": " + e.why }
func (e *urlError) Unwrap() error { return e.kind }

func malformed(why string) *urlError { return &urlError{kind: ErrMalformed, why: why} }

// Fixed errors, allocated once: the error path is hot for fuzzing and for
// messages full of junk.
var (
	errNoScheme   = malformed("no scheme")
	errNoHost     = malformed("no host")
	errBadPort    = malformed("invalid port")
	errBadIPv6    = malformed("invalid IPv6 address")
	errBadIPv4    = malformed("host looks like an IPv4 address but is not a valid one")
	errBadEscape  = malformed("invalid percent-escape in host")
	errBadUTF8    = malformed("host is not valid UTF-8")
	errBadIDN     = malformed("invalid internationalised domain name")
	errBadChar    = malformed("invalid character in host")
	errEmptyLabel = malformed("empty label in host")
	errLongLabel  = malformed("host label longer than 63 characters")
	errLongHost   = malformed("host longer than 253 characters")
)

func schemeError(scheme string) *urlError {
	const maxShown = 16 // keep details short whatever the input
	s := strings.ToLower(scheme)
	if len(s) > maxShown {
		s = s[:maxShown] + "…"
	}
	return &urlError{kind: ErrUnsupportedScheme, why: s + ": links are not scanned"}
}

// parsedURL is a normalised http(s) URL and its host.
type parsedURL struct {
	url  string     // the normalised URL
	host string     // ASCII, lower case, no brackets, no port
	addr netip.Addr // valid when host is an IP address literal
}

// Normalize returns the canonical form of an absolute http or https URL, the
// form that is deduplicated, checked against a Policy and sent to the
// analysis services, which match URLs as exact strings
// (docs/specs/url-reputation-api.md §4.5, "Search task ID").
//
// The URL is read and written the way a browser reads and requests it (the
// WHATWG URL Standard's basic URL parser and serialiser,
// https://url.spec.whatwg.org/), so the host that is checked is the host a
// click would reach and the URL sent is the URL a click would request:
//
//   - leading and trailing spaces and C0 controls are trimmed; tabs and
//     newlines inside are removed;
//   - the scheme is lower-cased; anything but http and https returns an
//     error wrapping ErrUnsupportedScheme;
//   - any number of '/' or '\' after "http:" is accepted, and '\' ends the
//     host as '/' does (so "http://evil.com\@good.com" is evil.com);
//   - userinfo is dropped: the host of http://good.com@evil.com is
//     evil.com, and credentials are never sent to a service;
//   - the host is percent-decoded and lower-cased, internationalised names
//     become punycode (UTS #46 as the standard applies it, "xn--" labels
//     included), and one trailing dot is removed;
//   - hosts that a browser reads as IPv4 become dotted quads: 2130706433,
//     0x7f.0.0.1, 0177.0.0.1 and 127.1 all become 127.0.0.1;
//   - IPv6 literals are written as the standard writes them: lower-case
//     hex, the first longest run of two or more zero groups compressed,
//     never a dotted IPv4 tail ("[::ffff:7f00:1]");
//   - the default port (80 for http, 443 for https) is dropped and leading
//     zeros of a port are removed;
//   - '\' in the path is '/'; "." and ".." segments (also written %2e) are
//     resolved; an empty path becomes "/";
//   - the path and the query are percent-encoded with the standard's path
//     and special-query percent-encode sets (controls, space, non-ASCII,
//     and " # < > ? ` { } in the path, " # < > ' in the query); existing
//     escapes, and a '%' that starts no valid escape, are kept as they are;
//   - the fragment is dropped.
//
// Deliberate departures from the standard, checked against the WPT URL test
// data in wpt_test.go: the trailing dot of a domain is removed; a domain
// must be a DNS name ([a-z0-9_-] labels of 1–63 characters, at most 253
// characters, no empty label), where a browser accepts any name without
// forbidden code points. Invalid hosts and out-of-range numeric forms
// (256.1.1.1) return an error wrapping ErrMalformed.
// Error texts never contain the URL (at most its scheme).
// Normalize(Normalize(u)) == Normalize(u).
func Normalize(raw string) (string, error) {
	u, err := parse(raw)
	if err != nil {
		return "", err
	}
	return u.url, nil
}

// parse implements Normalize.
func parse(raw string) (parsedURL, error) {
	s := trimControlSpace(raw)
	if strings.ContainsAny(s, "\t\n\r") {
		s = removeTabNewline(s)
	}

	n := schemeLen(s)
	if n == 0 {
		return parsedURL{}, errNoScheme
	}
	var https bool
	switch scheme := s[:n]; {
	case strings.EqualFold(scheme, "http"):
	case strings.EqualFold(scheme, "https"):
		https = true
	default:
		return parsedURL{}, schemeError(scheme)
	}

	rest := s[n+1:]
	for len(rest) > 0 && (rest[0] == '/' || rest[0] == '\\') {
		rest = rest[1:]
	}
	end := len(rest)
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; c == '/' || c == '\\' || c == '?' || c == '#' {
			end = i
			break
		}
	}
	authority, rest := rest[:end], rest[end:]
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		authority = authority[at+1:]
	}

	// Host state: a ':' outside brackets starts the port.
	hostPart, port := authority, ""
	inBrackets := false
	for i := 0; i < len(authority); i++ {
		switch authority[i] {
		case '[':
			inBrackets = true
		case ']':
			inBrackets = false
		case ':':
			if !inBrackets {
				hostPart, port = authority[:i], authority[i+1:]
				i = len(authority)
			}
		}
	}
	if hostPart == "" {
		return parsedURL{}, errNoHost
	}
	host, addr, err := parseHost(hostPart)
	if err != nil {
		return parsedURL{}, err
	}
	port, err = normalizePort(port, https)
	if err != nil {
		return parsedURL{}, err
	}

	path, query, hasQuery := rest, "", false
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		path = rest[:i]
		if rest[i] == '?' {
			hasQuery = true
			query = rest[i+1:]
			if j := strings.IndexByte(query, '#'); j >= 0 {
				query = query[:j]
			}
		}
	}

	// Build into a stack buffer; most URLs fit and need one allocation (or
	// none when the input was already normal).
	var arr [256]byte
	b := arr[:0]
	if https {
		b = append(b, "https://"...)
	} else {
		b = append(b, "http://"...)
	}
	hostOff := len(b)
	v6 := addr.Is6()
	if v6 {
		b = append(b, '[')
		hostOff++
	}
	b = append(b, host...)
	if v6 {
		b = append(b, ']')
	}
	if port != "" {
		b = append(b, ':')
		b = append(b, port...)
	}
	b = appendPath(b, path)
	if hasQuery {
		b = append(b, '?')
		b = appendQuery(b, query)
	}
	out := raw
	if string(b) != raw {
		out = string(b)
	}
	return parsedURL{url: out, host: out[hostOff : hostOff+len(host)], addr: addr}, nil
}

// trimControlSpace trims C0 controls and spaces from both ends, as the
// WHATWG basic URL parser does.
func trimControlSpace(s string) string {
	i, j := 0, len(s)
	for i < j && s[i] <= ' ' {
		i++
	}
	for j > i && s[j-1] <= ' ' {
		j--
	}
	return s[i:j]
}

// removeTabNewline removes every tab, LF and CR (WHATWG basic URL parser).
func removeTabNewline(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '\t' && c != '\n' && c != '\r' {
			b = append(b, c)
		}
	}
	return string(b)
}

// schemeLen returns the length of the RFC 3986 scheme (ALPHA *( ALPHA /
// DIGIT / "+" / "-" / "." )) that s starts with, when it is followed by ':';
// otherwise 0.
func schemeLen(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ':':
			return i
		case isAlpha(c):
		case i > 0 && (isDigit(c) || c == '+' || c == '-' || c == '.'):
		default:
			return 0
		}
	}
	return 0
}

// normalizePort validates a port (digits only, at most 65535; WHATWG also
// accepts an empty port) and returns "" for the scheme's default port.
func normalizePort(p string, https bool) (string, error) {
	if p == "" {
		return "", nil
	}
	v := 0
	for i := 0; i < len(p); i++ {
		if !isDigit(p[i]) {
			return "", errBadPort
		}
		v = v*10 + int(p[i]-'0')
		if v > 65535 {
			return "", errBadPort
		}
	}
	if (https && v == 443) || (!https && v == 80) {
		return "", nil
	}
	if p[0] == '0' { // leading zeros: 080 → 80
		return strconv.Itoa(v), nil
	}
	return p, nil
}

// parseHost turns the host part of an authority into its canonical ASCII
// form. For IP literals it also returns the address.
func parseHost(h string) (string, netip.Addr, error) {
	if h[0] == '[' {
		if len(h) < 2 || h[len(h)-1] != ']' {
			return "", netip.Addr{}, errBadIPv6
		}
		inner := h[1 : len(h)-1]
		// Zones ("%eth0") and escapes are not allowed in URL IPv6 literals.
		if strings.IndexByte(inner, '%') >= 0 {
			return "", netip.Addr{}, errBadIPv6
		}
		a, err := netip.ParseAddr(inner)
		if err != nil || !a.Is6() {
			return "", netip.Addr{}, errBadIPv6
		}
		return ipv6String(a), a, nil
	}
	if strings.IndexByte(h, '%') >= 0 {
		var ok bool
		if h, ok = percentDecode(h); !ok {
			return "", netip.Addr{}, errBadEscape
		}
	}
	ascii := isASCII(h)
	if !ascii {
		if !utf8.ValidString(h) {
			return "", netip.Addr{}, errBadUTF8
		}
		var err error
		if h, err = idnaToASCII(h); err != nil {
			return "", netip.Addr{}, err
		}
	}
	h = lowerASCII(h)
	// An ASCII name goes through UTS #46 only when a label claims to be
	// punycode ("xn--"), which must then decode to a valid label, as the
	// standard's domain-to-ASCII does.
	if ascii && hasACELabel(h) {
		var err error
		if h, err = idnaToASCII(h); err != nil {
			return "", netip.Addr{}, err
		}
	}
	h = strings.TrimSuffix(h, ".")
	if h == "" {
		return "", netip.Addr{}, errNoHost
	}
	if endsInNumber(h) {
		a, ok := parseIPv4(h)
		if !ok {
			return "", netip.Addr{}, errBadIPv4
		}
		return a.String(), a, nil
	}
	if err := validateDomain(h); err != nil {
		return "", netip.Addr{}, err
	}
	return h, netip.Addr{}, nil
}

// idnaToASCII converts a non-ASCII host to punycode with golang.org/x/net/idna.
// Hyphen rules are not applied, so real hosts such as
// "r3---sn-x.googlevideo.com" pass; the ideographic full stops that UTS #46
// maps to '.' separate labels.
func idnaToASCII(h string) (string, error) {
	a, err := idnaProfile.ToASCII(h)
	if err != nil {
		return "", errBadIDN
	}
	return a, nil
}

// idnaProfile converts host names as the WHATWG URL standard does (the
// "domain to ASCII" step browsers use): UTS #46 mapping, non-transitional,
// Bidi and joiner rules checked, but no STD3 or hyphen checks, so that the
// name we scan is the name a browser would resolve (ⓔⓥⓘⓛ.com is evil.com).
var idnaProfile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.Transitional(false),
	idna.StrictDomainName(false),
	idna.CheckHyphens(false),
	idna.CheckJoiners(true),
)

// validateDomain checks a lower-case ASCII host name: labels of 1–63
// characters from [a-z0-9_-] and at most 253 characters. Underscores are
// accepted because real host names carry them and browsers resolve them.
// "xn--" labels are not decoded: whatever they encode, the ASCII form is
// the name DNS resolves, so it is the right thing to scan.
func validateDomain(h string) error {
	if len(h) > maxHostLen {
		return errLongHost
	}
	for len(h) > 0 {
		label := h
		if i := strings.IndexByte(h, '.'); i >= 0 {
			label, h = h[:i], h[i+1:]
			if h == "" {
				return errEmptyLabel // "a.." after the one trailing dot was removed
			}
		} else {
			h = ""
		}
		if label == "" {
			return errEmptyLabel
		}
		if len(label) > maxLabelLen {
			return errLongLabel
		}
		for i := 0; i < len(label); i++ {
			if c := label[i]; !(isLower(c) || isDigit(c) || c == '-' || c == '_') {
				return errBadChar
			}
		}
	}
	return nil
}

// endsInNumber is the WHATWG "ends in a number checker": a host whose last
// label is all digits or 0x-hex is parsed as IPv4 (and is invalid if that
// fails).
func endsInNumber(h string) bool {
	last := strings.TrimSuffix(h, ".")
	if i := strings.LastIndexByte(last, '.'); i >= 0 {
		last = last[i+1:]
	}
	if last == "" {
		return false
	}
	if allDigits(last) {
		return true
	}
	if len(last) >= 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X') {
		for i := 2; i < len(last); i++ {
			if !isHex(last[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// parseIPv4 is the WHATWG IPv4 parser: one to four parts, each decimal,
// 0x-hex or 0-octal; all parts but the last are bytes, the last fills the
// remaining bytes. The caller has already removed one trailing dot.
func parseIPv4(h string) (netip.Addr, bool) {
	var nums [4]uint64
	n := 0
	for {
		part := h
		i := strings.IndexByte(h, '.')
		if i >= 0 {
			part, h = h[:i], h[i+1:]
		}
		if n == 4 {
			return netip.Addr{}, false
		}
		v, ok := ipv4Number(part)
		if !ok {
			return netip.Addr{}, false
		}
		nums[n] = v
		n++
		if i < 0 {
			break
		}
	}
	for i := 0; i < n-1; i++ {
		if nums[i] > 255 {
			return netip.Addr{}, false
		}
	}
	last := nums[n-1]
	if last >= 1<<(8*(5-n)) {
		return netip.Addr{}, false
	}
	ip := last
	for i := 0; i < n-1; i++ {
		ip += nums[i] << (8 * (3 - i))
	}
	return netip.AddrFrom4([4]byte{byte(ip >> 24), byte(ip >> 16), byte(ip >> 8), byte(ip)}), true
}

// ipv4Number is the WHATWG IPv4 number parser. Values above 2^32 are
// reported as 2^32 (still out of range for every position), so they cannot
// overflow.
func ipv4Number(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	radix := uint64(10)
	switch {
	case len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'):
		radix, s = 16, s[2:]
	case len(s) >= 2 && s[0] == '0':
		radix, s = 8, s[1:]
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		var d uint64
		switch {
		case isDigit(c):
			d = uint64(c - '0')
		case c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = uint64(c-'A') + 10
		default:
			return 0, false
		}
		if d >= radix {
			return 0, false
		}
		if v <= 1<<32 {
			v = v*radix + d
		}
	}
	return min(v, 1<<32), true
}

// percentDecode decodes %XX escapes; ok is false for a malformed escape.
func percentDecode(s string) (string, bool) {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b = append(b, s[i])
			continue
		}
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			return "", false
		}
		b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
		i += 2
	}
	return string(b), true
}

// hasACELabel reports whether a lower-case host has a label that starts
// with the punycode prefix "xn--".
func hasACELabel(h string) bool {
	for i := 0; i+4 <= len(h); i++ {
		if (i == 0 || h[i-1] == '.') && h[i:i+4] == "xn--" {
			return true
		}
	}
	return false
}

// ipv6String writes an IPv6 address as the WHATWG IPv6 serialiser does:
// eight groups of lower-case hex without leading zeros, the first longest
// run of two or more zero groups written "::", and never a dotted IPv4
// tail (net/netip writes ::ffff:127.0.0.1 for IPv4-mapped addresses).
func ipv6String(a netip.Addr) string {
	b16 := a.As16()
	var g [8]uint16
	for i := range g {
		g[i] = uint16(b16[2*i])<<8 | uint16(b16[2*i+1])
	}
	start, n := -1, 1 // only runs longer than one group are compressed
	for i := 0; i < 8; {
		if g[i] != 0 {
			i++
			continue
		}
		j := i
		for j < 8 && g[j] == 0 {
			j++
		}
		if j-i > n {
			start, n = i, j-i
		}
		i = j
	}
	const hexDigits = "0123456789abcdef"
	var buf [39]byte
	out := buf[:0]
	for i := 0; i < 8; i++ {
		if i == start {
			out = append(out, ':', ':')
			i += n - 1
			continue
		}
		if i > 0 && i != start+n {
			out = append(out, ':')
		}
		v, started := g[i], false
		for shift := 12; shift >= 0; shift -= 4 {
			d := v >> uint(shift) & 15
			if d != 0 || started || shift == 0 {
				out = append(out, hexDigits[d])
				started = true
			}
		}
	}
	return string(out)
}

const upperHex = "0123456789ABCDEF"

// inPathSet reports whether c is in the WHATWG path percent-encode set (C0
// controls, space, bytes above '~', and " # < > ? ` { }), read byte by byte
// on the UTF-8 form.
func inPathSet(c byte) bool {
	return c <= ' ' || c >= 0x7f || c == '"' || c == '#' || c == '<' || c == '>' || c == '?' || c == '`' || c == '{' || c == '}'
}

// inSpecialQuerySet reports whether c is in the WHATWG special-query
// percent-encode set (C0 controls, space, bytes above '~', and " # < > ').
func inSpecialQuerySet(c byte) bool {
	return c <= ' ' || c >= 0x7f || c == '"' || c == '#' || c == '<' || c == '>' || c == '\''
}

// appendPath appends the path of a special URL as the WHATWG path state
// builds it: '/' and '\' separate segments, "." and ".." segments (also
// %2e, case-insensitive) are resolved, each segment is percent-encoded
// with the path set, and an empty path is "/". Existing escapes and a '%'
// that starts no valid escape are kept.
func appendPath(b []byte, p string) []byte {
	if p == "" {
		return append(b, '/')
	}
	p = p[1:] // the path starts with '/' or '\'
	base := len(b)
	// starts holds the offset of the '/' that opens each segment written.
	var startsArr [16]int
	starts := startsArr[:0]
	for {
		seg, last := p, true
		if i := strings.IndexAny(p, `/\`); i >= 0 {
			seg, p, last = p[:i], p[i+1:], false
		}
		switch {
		case isDoubleDot(seg):
			if n := len(starts); n > 0 {
				b = b[:starts[n-1]]
				starts = starts[:n-1]
			}
			if last {
				starts = append(starts, len(b))
				b = append(b, '/')
			}
		case isSingleDot(seg):
			if last {
				starts = append(starts, len(b))
				b = append(b, '/')
			}
		default:
			starts = append(starts, len(b))
			b = append(b, '/')
			for i := 0; i < len(seg); i++ {
				if c := seg[i]; inPathSet(c) {
					b = append(b, '%', upperHex[c>>4], upperHex[c&15])
				} else {
					b = append(b, c)
				}
			}
		}
		if last {
			break
		}
	}
	if len(b) == base { // cannot happen: the last segment always writes
		b = append(b, '/')
	}
	return b
}

// appendQuery appends a query percent-encoded with the special-query set.
func appendQuery(b []byte, q string) []byte {
	for i := 0; i < len(q); i++ {
		if c := q[i]; inSpecialQuerySet(c) {
			b = append(b, '%', upperHex[c>>4], upperHex[c&15])
		} else {
			b = append(b, c)
		}
	}
	return b
}

// isSingleDot is the WHATWG single-dot URL path segment: "." or "%2e".
func isSingleDot(s string) bool {
	return s == "." || (len(s) == 3 && s[0] == '%' && s[1] == '2' && s[2]|0x20 == 'e')
}

// isDoubleDot is the WHATWG double-dot URL path segment: "..", ".%2e",
// "%2e." or "%2e%2e", case-insensitive.
func isDoubleDot(s string) bool {
	switch len(s) {
	case 2:
		return s == ".."
	case 4:
		return (s[0] == '.' && isSingleDot(s[1:])) || (isSingleDot(s[:3]) && s[3] == '.')
	case 6:
		return isSingleDot(s[:3]) && isSingleDot(s[3:])
	}
	return false
}

// lowerASCII lower-cases ASCII letters, allocating only when needed.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; c >= 'A' && c <= 'Z' {
					b[j] = c + ('a' - 'A')
				}
			}
			return string(b)
		}
	}
	return s
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

func isAlpha(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isHex(c byte) bool   { return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f') }

func unhex(c byte) byte {
	if isDigit(c) {
		return c - '0'
	}
	return c | 0x20 - 'a' + 10
}
