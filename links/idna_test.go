package links

import "testing"

// TestIDNAToASCII checks the host conversion against known punycode forms
// (RFC 3492 samples and common test labels) and the WHATWG mappings a
// browser applies, so the host we scan is the host a browser would visit.
func TestIDNAToASCII(t *testing.T) {
	t.Parallel()
	ok := []struct{ in, want string }{
		{"他们为什么不说中文", "xn--ihqwcrb4cv8a8dqg056pqjye"},
		{"3年b組金八先生", "xn--3b-ww4c5e180e575a65lsy2b"},
		{"BÜCHER.example", "xn--bcher-kva.example"},
		{"münchen.de", "xn--mnchen-3ya.de"},
		{"ПРИМЕР.рф", "xn--e1afmkfd.xn--p1ai"},
		{"ｅｘａｍｐｌｅ．ｃｏｍ", "example.com"},
		{"παράδειγμα.gr", "xn--hxajbheg2az3al.gr"},
		{"fußball.de", "xn--fuball-cta.de"}, // non-transitional: ß kept
		{"コーヒー.jp", "xn--tck2c4fb.jp"},
		{"ⓔⓥⓘⓛ.com", "evil.com"},       // circled letters map to ASCII
		{"𝐞𝐯𝐢𝐥.com", "evil.com"},       // mathematical bold
		{"ev\u00adil.com", "evil.com"}, // soft hyphen is ignored
		{"e\u0301cole.fr", "xn--cole-9oa.fr"},
		{"İstanbul.tr", "xn--istanbul-o0e.tr"}, // not "istanbul": U+0130 maps to i + combining dot
	}
	for _, tc := range ok {
		got, err := idnaToASCII(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("idnaToASCII(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"a\u200db.com", "\u05d0a.com", "\u0301a.com"} {
		if got, err := idnaToASCII(in); err == nil {
			t.Errorf("idnaToASCII(%q) = %q, want an error", in, got)
		}
	}
}
