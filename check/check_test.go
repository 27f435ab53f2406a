package check

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verdictbot/verdictbot/config"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
	"github.com/verdictbot/verdictbot/verdict"
)

// testConfig is the default settings pointed at a simulator of both
// services, with no name resolution (the .test hosts do not exist).
func testConfig(t *testing.T) (*sim.Server, config.Config) {
	t.Helper()
	srv, base := simtest.Start(t, sim.Config{Profile: sim.QuickProfile()})
	cfg := config.Default()
	cfg.ReputationURL, cfg.ReputationAPIKey = base, "k-test"
	cfg.SandboxURL, cfg.SandboxAPIKey = base, "k-test"
	cfg.ResolveHosts = false
	return srv, cfg
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRunChecksEachTargetInOrder: Run takes a configuration value (no
// environment), answers one result per target in the targets' order, and
// sends only what is to be sent.
func TestRunChecksEachTargetInOrder(t *testing.T) {
	t.Parallel()
	srv, cfg := testConfig(t)
	dropper := writeFile(t, "dropper.bin", "SIM:MALSCORE=4.5 SIM:FAMILY=Dropper")
	empty := writeFile(t, "empty.txt", "")
	targets := []string{"https://login.phish.test/verify", dropper, "http://10.0.0.7/admin", empty, t.TempDir(), "dist/app.exe", "https://exa mple/", "https://example.com/guide"}
	got, err := Run(t.Context(), cfg, targets, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		kind, level string
	}{{"url", "malicious"}, {"file", "suspicious"}, {"url", "skipped"}, {"file", "skipped"}, {"file", "unknown"}, {"file", "unknown"}, {"url", "unknown"}, {"url", "clean"}}
	if len(got) != len(want) {
		t.Fatalf("%d results for %d targets: %+v", len(got), len(targets), got)
	}
	for i, w := range want {
		if got[i].Target != targets[i] || got[i].Kind != w.kind || got[i].Level != w.level || got[i].Verdict().Key() != w.level {
			t.Errorf("result %d: %+v, want target %q, kind %s, level %s", i, got[i], targets[i], w.kind, w.level)
		}
	}
	if f := got[1]; f.MalScore == nil || *f.MalScore != 4.5 || f.Family != "Dropper" || len(f.SHA256) != 64 || f.TaskID == "" {
		t.Errorf("file: %+v", f)
	}
	if u := got[0]; u.Category != "phishing" || u.Scores["phishing"] != 0.97 || u.TaskID == "" {
		t.Errorf("url: %+v", u)
	}
	if w := Worst(got); w != verdict.Malicious {
		t.Errorf("Worst = %v, want malicious", w)
	}
	if n := srv.Count(sim.ServiceReputation, sim.OpScan); n != 2 {
		t.Errorf("%d URL submissions, want 2 (the private host is never sent)", n)
	}
}

// TestRunNeedsOnlyTheServicesItsTargetsUse: a kind of target with its
// service unset is an error before anything is checked; targets that are
// never sent need no service.
func TestRunNeedsOnlyTheServicesItsTargetsUse(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	if _, err := Run(t.Context(), cfg, []string{"https://example.com/"}, Options{}); !errors.Is(err, ErrNoURLService) {
		t.Errorf("a link with no URL service: %v", err)
	}
	file := writeFile(t, "a.bin", "x")
	if _, err := Run(t.Context(), cfg, []string{file}, Options{}); !errors.Is(err, ErrNoFileService) {
		t.Errorf("a file with no sandbox: %v", err)
	}
	got, err := Run(t.Context(), cfg, []string{"http://10.0.0.7/admin", "no/such/file"}, Options{})
	if err != nil || len(got) != 2 || got[0].Level != "skipped" || got[1].Level != "unknown" {
		t.Errorf("targets never sent: %+v, %v", got, err)
	}
}

// TestResultText: the one-line form, the same for every caller, with the
// services' words made inert for a terminal.
func TestResultText(t *testing.T) {
	t.Parallel()
	score := 10.0
	for _, tc := range []struct {
		r    Result
		want string
	}{
		{Result{Target: "https://example.com/a?t=1", URL: "https://example.com/a", Kind: "url", QueryNotSent: true, Scores: map[string]float64{"phishing": 0.004, "advertising": 0.9}, TaskID: "t1", level: verdict.Clean},
			"CLEAN            hxxps://example[.]com/a  phishing 0% · advertising 90% · malicious 0% · illegal 0% · query not sent · task t1"},
		{Result{Target: "/tmp/x.com", Kind: "file", MalScore: &score, Family: "EICAR", TaskID: "7", Reused: true, level: verdict.Malicious},
			"MALICIOUS        /tmp/x.com  malscore 10.0/10 · family EICAR · task 7 (already analysed)"},
		{Result{Target: "http://10.0.0.7/", URL: "http://10.0.0.7/", Kind: "url", Problem: "private or reserved IP address", level: verdict.Skipped},
			"SKIPPED          hxxp://10[.]0[.]0[.]7/  not checked: private or reserved IP address"},
		{Result{Target: "https://fail.test/", URL: "https://fail.test/", Kind: "url", Problem: "boom\x1b[2J\nnext", level: verdict.Unknown},
			"COULD NOT CHECK  hxxps://fail[.]test/  boom"},
	} {
		got := tc.r.Text()
		if !strings.HasPrefix(got, tc.want) || strings.ContainsAny(got, "\x1b\n") {
			t.Errorf("Text() = %q, want %q…, one line with no escape", got, tc.want)
		}
	}
}

// TestWriteJSONKeepsTheValuesAndNoEscape: the array decodes to the
// results' values, and the raw document holds no control character.
func TestWriteJSONKeepsTheValuesAndNoEscape(t *testing.T) {
	t.Parallel()
	rs := []Result{{Target: "a\x1b]8;;x\x07b\u202e", Kind: "file", Level: "unknown", Problem: "no such file", level: verdict.Unknown}}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, rs); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(buf.String(), "\x1b\x07\u202e") {
		t.Errorf("raw control characters in %q", buf.String())
	}
	var back []map[string]any
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || len(back) != 1 || back[0]["target"] != rs[0].Target || back[0]["problem"] != "no such file" {
		t.Errorf("decoded %v (%v)", back, err)
	}
}
