package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
)

// checkEnv is the environment of a check test: env, the services'
// settings cleared unless it sets them.
func checkEnv(env map[string]string) map[string]string {
	return merged(map[string]string{"REPUTATION_URL": "", "REPUTATION_API_KEY": "", "SANDBOX_URL": "", "SANDBOX_API_KEY": ""}, env)
}

// runCheckArgs runs `verdictbot check args…` with the environment env.
func runCheckArgs(env map[string]string, args ...string) (code int, stdout, stderr string) {
	return runMain(env, append([]string{"check"}, args...)...)
}

func TestCheckExitStatusIsTheWorstVerdict(t *testing.T) {
	t.Parallel()
	env := checkEnv(nil)
	eicarFile := apptest.WriteFile(t, "eicar.com", apptest.Eicar)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"clean", []string{"https://example.com/guide"}, 0, []string{"CLEAN            hxxps://example[.]com/guide  phishing 0% · advertising 0% · malicious 0% · illegal 0% · task "}},
		{"suspicious", []string{"https://ads.tracker.test/banner"}, 1, []string{"SUSPICIOUS", "advertising 90%"}},
		{"malicious", []string{"https://login.phish.test/verify"}, 2, []string{"MALICIOUS        hxxps://login[.]phish[.]test/verify  phishing 97%"}},
		{"bare host/path", []string{"www.example.org/form"}, 0, []string{"CLEAN            hxxps://www[.]example[.]org/form"}},
		{"timeout", []string{"--timeout", "2s", "https://pending.test/x"}, 3, []string{"COULD NOT CHECK  hxxps://pending[.]test/x  the URL service did not finish in time · task "}},
		{"failed", []string{"https://fail.test/x"}, 3, []string{"COULD NOT CHECK", "fail[.]test"}},
		{"private host", []string{"http://10.0.0.7/admin"}, 0, []string{"SKIPPED          hxxp://10[.]0[.]0[.]7/admin  not checked: private or reserved IP address"}},
		{"malicious beats could not check", []string{"https://login.phish.test/a", "https://fail.test/b"}, 2, []string{"MALICIOUS", "COULD NOT CHECK"}},
		{"suspicious beats could not check", []string{"https://ads.tracker.test/c", "https://fail.test/d"}, 1, []string{"SUSPICIOUS", "COULD NOT CHECK"}},
		{"could not check beats clean", []string{"https://example.com/e", "https://fail.test/f"}, 3, []string{"CLEAN", "COULD NOT CHECK"}},
		{"file", []string{eicarFile}, 2, []string{"MALICIOUS        " + eicarFile + "  malscore 10.0/10 · family EICAR · task "}},
		{"missing file", []string{"./dist/app.exe", "dist/app.exe"}, 3, []string{"COULD NOT CHECK  ./dist/app.exe  no such file", "COULD NOT CHECK  dist/app.exe  no such file (write https://… to check it as a link)"}},
		{"directory", []string{t.TempDir()}, 3, []string{"not a regular file"}},
		{"not a link", []string{"https://exa mple/"}, 3, []string{"not a link I can check"}},
		// The service says clean; the bot's own signal says suspicious.
		{"lookalike", []string{"https://0kta.com/docs"}, 1, []string{"SUSPICIOUS       hxxps://0kta[.]com/docs  looks like okta.com (look-alike characters) · phishing "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := runCheckArgs(env, append([]string{"--sim"}, tc.args...)...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errOut)
			}
			targets := len(tc.args)
			if tc.args[0] == "--timeout" {
				targets -= 2
			}
			if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != targets {
				t.Errorf("want one line per target, got:\n%s", out)
			}
			for i, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("want %q (line %d) in:\n%s", w, i+1, out)
				}
			}
		})
	}
}

func TestCheckUsageErrorsExit4(t *testing.T) {
	t.Parallel()
	env := checkEnv(nil)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "verdictbot check: give at least one URL or file"},
		{[]string{"--bogus", "https://example.com/"}, "verdictbot check: flag provided but not defined: -bogus"},
		{[]string{"--timeout", "-1s", "https://example.com/"}, "--timeout must not be negative"},
		{[]string{"https://example.com/"}, "REPUTATION_URL and REPUTATION_API_KEY must be set to check links (or use --sim)"},
		{[]string{"main_test.go"}, "SANDBOX_URL and SANDBOX_API_KEY must be set to check files (or use --sim)"},
	} {
		code, out, errOut := runCheckArgs(env, tc.args...)
		if code != 4 || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("check %q: exit %d, stdout %q, stderr %q; want 4 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
	if code, _, errOut := runCheckArgs(merged(env, map[string]string{"VERDICTBOT_THRESHOLD_PHISING": "0.4,0.7"}), "--sim", "https://example.com/"); code != 4 || !strings.Contains(errOut, "did you mean VERDICTBOT_THRESHOLD_PHISHING?") {
		t.Errorf("a misspelt setting: exit %d, stderr %q", code, errOut)
	}
	// Help asked for goes to stdout, with exit 0 (cli_test covers every command).
	code, out, _ := runCheckArgs(env, "-h")
	if code != 0 || !strings.Contains(out, "4  usage or configuration error") {
		t.Errorf("-h: exit %d, stdout %q", code, out)
	}
}

func TestCheckJSON(t *testing.T) {
	t.Parallel()
	env := checkEnv(nil)
	file := apptest.WriteFile(t, "dropper.bin", "SIM:MALSCORE=4.5 SIM:FAMILY=Dropper")
	code, out, errOut := runCheckArgs(env, "--json", "--sim", "https://login.phish.test/verify", file, "http://localhost:8080/x",
		"--timeout", "2s", "https://pending.test/j")
	if code != 2 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var got []map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(got) != 4 {
		t.Fatalf("%d results:\n%s", len(got), out)
	}
	u, f, skip, pend := got[0], got[1], got[2], got[3]
	if u["target"] != "https://login.phish.test/verify" || u["kind"] != "url" || u["level"] != "malicious" || u["category"] != "phishing" ||
		u["scores"].(map[string]any)["phishing"] != 0.97 || len(u["task_id"].(string)) != 32 {
		t.Errorf("url: %v", u)
	}
	if f["target"] != file || f["kind"] != "file" || f["level"] != "suspicious" || f["malscore"] != 4.5 || f["family"] != "Dropper" ||
		f["task_id"] == nil || len(f["sha256"].(string)) != 64 {
		t.Errorf("file: %v", f)
	}
	if skip["level"] != "skipped" || skip["problem"] != "internal or reserved host name" || skip["task_id"] != nil {
		t.Errorf("skipped: %v", skip)
	}
	if pend["level"] != "unknown" || !strings.Contains(pend["problem"].(string), "did not finish in time") || pend["scores"] != nil {
		t.Errorf("could not check: %v", pend)
	}
}

// Against a simulator the test can see: files are looked up by hash before
// any upload, HTML files are files (not a sign-in page), and skipped links
// never reach the service.
func TestCheckAgainstConfiguredServices(t *testing.T) {
	t.Parallel()
	srv, base := simtest.Start(t, sim.Config{Profile: apptest.QuickSandbox()})
	env := checkEnv(map[string]string{"REPUTATION_URL": base, "REPUTATION_API_KEY": e2eKey, "SANDBOX_URL": base, "SANDBOX_API_KEY": e2eKey})
	sample := apptest.WriteFile(t, "eicar.txt", apptest.Eicar)
	page := apptest.WriteFile(t, "page.txt", "<!DOCTYPE html><html><body>hello</body></html>")
	code, out, errOut := runCheckArgs(env, sample, page, "http://10.0.0.7/admin", "https://example.com/")
	if code != 2 || !strings.Contains(out, "family EICAR") || strings.Contains(out, "already analysed") {
		t.Fatalf("first run: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "CLEAN            "+page+"  malscore ") {
		t.Errorf("the HTML file was not checked as a file:\n%s", out)
	}
	code, out, errOut = runCheckArgs(env, sample)
	if code != 2 || !strings.Contains(out, "(already analysed)") {
		t.Fatalf("second run: exit %d\n%s\n%s", code, out, errOut)
	}
	if n := srv.Count(sim.ServiceSandbox, sim.OpCreateFile); n != 2 {
		t.Errorf("%d uploads for two distinct files checked three times, want 2", n)
	}
	if n := srv.Count(sim.ServiceReputation, sim.OpScan); n != 1 {
		t.Errorf("%d URL submissions, want 1 (the private host is never sent)", n)
	}
	if tasks := srv.URLTasks("http://10.0.0.7/admin"); len(tasks) != 0 {
		t.Errorf("the private host reached the service: %v", tasks)
	}
	if strings.Contains(out+errOut, e2eKey) {
		t.Error("the key was printed")
	}
}

// TestCheckRefusesAPlainHTTPService: `verdictbot check` applies the
// services' URL rules (config's TestServiceURLsAreHTTPSOrLoopback), and
// says so.
func TestCheckRefusesAPlainHTTPService(t *testing.T) {
	t.Parallel()
	const svcPlain = "%s: plain http is allowed only to a loopback host (127.0.0.1, ::1, localhost), not %s: use https (the API key would cross the network in clear text), or name the host in VERDICTBOT_SERVICE_PLAIN_HTTP_HOSTS"
	env := checkEnv(map[string]string{"REPUTATION_URL": "http://urlarmor.example/", "REPUTATION_API_KEY": "k-1"})
	code, out, errOut := runCheckArgs(env, "https://example.com/")
	if code != checkExitUsage || !strings.Contains(errOut, fmt.Sprintf(svcPlain, "REPUTATION_URL", "urlarmor.example")) {
		t.Errorf("check against plain http: exit %d\n%s%s", code, out, errOut)
	}
}

// VERDICTBOT_LOOKALIKE sets what a lookalike makes its link: malicious
// exits 2, off leaves the service's clean.
func TestCheckLookalikeLevel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		level string
		code  int
		want  string
	}{{"malicious", 2, "MALICIOUS        hxxps://okta-login[.]com/  uses the name of okta.com in another domain"}, {"off", 0, "CLEAN            hxxps://okta-login[.]com/  phishing "}} {
		code, out, errOut := runCheckArgs(checkEnv(map[string]string{"VERDICTBOT_LOOKALIKE": tc.level}), "--sim", "https://okta-login.com/")
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("VERDICTBOT_LOOKALIKE=%s: exit %d, want %d and %q\nstdout:\n%s\nstderr:\n%s", tc.level, code, tc.code, tc.want, out, errOut)
		}
	}
}
