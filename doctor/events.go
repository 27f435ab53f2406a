package doctor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"

	"github.com/verdictbot/verdictbot/events"
)

// events checks where the findings go: VERDICTBOT_EVENTS_URL reachable
// (and, with SendTestEvent, a signed test event answered 2xx), and
// VERDICTBOT_EVENTS_FILE writable.
func (r *run) events(ctx context.Context) []Result {
	var out []Result
	if r.cfg.EventsURL == "" && r.cfg.EventsFile == "" {
		return []Result{{Section: secEvents, Name: "events", Status: Skip,
			Detail: "VERDICTBOT_EVENTS_URL and VERDICTBOT_EVENTS_FILE not set (optional): findings are not sent to the SOC's tools"}}
	}
	if r.cfg.EventsURL != "" {
		out = append(out, r.eventsURL(ctx)...)
	}
	if r.cfg.EventsFile != "" {
		out = append(out, r.eventsFile())
	}
	return out
}

// eventsURL asks the receiver with HEAD (any HTTP answer shows it is
// reachable, its TLS certificate trusted), then posts the test event if
// asked to. Messages name the URL's scheme and host only: its path and
// query may hold a token.
func (r *run) eventsURL(ctx context.Context) []Result {
	res := Result{Section: secEvents, Name: "events URL"}
	test := Result{Section: secEvents, Name: "test event", Status: Skip, Detail: "not sent (verdictbot doctor --send-test-event posts one signed test event)"}
	u, err := url.Parse(r.cfg.EventsURL)
	if err != nil || u.Host == "" {
		res.Status, res.Detail, res.Fix = Fail, "VERDICTBOT_EVENTS_URL is not a URL", "set it to the receiver's https:// URL"
		return []Result{res}
	}
	host := u.Scheme + "://" + u.Host
	const fixReach = "check the URL, that this host reaches the receiver (DNS, firewall, HTTPS_PROXY), and that its certificate is trusted (SSL_CERT_FILE)"
	status, err := within(ctx, r, func(ctx context.Context) (int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodHead, r.cfg.EventsURL, nil)
		if err != nil {
			return 0, err
		}
		client := &http.Client{Timeout: r.timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	})
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its URL may hold a token
		}
		res.Status, res.Detail, res.Fix = Fail, fmt.Sprintf("cannot reach %s: %v", host, err), fixReach
		return []Result{res, test}
	}
	res.Status, res.Detail = Pass, fmt.Sprintf("%s is reachable (it answered HEAD with HTTP %d)", host, status)
	if !r.opts.SendTestEvent {
		return []Result{res, test}
	}
	sender := &events.Sender{URL: r.cfg.EventsURL, Secret: []byte(r.cfg.EventsSecret.Reveal()), Client: &http.Client{Timeout: r.timeout},
		Timeout: r.timeout, UserAgent: "verdictbot/" + r.opts.Version}
	code, err := sender.SendTest(ctx, events.Product{Version: r.opts.Version})
	signed := "signed with VERDICTBOT_EVENTS_SECRET"
	if r.cfg.EventsSecret == "" {
		signed = "unsigned: VERDICTBOT_EVENTS_SECRET is not set"
	}
	switch {
	case err == nil:
		test.Status, test.Detail = Pass, fmt.Sprintf("%s took a test event (%s) with HTTP %d", host, signed, code)
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		test.Status, test.Detail = Fail, fmt.Sprintf("the test event (%s) was refused: %v", signed, err)
		test.Fix = "give the receiver the same secret as VERDICTBOT_EVENTS_SECRET, and check its signature check (docs/siem.md, \"Checking the signature\")"
	default:
		test.Status, test.Detail = Fail, fmt.Sprintf("the test event (%s) failed: %v", signed, err)
		test.Fix = "see the receiver's log for why it refused the event; it must answer 2xx to a POST of one JSON event (docs/siem.md, \"Delivery\")"
	}
	return []Result{res, test}
}

// eventsFile checks that VERDICTBOT_EVENTS_FILE can be appended to:
// its directory writable, the file (if any) open for appending.
func (r *run) eventsFile() Result {
	path := r.cfg.EventsFile
	res := Result{Section: secEvents, Name: "events file"}
	if path == "-" {
		res.Status, res.Detail = Pass, "standard output (VERDICTBOT_EVENTS_FILE=-)"
		return res
	}
	fix := fmt.Sprintf("make %s writable by the bot's user (or set VERDICTBOT_EVENTS_FILE to a file in a writable directory)", filepath.Dir(path))
	if err := probeWrite(filepath.Dir(path)); err != nil {
		res.Status, res.Detail, res.Fix = Fail, fmt.Sprintf("its directory is not writable: %v", err), fix
		return res
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	switch {
	case errors.Is(err, os.ErrNotExist):
		res.Status, res.Detail = Pass, path+": the bot creates it (its directory is writable)"
	case err != nil:
		res.Status, res.Detail, res.Fix = Fail, fmt.Sprintf("%s cannot be appended to: %v", path, err), fix
	default:
		f.Close()
		res.Status, res.Detail = Pass, path+": can be appended to"
	}
	return res
}
