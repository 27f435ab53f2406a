package main

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/internal/slackfake/slackfaketest"
	"github.com/verdictbot/verdictbot/internal/testutil"
	"github.com/verdictbot/verdictbot/sim"
)

// TestEveryOutboundConnectionGoesThroughHTTPSProxy runs a real verdictbot
// process whose only way out is an HTTPS proxy (HTTPS_PROXY): Slack (over
// TLS, as slack.test), the URL service (reputation.test) and the sandbox
// (sandbox.test) are names the bot cannot resolve itself; only the proxy
// knows where they are. A link and a file then get their cards, which takes
// every outbound client: the Web API (slack-go's HTTP client), the Socket
// Mode WebSocket (its dialer), both service clients, the file download and
// the screenshot upload.
func TestEveryOutboundConnectionGoesThroughHTTPSProxy(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a real process")
	}
	const slackHost, repHost, sbxHost = "slack.test", "reputation.test", "sandbox.test"
	serverTLS, certPEM, err := testutil.SelfSignedTLS(slackHost, repHost, sbxHost)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	proxy, err := testutil.StartConnectProxy(map[string]string{slackHost: "127.0.0.1", repHost: "127.0.0.1", sbxHost: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })

	fake := slackfaketest.Start(t, slackfake.WithTLS(serverTLS, slackHost))
	srv := sim.New(sim.Config{Profile: apptest.QuickSandbox()})
	ts := httptest.NewUnstartedServer(srv)
	ts.TLS = serverTLS
	ts.StartTLS()
	t.Cleanup(ts.Close)
	port := ts.Listener.Addr().String()[strings.LastIndex(ts.Listener.Addr().String(), ":")+1:]

	p := startProcess(t, map[string]string{
		"HTTPS_PROXY":     proxy.URL(),
		"SSL_CERT_FILE":   caFile, // trusted like a corporate CA: Go reads it for the system pool
		"SLACK_BOT_TOKEN": fake.BotToken(), "SLACK_APP_TOKEN": fake.AppToken(), "SLACK_API_URL": fake.APIURL(),
		"REPUTATION_URL": "https://" + repHost + ":" + port, "REPUTATION_API_KEY": e2eKey,
		"SANDBOX_URL": "https://" + sbxHost + ":" + port, "SANDBOX_API_KEY": e2eKey,
		"VERDICTBOT_DATA_DIR": t.TempDir(), "VERDICTBOT_CHANNEL_MODE": "verbose",
		"VERDICTBOT_RESOLVE_HOSTS": "false", "VERDICTBOT_HTTP_ADDR": "127.0.0.1:0",
	})
	if !strings.HasPrefix(fake.APIURL(), "https://"+slackHost+":") {
		t.Fatalf("the fake's API URL is %s, not on %s over TLS", fake.APIURL(), slackHost)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := fake.WaitConnected(ctx, 1); err != nil {
		t.Fatalf("no Socket Mode connection through the proxy: %v\nproxy saw %q, refused %q\n%s", err, proxy.Connects(), proxy.Refused(), p.logs.String())
	}

	link, err := fake.DeliverMessage(slackfake.MessageEvent{Channel: secChannel, User: alice, Text: "look <https://login.phish.test/verify>"})
	if err != nil {
		t.Fatal(err)
	}
	f := fake.AddFile(slackfake.File{Name: "invoice.exe", Content: []byte(apptest.Eicar + " SIM:SHOTS=1")})
	shared, err := fake.ShareFile(secChannel, alice, f.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	cardWith := func(st *slackfake.State, threadTS, want string) bool {
		for _, m := range st.Messages(secChannel, threadTS) {
			if m.Bot && strings.Contains(apptest.BlocksText(m.Blocks), want) {
				return true
			}
		}
		return false
	}
	err = fake.WaitFor(ctx, func(st *slackfake.State) bool {
		return cardWith(st, link.TS, "Malicious") && cardWith(st, shared[0].TS, "EICAR")
	})
	if err != nil {
		t.Fatalf("cards did not arrive through the proxy: %v\nproxy saw %q, refused %q\n%s", err, proxy.Connects(), proxy.Refused(), p.logs.String())
	}
	if _, err := fake.WaitUploads(ctx, secChannel, shared[0].TS, 1); err != nil {
		t.Fatalf("the screenshot was not uploaded through the proxy: %v\n%s", err, p.logs.String())
	}

	seen := proxy.Connects()
	for _, host := range []string{slackHost, repHost, sbxHost} {
		if !slices.ContainsFunc(seen, func(a string) bool { return strings.HasPrefix(a, host+":") }) {
			t.Errorf("no CONNECT to %s; the proxy saw %q", host, seen)
		}
	}
	// The Web API and the WebSocket cannot share a connection.
	if n := len(slices.DeleteFunc(slices.Clone(seen), func(a string) bool { return !strings.HasPrefix(a, slackHost+":") })); n < 2 {
		t.Errorf("%d CONNECTs to %s; want at least 2 (Web API and Socket Mode)", n, slackHost)
	}
	if r := proxy.Refused(); len(r) > 0 {
		t.Errorf("the proxy refused %q", r)
	}
	if strings.Contains(p.logs.String(), e2eKey) {
		t.Error("a service key reached the logs")
	}
}
