package links

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDefang(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
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
