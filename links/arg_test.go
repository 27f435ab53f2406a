package links

import (
	"errors"
	"testing"
)

func TestClassifyArg(t *testing.T) {
	t.Parallel()
	p, err := NewPolicy(Config{InternalDomains: []string{"corp.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		arg  string
		want Arg
	}{
		// With a scheme: a link, whatever its host.
		{"https://example.com/guide", Arg{Kind: ArgLink, URL: "https://example.com/guide"}},
		{"HTTPS://Example.COM", Arg{Kind: ArgLink, URL: "https://example.com/"}},
		{"https://login.phish.test/verify", Arg{Kind: ArgLink, URL: "https://login.phish.test/verify"}},
		{"http://10.0.0.7/admin", Arg{Kind: ArgLink, URL: "http://10.0.0.7/admin", Reason: ReasonPrivateAddress}},
		{"https://wiki.corp.example.com/x", Arg{Kind: ArgLink, URL: "https://wiki.corp.example.com/x", Reason: ReasonInternalDomain}},
		{"https://slack.com/help", Arg{Kind: ArgLink, URL: "https://slack.com/help", Reason: ReasonAllowlisted}},
		{"https://jira/x", Arg{Kind: ArgLink, URL: "https://jira/x", Reason: ReasonSingleLabel}},
		{"https://exa mple/", Arg{Kind: ArgInvalid}},
		{"ftp://example.com/f", Arg{Kind: ArgInvalid}},

		// Without one: a path, a link to https://arg, or a bare name.
		{"www.example.org/form", Arg{Kind: ArgLink, MayBeFile: true, URL: "https://www.example.org/form"}},
		{"example.co.uk", Arg{Kind: ArgLink, MayBeFile: true, URL: "https://example.co.uk/"}},
		{"93.184.216.34/x", Arg{Kind: ArgLink, MayBeFile: true, URL: "https://93.184.216.34/x"}},
		{"[2606:2800:220:1:248:1893:25c8:1946]:8443/", Arg{Kind: ArgLink, MayBeFile: true, URL: "https://[2606:2800:220:1:248:1893:25c8:1946]:8443/"}},
		{"example.com:8443/p?q=1", Arg{Kind: ArgLink, MayBeFile: true, URL: "https://example.com:8443/p?q=1"}},
		{"192.168.1.1", Arg{Kind: ArgLink, MayBeFile: true, URL: "https://192.168.1.1/", Reason: ReasonPrivateAddress}},
		{"wiki.corp.example.com", Arg{Kind: ArgLink, MayBeFile: true, URL: "https://wiki.corp.example.com/", Reason: ReasonInternalDomain}},
		{"/etc/passwd", Arg{Kind: ArgPath, MayBeFile: true}},
		{"./dist/app.exe", Arg{Kind: ArgPath, MayBeFile: true}},
		{"../app.exe", Arg{Kind: ArgPath, MayBeFile: true}},
		{"~/app.exe", Arg{Kind: ArgPath, MayBeFile: true}},
		{`dist\app.exe`, Arg{Kind: ArgPath, MayBeFile: true}},
		{".", Arg{Kind: ArgPath, MayBeFile: true}},
		{"..", Arg{Kind: ArgPath, MayBeFile: true}},
		{"dist/app.exe", Arg{Kind: ArgBareName, MayBeFile: true}},                         // .exe is no top-level domain
		{"build", Arg{Kind: ArgBareName, MayBeFile: true}},                                // a single label
		{"com", Arg{Kind: ArgBareName, MayBeFile: true}},                                  // a top-level domain alone
		{"app.test/x", Arg{Kind: ArgBareName, MayBeFile: true}},                           // .test is reserved, not ICANN
		{"report.local", Arg{Kind: ArgBareName, MayBeFile: true}},                         // .local is not ICANN
		{"exa mple.com", Arg{Kind: ArgBareName, MayBeFile: true}},                         // does not normalise
		{"notes.txt", Arg{Kind: ArgBareName, MayBeFile: true}},                            // .txt is no top-level domain
		{"", Arg{Kind: ArgBareName, MayBeFile: true}},                                     // nothing
		{"github.io", Arg{Kind: ArgBareName, MayBeFile: true}},                            // a private suffix alone
		{"user.github.io/x", Arg{Kind: ArgBareName, MayBeFile: true}},                     // under a private (non-ICANN) suffix
		{"archive.zip", Arg{Kind: ArgLink, MayBeFile: true, URL: "https://archive.zip/"}}, // .zip is an ICANN TLD: an existing file wins
	} {
		got := p.ClassifyArg(tc.arg)
		if tc.want.Kind == ArgInvalid {
			if got.Kind != ArgInvalid || got.Err == nil || !errors.Is(got.Err, ErrMalformed) && !errors.Is(got.Err, ErrUnsupportedScheme) {
				t.Errorf("%q: got %+v, want ArgInvalid with a Normalize error", tc.arg, got)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("%q:\n got %+v\nwant %+v", tc.arg, got, tc.want)
		}
	}
}

// TestClassifyArgNilPolicy: a nil Policy is the default one (Slack's own
// domains allowlisted).
func TestClassifyArgNilPolicy(t *testing.T) {
	t.Parallel()
	var p *Policy
	if got := p.ClassifyArg("https://slack.com/help"); got.Kind != ArgLink || got.Reason != ReasonAllowlisted {
		t.Errorf("got %+v", got)
	}
	if got := p.ClassifyArg("example.com"); got.Kind != ArgLink || got.Reason != ReasonNone || got.URL != "https://example.com/" {
		t.Errorf("got %+v", got)
	}
}

// TestClassifyArgInvalidSaysWhy: the error of an invalid link names the
// problem, not the URL (it is shown to the user).
func TestClassifyArgInvalidSaysWhy(t *testing.T) {
	t.Parallel()
	got := (*Policy)(nil).ClassifyArg("https://exa mple/secret-token")
	if got.Kind != ArgInvalid || got.Err == nil {
		t.Fatalf("got %+v", got)
	}
	if want := "links: malformed URL: invalid character in host"; got.Err.Error() != want {
		t.Errorf("err %q, want %q", got.Err, want)
	}
}
