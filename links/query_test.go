package links

import "testing"

func TestStripQuery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw, want string
		dropped   bool
	}{
		{"https://app.example.com/magic?token=s3cr3t&u=1", "https://app.example.com/magic", true},
		{"https://example.com/a%3Fb?c=d", "https://example.com/a%3Fb", true},
		{"https://example.com/", "https://example.com/", false},
		{"https://example.com/x?", "https://example.com/x", false},
		{"http://[2001:db8::1]:8080/p?q", "http://[2001:db8::1]:8080/p", true},
	} {
		norm, err := Normalize(tc.raw)
		if err != nil {
			t.Fatalf("%s: %v", tc.raw, err)
		}
		got, dropped := StripQuery(norm)
		if got != tc.want || dropped != tc.dropped {
			t.Errorf("StripQuery(%q) = %q, %v; want %q, %v", norm, got, dropped, tc.want, tc.dropped)
		}
	}
}
