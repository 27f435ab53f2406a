package deploy_test

// Checks of the systemd unit (deploy/systemd/verdictbot.service) and its
// environment file's example: the hardening issue 27 asks for is there,
// the state directory is the data directory, every secret is a
// placeholder, and every name is a setting. systemd-analyze verify, where
// it is installed, checks the unit as systemd would load it.

import (
	"bufio"
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/verdictbot/verdictbot/config"
	"github.com/verdictbot/verdictbot/internal/testutil"
)

const (
	systemdUnitFile = repoRoot + "deploy/systemd/verdictbot.service"
	systemdEnvFile  = repoRoot + "deploy/systemd/verdictbot.env.example"
)

// unitFile is a parsed unit: section → key → values, in order (a key may
// be repeated; an empty assignment resets the list, as systemd does).
type unitFile map[string]map[string][]string

func parseUnit(t *testing.T, path string) unitFile {
	t.Helper()
	u := unitFile{}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(readFile(t, path)))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			u[section] = map[string][]string{}
		case section == "":
			t.Fatalf("%s:%d: %q before any section", path, n, line)
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || strings.HasSuffix(line, `\`) {
				t.Fatalf("%s:%d: %q is not KEY=value on one line", path, n, line)
			}
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if v == "" {
				u[section][k] = []string{""}
				continue
			}
			u[section][k] = append(u[section][k], v)
		}
	}
	return u
}

// one returns the key's single value, failing if it is missing or repeated.
func (u unitFile) one(t *testing.T, section, key string) string {
	t.Helper()
	vs := u[section][key]
	if len(vs) != 1 {
		t.Errorf("[%s] %s: %d values %q, want one", section, key, len(vs), vs)
		return ""
	}
	return vs[0]
}

// TestDeploySystemdUnitIsHardened: the unit runs `verdictbot run` as a
// dynamic user whose only writable place is its state directory, which is
// VERDICTBOT_DATA_DIR; settings come from the EnvironmentFile; it is
// restarted on failure and given the documented grace before SIGKILL; and
// the hardening issue 27 lists is all there.
func TestDeploySystemdUnitIsHardened(t *testing.T) {
	t.Parallel()
	u := parseUnit(t, systemdUnitFile)
	for _, s := range []string{"Unit", "Service", "Install"} {
		if u[s] == nil {
			t.Fatalf("no [%s] section", s)
		}
	}
	if exec := strings.Fields(u.one(t, "Service", "ExecStart")); len(exec) != 2 || filepath.Base(exec[0]) != "verdictbot" || !filepath.IsAbs(exec[0]) || exec[1] != "run" {
		t.Errorf("ExecStart %q, want /…/verdictbot run", exec)
	}
	want := map[string]string{
		"DynamicUser":             "yes",
		"ProtectSystem":           "strict",
		"ProtectHome":             "yes",
		"PrivateTmp":              "yes",
		"NoNewPrivileges":         "yes",
		"Restart":                 "on-failure",
		"CapabilityBoundingSet":   "",
		"LockPersonality":         "yes",
		"MemoryDenyWriteExecute":  "yes",
		"RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
		"SystemCallFilter":        "@system-service",
		"TimeoutStopSec":          "15s", // documentedGrace: the process exits within 10 s
		"KillSignal":              "SIGTERM",
	}
	for k, v := range want {
		if got := u.one(t, "Service", k); got != v {
			t.Errorf("[Service] %s=%q, want %q", k, got, v)
		}
	}
	state := u.one(t, "Service", "StateDirectory")
	if state == "" || strings.Contains(state, "/") {
		t.Errorf("StateDirectory=%q, want one name under /var/lib", state)
	}
	envFile := strings.TrimPrefix(u.one(t, "Service", "EnvironmentFile"), "-")
	if !filepath.IsAbs(envFile) || !strings.HasPrefix(envFile, "/etc/") {
		t.Errorf("EnvironmentFile=%q, want a file under /etc", envFile)
	}
	if strings.HasPrefix(u.one(t, "Service", "EnvironmentFile"), "-") {
		t.Error("EnvironmentFile is optional (-): without the tokens the service fails later and less clearly")
	}
	env := map[string]string{}
	for _, e := range u["Service"]["Environment"] {
		k, v, _ := strings.Cut(strings.Trim(e, `"`), "=")
		env[k] = v
	}
	if d := env["VERDICTBOT_DATA_DIR"]; d != "%S/"+state {
		t.Errorf("VERDICTBOT_DATA_DIR=%q, want %%S/%s (the state directory, the only writable place)", d, state)
	}
	checkNamesAreSettings(t, "verdictbot.service Environment=", slices.Collect(maps.Keys(env)), nil)
	for _, k := range []string{"User", "Group", "ReadWritePaths"} {
		if _, ok := u["Service"][k]; ok {
			t.Errorf("[Service] %s is set: DynamicUser and StateDirectory make it unneeded (and a wider grant)", k)
		}
	}
	if a := u["Service"]["AmbientCapabilities"]; len(a) > 0 && !slices.Equal(a, []string{""}) {
		t.Errorf("AmbientCapabilities=%q, want none", a)
	}
	if w := u["Install"]["WantedBy"]; !slices.Contains(w, "multi-user.target") {
		t.Errorf("WantedBy %q, want multi-user.target", w)
	}
}

// TestDeploySystemdEnvExample: the example environment file names every
// secret setting the bot has, each as a REPLACE-… placeholder (commented
// out for the optional ones), names only settings, and leaves
// VERDICTBOT_DATA_DIR to the unit.
func TestDeploySystemdEnvExample(t *testing.T) {
	t.Parallel()
	line := regexp.MustCompile(`^#?\s*([A-Z][A-Z0-9_]*)=(.*)$`)
	seen := map[string]string{}
	for i, l := range strings.Split(string(readFile(t, systemdEnvFile)), "\n") {
		m := line.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		name, value := m[1], m[2]
		seen[name] = value
		if strings.ContainsAny(value, `"'`) {
			t.Errorf("line %d: %s's value is quoted: systemd keeps quotes only around the whole value", i+1, name)
		}
		if name == "VERDICTBOT_DATABASE_URL" {
			continue // TestDeployNoSecretIsCommitted checks its password is a <placeholder>
		}
		if secretName(name) && !strings.HasPrefix(value, "REPLACE-") {
			t.Errorf("line %d: %s=%q, want a REPLACE-… placeholder", i+1, name, value)
		}
	}
	for _, n := range config.Names() {
		if secretName(n) {
			if _, ok := seen[n]; !ok {
				t.Errorf("%s does not name the secret %s", systemdEnvFile, n)
			}
		}
	}
	if _, ok := seen["VERDICTBOT_DATA_DIR"]; ok {
		t.Error("the example sets VERDICTBOT_DATA_DIR: it would override the unit's state directory")
	}
	checkNamesAreSettings(t, "verdictbot.env.example", slices.Collect(maps.Keys(seen)), nil)
}

// TestDeploySystemdAnalyzeVerify runs `systemd-analyze verify` on the unit
// (ExecStart pointed at an executable that exists here) and fails on any
// complaint: an unknown key or a misplaced one is only a warning to
// systemd, which then ignores it.
func TestDeploySystemdAnalyzeVerify(t *testing.T) {
	t.Parallel()
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed: the unit is checked by TestDeploySystemdUnitIsHardened only")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	unit := strings.Replace(string(readFile(t, systemdUnitFile)), "ExecStart=/usr/local/bin/verdictbot", "ExecStart="+self, 1)
	path := filepath.Join(t.TempDir(), "verdictbot.service")
	if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(analyze, "verify", path)
	cmd.Env = testutil.ChildEnv("SYSTEMD_LOG_LEVEL=notice")
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
