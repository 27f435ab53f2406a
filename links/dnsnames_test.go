package links

import (
	"strings"
	"testing"
)

func TestWellKnownNamesThatResolvePrivate(t *testing.T) {
	cases := []struct {
		url    string
		reason Reason
		detail string // substring of Skipped.Detail
	}{
		{"http://localtest.me/admin", ReasonResolvesPrivate, "127.0.0.1"},
		{"https://app.localtest.me:8443/x", ReasonResolvesPrivate, "127.0.0.1"},
		{"https://lvh.me/", ReasonResolvesPrivate, "127.0.0.1"},
		{"https://x.localhost.direct/", ReasonResolvesPrivate, "127.0.0.1"},
		{"https://127.0.0.1.nip.io/", ReasonResolvesPrivate, "127.0.0.1: 127.0.0.0/8 is loopback"},
		{"https://sub.10.1.2.3.nip.io/login", ReasonResolvesPrivate, "10.1.2.3"},
		{"https://app-192-168-1-5.sslip.io/", ReasonResolvesPrivate, "192.168.1.5"},
		{"https://172-16-0-9.sslip.io/", ReasonResolvesPrivate, "172.16.0.9"},
		{"https://app-0a000001.nip.io/", ReasonResolvesPrivate, "10.0.0.1"},
		{"https://7f000001.traefik.me/", ReasonResolvesPrivate, "127.0.0.1"},
		{"https://100.64.0.1.xip.io/", ReasonResolvesPrivate, "100.64.0.1"},
		// A public address in the name, or none, is scanned.
		{"https://8.8.8.8.nip.io/", ReasonNone, ""},
		{"https://app-93-184-216-34.sslip.io/", ReasonNone, ""},
		{"https://nip.io/", ReasonNone, ""},
		{"https://docs.nip.io/", ReasonNone, ""},
		{"https://notlocaltest.me/", ReasonNone, ""},
		{"https://localtest.me.evil.example/", ReasonNone, ""},
		{"https://10.0.0.1.nip.io.evil.example/", ReasonNone, ""},
	}
	p := &Policy{}
	for _, tc := range cases {
		t.Run(tc.url, func(t *testing.T) {
			n, err := Normalize(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			u, err := parse(n)
			if err != nil {
				t.Fatal(err)
			}
			reason, detail := p.orDefault().check(u)
			if reason != tc.reason || !strings.Contains(detail, tc.detail) {
				t.Fatalf("check(%s) = %q, %q; want %q with %q", n, reason, detail, tc.reason, tc.detail)
			}
		})
	}
}
