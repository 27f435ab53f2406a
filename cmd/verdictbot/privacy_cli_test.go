package main

import (
	"strings"
	"testing"

	"github.com/verdictbot/verdictbot/app/apptest"
)

func TestCheckWithholdsNamesThatResolvePrivateAndStripsQueries(t *testing.T) {
	t.Parallel()
	env := checkEnv(map[string]string{"VERDICTBOT_URL_QUERY": "strip"})
	code, out, errOut := runCheckArgs(env, "--sim", "https://sso.phish-intranet.test/login", "https://example.com/reset?token=s3cr3t")
	if code != 0 {
		t.Fatalf("exit %d, want 0 (skipped and clean)\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	apptest.MustContain(t, out,
		"SKIPPED          hxxps://sso[.]phish-intranet[.]test/login  not checked: resolves to a private address",
		"CLEAN            hxxps://example[.]com/reset  phishing 0%",
		"query not sent")
	if strings.Contains(out, "s3cr3t") {
		t.Errorf("the output shows the query that was not sent:\n%s", out)
	}
	code, out, _ = runCheckArgs(env, "--sim", "--json", "https://example.com/reset?token=s3cr3t")
	if code != 0 || !strings.Contains(out, `"query_not_sent": true`) || !strings.Contains(out, `"url": "https://example.com/reset"`) {
		t.Fatalf("--json: exit %d\n%s", code, out)
	}
}

func TestCheckResolveHostsFalseSendsTheName(t *testing.T) {
	t.Parallel()
	env := checkEnv(map[string]string{"VERDICTBOT_RESOLVE_HOSTS": "false"})
	code, out, _ := runCheckArgs(env, "--sim", "https://sso.phish-intranet.test/login")
	if code != checkExitMalicious || !strings.Contains(out, "MALICIOUS") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}
