package qrscan

import (
	"slices"
	"testing"
)

func TestURLs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		text string
		want []string
	}{
		{"bare URL", "https://login.example.com/verify?u=8d2f", []string{"https://login.example.com/verify?u=8d2f"}},
		{"http", "http://pay.example/x", []string{"http://pay.example/x"}},
		// Alphanumeric-mode QR codes hold upper case only; kept as is.
		{"upper case", "HTTPS://PAY.EXAMPLE/Q7", []string{"HTTPS://PAY.EXAMPLE/Q7"}},
		{"surrounding space", "  https://pay.example/x \r\n", []string{"https://pay.example/x"}},
		{"URL: prefix", "URL:https://pay.example/x", []string{"https://pay.example/x"}},
		{"URI: prefix", "uri:https://pay.example/x", []string{"https://pay.example/x"}},
		{"URLTO:", "URLTO:http://pay.example/x", []string{"http://pay.example/x"}},
		{"MEBKM escaped", `MEBKM:TITLE:Pay\: now;URL:http\://pay.example/a\;b;;`, []string{"http://pay.example/a;b"}},
		{"MECARD with URL", `MECARD:N:Doe,Jane;URL:https\://jane.example/;EMAIL:j@jane.example;;`, []string{"https://jane.example/"}},
		{"vCard URL line", "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Jane\r\nURL:https://jane.example/card\r\nEND:VCARD", []string{"https://jane.example/card"}},
		{"in a sentence", "Scan failed? Visit https://help.example/parking. Thanks!", []string{"https://help.example/parking"}},
		{"in parentheses", "Pay (https://pay.example/a_(b)) now", []string{"https://pay.example/a_(b)"}},
		{"after a colon", "Link:https://pay.example/x", []string{"https://pay.example/x"}},
		{"two URLs", "https://a.example/ and http://b.example/p", []string{"https://a.example/", "http://b.example/p"}},
		{"angle brackets", "<https://a.example/x>", []string{"https://a.example/x"}},
		{"quoted", `"https://a.example/x"`, []string{"https://a.example/x"}},
		{"ideographic space ends it", "https://a.example/x\u3000next", []string{"https://a.example/x"}},
		{"IDN kept", "https://пример.example/путь", []string{"https://пример.example/путь"}},
		{"userinfo kept", "https://bank.example@evil.example/login", []string{"https://bank.example@evil.example/login"}},

		{"www", "www.example.com", []string{"https://www.example.com"}},
		{"www with path", "Pay at www.pay.example/lot7?x=1.", []string{"https://www.pay.example/lot7?x=1"}},
		{"WWW upper", "WWW.PAY.EXAMPLE/Q", []string{"https://WWW.PAY.EXAMPLE/Q"}},
		{"www end of sentence", "See www.example.com.", []string{"https://www.example.com"}},
		{"www inside an http URL once", "http://www.example.com/x", []string{"http://www.example.com/x"}},
		{"www without a dot after", "www.localhost", nil},
		{"www alone", "www.", nil},
		{"www double dot", "www..example.com", nil},
		{"www inside a word", "awww.example.com", nil},
		{"www in an email", "info@www.example.com", nil},
		{"www in a path", "files/www.example.com", nil},

		{"plain text", "Guest Wi-Fi password: hunter2", nil},
		{"Wi-Fi config", "WIFI:S:Office;T:WPA;P:hunter2;;", nil},
		{"phone", "tel:+15551234567", nil},
		{"mailto", "mailto:a@example.com", nil},
		{"scheme only", "https://", nil},
		{"scheme and punctuation", "https://.", nil},
		{"other scheme", "ftp://files.example/x", nil},
		{"defanged", "hxxps://evil[.]example/x", nil},
		{"inside a word", "xhttps://evil.example/", nil},
		{"empty", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := URLs([]Code{{Text: tc.text}}); !slices.Equal(got, tc.want) {
				t.Errorf("URLs(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}

func TestURLsSeveralCodes(t *testing.T) {
	t.Parallel()
	codes := []Code{
		{Text: "https://a.example/"},
		{Text: "no link here"},
		{Text: "www.b.example and https://a.example/"},
		{Text: "URL:https://c.example/"},
	}
	want := []string{"https://a.example/", "https://www.b.example", "https://c.example/"}
	if got := URLs(codes); !slices.Equal(got, want) {
		t.Errorf("URLs = %q, want %q", got, want)
	}
	if got := URLs(nil); got != nil {
		t.Errorf("URLs(nil) = %q, want nil", got)
	}
}
