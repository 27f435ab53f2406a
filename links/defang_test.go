package links

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDefang(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		// From links' own table.
		{"https://evil.example/a.php?x=1.2#f", "hxxps://evil[.]example/a.php?x=1.2#f"},
		{"http://a.b.c.example:8080/", "hxxp://a[.]b[.]c[.]example:8080/"},
		{"HTTPS://Evil.Example", "hxxps://Evil[.]Example"},
		{"http://good.example@evil.example/", "hxxp://good[.]example@evil[.]example/"},
		{"http://127.0.0.1/", "hxxp://127[.]0[.]0[.]1/"},
		{"http://[::1]/", "hxxp://[::1]/"},
		{"ftp://files.example/x.zip", "ftp://files[.]example/x.zip"},
		{"evil.example/path.html", "evil[.]example/path.html"},
		{"hxxps://evil[.]example/", "hxxps://evil[.]example/"},
		{"", ""},
		// Fuzz finds: an http(s) scheme is defanged whatever follows it.
		{"http:://0", "hxxp:://0"},
		{"https:evil.example/a.b", "hxxps:evil[.]example/a.b"},
		{"HTTP:\\\\evil.example\\x", "hxxp:\\\\evil[.]example\\x"},
		{"evil.example:8080/x", "evil[.]example:8080/x"},
		// From notify's table (its defangURL, now this function).
		{"https://evil.example/a.php", "hxxps://evil[.]example/a.php"},
		{"HTTP://Evil.Example", "hxxp://Evil[.]Example"},
		{"ftp://files.example/x", "ftp://files[.]example/x"},
		{"https://user.name@paypal.com.evil.example:8443/p?q=a.b#c.d", "hxxps://user[.]name@paypal[.]com[.]evil[.]example:8443/p?q=a.b#c.d"},
		{"http://10.0.0.1\\x.y", "hxxp://10[.]0[.]0[.]1\\x.y"},
		{"https://例え。テスト／", "hxxps://例え[.]テスト／"},
		{"https://a．b｡c", "hxxps://a[.]b[.]c"},
		{"https://a.example/r?u=https://b.example/x.y", "hxxps://a[.]example/r?u=hxxps://b[.]example/x.y"},
		{"<!channel> <https://evil.example|click>", "<!channel> <hxxps://evil[.]example|click>"},
		{"evil.example/go?to=http://b.example", "evil[.]example/go?to=hxxp://b[.]example"},
		{"\uFFFD]8;;https://evil.example\uFFFD", "\uFFFD]8;;hxxps://evil[.]example\uFFFD"},
		{"mailto:a@b.example", "mailto:a@b[.]example"},
		// The union, stricter than either old copy.
		{"http://例え。テスト/", "hxxp://例え[.]テスト/"},                                   // links kept U+3002
		{"evil。example/x", "evil[.]example/x"},                                   // links kept U+3002
		{" http://evil.example/", " hxxp://evil[.]example/"},                     // links left it live
		{"x/?u=https:evil.example/a.b", "x/?u=hxxps:evil[.]example/a.b"},         // links: only at the start; notify: only before "://"
		{"x/?u=HTTP:\\\\evil.example\\a.b", "x/?u=hxxp:\\\\evil[.]example\\a.b"}, // same
		{"https:///evil.example/", "hxxps:///evil[.]example/"},                   // notify: empty authority
		{"x?u=ftp:///evil.example", "x?u=ftp:///evil[.]example"},                 // both: empty authority, and links: not at the start
		{"//evil.example/a.b", "//evil[.]example/a.b"},                           // both: no host found
		{"x?u=1https://evil.example", "x?u=1hxxps://evil[.]example"},             // links: not at the start
		{"x?u=://evil.example", "x?u=://evil[.]example"},                         // links: no scheme
		{"ftp://a.https://evil.example", "ftp://a[.]hxxps://evil[.]example"},     // both left "a[.]https://evil.example", live
		{"https://a.example evil.example", "hxxps://a[.]example evil[.]example"}, // notify stopped at the space
		{`https://a.example"b.example/`, `hxxps://a[.]example"b[.]example/`},     // notify stopped at the quote
		// Not schemes, not authorities.
		{"x/a.b?c=javascript:alert(1).x", "x/a.b?c=javascript:alert(1).x"},
		{"x/?u=xhttps://evil.example", "x/?u=xhttps://evil[.]example"},
		{"a.bhttps://c.d", "a.bhttps://c[.]d"},
		{"x/y?z=https:", "x/y?z=hxxps:"},
		{"evil.example\xff.x/", "evil[.]example\xff[.]x/"},
	}
	for _, tc := range tests {
		got := Defang(tc.in)
		if got != tc.want {
			t.Errorf("Defang(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if again := Defang(got); again != got {
			t.Errorf("Defang(%q) = %q, not stable", got, again)
		}
	}
}

func TestDefangText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		// From notify's table (its defangText).
		{"Login – PayPal", "Login – PayPal"},
		{"see https://evil.example/x.", "see hxxps://evil[.]example/x."},
		{"(evil.example), 10.0.0.1 and mail a@b.example.", "(evil[.]example), 10[.]0[.]0[.]1 and mail a@b[.]example."},
		{"version 2.0, e.g. i.e. U.S.", "version 2.0, e.g. i.e. U.S."},
		{"go to:http://x.example", "go to:hxxp://x[.]example"},
		{"пример.рф", "пример[.]рф"},
		// The union.
		{"see https:evil.example now", "see hxxps:evil[.]example now"},
		{"HTTP: 503 from https: the end", "HTTP: 503 from https: the end"},
		{"see https://a.example, then e.g. this", "see hxxps://a[.]example, then e.g. this"},
		{"evil。example", "evil[.]example"},
		{"evil.example/go?u=https://b.example", "evil[.]example/go?u=hxxps://b[.]example"}, // notify left evil.example
		{"a.b.https:x", "a[.]b[.]hxxps:x"},
	} {
		got := DefangText(tc.in)
		if got != tc.want {
			t.Errorf("DefangText(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if again := DefangText(got); again != got {
			t.Errorf("DefangText(%q) = %q, not stable", got, again)
		}
	}
}

func TestDefangLinks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"report.pdf", "report.pdf"},
		{"invoice.exe from https://evil.example/x.exe", "invoice.exe from hxxps://evil[.]example/x.exe"},
		{"<https://evil.example|x.y>", "<hxxps://evil[.]example|x.y>"},
		{"a`https://evil.example`b.c", "a`hxxps://evil[.]example`b.c"},
		{"http:\\\\evil.example", "hxxp:\\\\evil[.]example"},
		{"HTTP: 503", "HTTP: 503"},
		{"C:\\Users\\me\\x.txt", "C:\\Users\\me\\x.txt"},
	} {
		got := DefangLinks(tc.in)
		if got != tc.want {
			t.Errorf("DefangLinks(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if again := DefangLinks(got); again != got {
			t.Errorf("DefangLinks(%q) = %q, not stable", got, again)
		}
	}
}

func TestDefangTruncate(t *testing.T) {
	t.Parallel()
	long := "https://evil.example/" + strings.Repeat("päth/", 40)
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"https://evil.example/", 100, "hxxps://evil[.]example/"},
		{"https://evil.example/", 23, "hxxps://evil[.]example/"},
		{"https://evil.example/", 22, "hxxps://evil[.]exampl…"},
		{"https://evil.example/", 13, "hxxps://evil…"},
		{"https://evil.example/", 14, "hxxps://evil…"},    // would end in "evil["
		{"https://evil.example/", 15, "hxxps://evil…"},    // would end in "evil[."
		{"https://evil.example/", 16, "hxxps://evil[.]…"}, // whole marker fits
		{long, 30, "hxxps://evil[.]example/päth/p…"},
		{"https://evil.example/", 1, "…"},
		{"https://evil.example/", 0, ""},
		{"https://evil.example/", -5, ""},
	}
	for _, tc := range tests {
		got := DefangTruncate(tc.in, tc.max)
		if got != tc.want {
			t.Errorf("DefangTruncate(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
		if n := utf8.RuneCountInString(got); tc.max > 0 && n > tc.max {
			t.Errorf("DefangTruncate(%q, %d) has %d runes", tc.in, tc.max, n)
		}
		if !utf8.ValidString(got) {
			t.Errorf("DefangTruncate(%q, %d) = %q is not valid UTF-8", tc.in, tc.max, got)
		}
	}
}
