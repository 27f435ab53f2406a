package backfill

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
)

// WebAPI answers as slack-go does: Slack's error codes as
// slack.SlackErrorResponse, 429s as slack.RateLimitedError with their
// Retry-After, other statuses as slack.StatusCodeError; the token is sent
// in the header only and named by no error; a message's JSON is kept
// beside its decoding, and one that slack-go cannot decode keeps its ts.
func TestWebAPIAnswersAsSlackGoDoes(t *testing.T) {
	t.Parallel()
	const token = "xoxb-secret-token-1234"
	answers := map[string]func(w http.ResponseWriter){
		"C429": func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
		},
		"C500": func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusBadGateway)
			w.Write([]byte("<html>bad gateway</html>"))
		},
		"CNOT": func(w http.ResponseWriter) { w.Write([]byte(`{"ok":false,"error":"not_in_channel"}`)) },
		"CHTM": func(w http.ResponseWriter) { w.Write([]byte(`<html>maintenance</html>`)) },
		"COK": func(w http.ResponseWriter) {
			w.Write([]byte(`{"ok":true,"has_more":true,"response_metadata":{"next_cursor":"bmV4dA=="},"messages":[
				{"type":"message","user":"U1","ts":"1700000001.000100","text":"see <https://a.example/>","attachments":[{"message_blocks":[{"message":{"blocks":[]}}]}]},
				{"type":"message","user":"U2","ts":"1700000000.000100","text":"odd","blocks":"not an array"}]}`))
		},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token || strings.Contains(r.URL.String(), token) {
			w.Write([]byte(`{"ok":false,"error":"invalid_auth"}`))
			return
		}
		r.ParseForm()
		if r.URL.Path != "/api/conversations.history" || r.Form.Get("limit") != "999" {
			w.Write([]byte(`{"ok":false,"error":"unexpected_request"}`))
			return
		}
		answers[r.Form.Get("channel")](w)
	}))
	defer srv.Close()
	w := &WebAPI{URL: srv.URL + "/api", Token: token}
	read := func(ch string) (Page, error) { return w.History(t.Context(), ch, "", "1699999999.000000", "", 999) }

	_, err := read("C429")
	var rl *slack.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter != 7*time.Second {
		t.Errorf("429: %v, want a RateLimitedError of 7s", err)
	}
	_, err = read("C500")
	var sc slack.StatusCodeError
	if !errors.As(err, &sc) || sc.Code != http.StatusBadGateway {
		t.Errorf("502: %v", err)
	}
	_, err = read("CNOT")
	var se slack.SlackErrorResponse
	if !errors.As(err, &se) || se.Err != "not_in_channel" {
		t.Errorf("not_in_channel: %v", err)
	}
	if _, err = read("CHTM"); err == nil || !strings.Contains(err.Error(), "not JSON") {
		t.Errorf("an HTML page: %v", err)
	}
	for _, ch := range []string{"C429", "C500", "CNOT", "CHTM"} {
		if _, err := read(ch); err != nil && strings.Contains(err.Error(), token) {
			t.Errorf("%s: the error names the token: %v", ch, err)
		}
	}
	p, err := read("COK")
	if err != nil {
		t.Fatal(err)
	}
	if !p.HasMore || p.NextCursor != "bmV4dA==" || len(p.Messages) != 2 {
		t.Fatalf("page %+v", p)
	}
	if m := p.Messages[0]; m.Timestamp != "1700000001.000100" || m.User != "U1" || !strings.Contains(string(m.Raw), "message_blocks") {
		t.Errorf("first message %+v", m)
	}
	if m := p.Messages[1]; m.Timestamp != "1700000000.000100" || m.Text != "odd" {
		t.Errorf("an undecodable message lost its ts or text: %+v", m)
	}
}
