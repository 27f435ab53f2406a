package qrscan

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// URLs returns the web addresses in the codes' texts, each once, in order:
//
//   - "http://" and "https://" (any case) at a word start, anywhere in the
//     text: a bare URL, ZXing's "URL:"/"URI:" forms, a vCard's URL line,
//     or a sentence containing one;
//   - "www." followed by a name with at least one more dot, at a word
//     start and not inside another address: returned with "https://" put
//     in front (what a phone's camera opens);
//   - a MeCard ("MECARD:…") or DoCoMo bookmark ("MEBKM:…") is read field
//     by field: fields end at an unescaped ';' and escape ':' ';' ',' and
//     '\' with a backslash, so "MEBKM:URL:http\://x.example/a\;b;;"
//     gives "http://x.example/a;b".
//
// An address runs to whitespace or one of < > " ` | and loses trailing
// punctuation (. , : ; ! ? ' * _ ~ and unbalanced closing brackets), as
// links.FromMrkdwn reads bare URLs. Nothing else is normalised: case,
// escapes and ports are as the code holds them, for the caller's
// links.Policy. Texts without an address (plain text, Wi-Fi settings,
// phone numbers) give none.
func URLs(codes []Code) []string {
	var out []string
	seen := make(map[string]bool)
	for _, c := range codes {
		for _, field := range meCardFields(c.Text) {
			for _, u := range urlsIn(field) {
				if !seen[u] {
					seen[u] = true
					out = append(out, u)
				}
			}
		}
	}
	return out
}

// meCardFields returns the texts of s to search for addresses: for a
// MeCard or MEBKM payload (NTT DoCoMo's formats, as ZXing's parsers read
// them), its fields, split at each ';' not escaped and with the
// backslash escapes removed; otherwise s itself.
func meCardFields(s string) []string {
	if !hasPrefixFold(s, "MECARD:") && !hasPrefixFold(s, "MEBKM:") {
		return []string{s}
	}
	var fields []string
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
		case s[i] == ';':
			fields = append(fields, b.String())
			b.Reset()
		default:
			b.WriteByte(s[i])
		}
	}
	return append(fields, b.String())
}

// urlsIn returns the addresses in s as URLs documents them.
func urlsIn(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		if i > 0 && !startsWord(s[i-1]) {
			i++
			continue
		}
		switch s[i] {
		case 'h', 'H':
			if n := schemeURLLen(s[i:]); n > 0 {
				out = append(out, s[i:i+n])
				i += n
				continue
			}
		case 'w', 'W':
			if n := wwwLen(s[i:]); n > 0 {
				out = append(out, "https://"+s[i:i+n])
				i += n
				continue
			}
		}
		i++
	}
	return out
}

// startsWord reports whether an address may start after byte c: not
// after a letter, digit or a byte that would make it part of another
// name, path or address (. - _ / @ and UTF-8 bytes).
func startsWord(c byte) bool {
	switch {
	case c >= utf8.RuneSelf:
		return false
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return false
	case c == '.' || c == '-' || c == '_' || c == '/' || c == '@':
		return false
	}
	return true
}

// schemeURLLen returns the length of the http(s) URL at the start of s,
// or 0.
func schemeURLLen(s string) int {
	var n int
	switch {
	case hasPrefixFold(s, "https://"):
		n = len("https://")
	case hasPrefixFold(s, "http://"):
		n = len("http://")
	default:
		return 0
	}
	if end := trimTail(s, n, addressEnd(s, n)); end > n {
		return end
	}
	return 0
}

// wwwLen returns the length of the "www." address at the start of s, or
// 0: "www." then a host name with at least one dot (www.example.com, not
// www.local), then anything up to the end of the address.
func wwwLen(s string) int {
	const prefix = "www."
	if !hasPrefixFold(s, prefix) {
		return 0
	}
	end := trimTail(s, len(prefix), addressEnd(s, len(prefix)))
	host := len(prefix)
	for host < end && isHostByte(s[host]) {
		host++
	}
	name := s[len(prefix):host]
	if name == "" || name[0] == '.' || name[0] == '-' || strings.Contains(name, "..") ||
		!strings.Contains(strings.TrimSuffix(name, "."), ".") {
		return 0
	}
	return end
}

// isHostByte reports whether c may appear in a host name written in a QR
// code: ASCII letters, digits, '-', '.', and the bytes of UTF-8 letters
// (internationalised names).
func isHostByte(c byte) bool {
	return c >= utf8.RuneSelf || c == '-' || c == '.' ||
		'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// addressEnd returns the index in s, from i on, where an address ends:
// whitespace (any Unicode space), a control byte, or one of < > " ` |.
func addressEnd(s string, i int) int {
	for i < len(s) {
		c := s[i]
		switch {
		case c <= ' ' || c == 0x7f || c == '<' || c == '>' || c == '"' || c == '`' || c == '|':
			return i
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRuneInString(s[i:])
			if unicode.IsSpace(r) {
				return i
			}
			i += size
		default:
			i++
		}
	}
	return i
}

// trimTail returns end moved back over trailing punctuation, never before
// start: . , : ; ! ? ' * _ ~, and a closing bracket that has no opening
// one in s[:end].
func trimTail(s string, start, end int) int {
	for end > start {
		u := s[:end]
		switch u[end-1] {
		case '.', ',', ':', ';', '!', '?', '\'', '*', '_', '~':
			end--
			continue
		case ')':
			if strings.Count(u, "(") < strings.Count(u, ")") {
				end--
				continue
			}
		case ']':
			if strings.Count(u, "[") < strings.Count(u, "]") {
				end--
				continue
			}
		case '}':
			if strings.Count(u, "{") < strings.Count(u, "}") {
				end--
				continue
			}
		}
		break
	}
	return end
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
