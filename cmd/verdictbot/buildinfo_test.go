package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestResolveBuild: the linker's values win; without them the module
// version `go install …@v` records and the VCS data Go embeds are used
// ("(devel)" is not a version); with nothing, dev and unknown.
func TestResolveBuild(t *testing.T) {
	t.Parallel()
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	platform := runtime.GOOS + "/" + runtime.GOARCH
	for _, tc := range []struct {
		name                  string
		version, commit, date string
		info                  *debug.BuildInfo
		want                  build
	}{
		{"release ldflags", "1.4.0", "abc1234", "2026-11-28T05:00:00Z",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
				Settings: vcs("vcs.revision", "0123456789abcdef0123", "vcs.time", "2026-01-01T00:00:00Z")},
			build{"1.4.0", "abc1234", "2026-11-28T05:00:00Z", "go1.26.8 " + platform}},
		{"go install module@version", "", "", "",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.4.0"}},
			build{"v1.4.0", "unknown", "unknown", "go1.26.8 " + platform}},
		{"go build in a dirty checkout", "", "", "",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
				Settings: vcs("vcs", "git", "vcs.revision", "0123456789abcdef0123", "vcs.time", "2026-01-01T00:00:00Z", "vcs.modified", "true")},
			build{"dev", "0123456789ab-dirty", "2026-01-01T00:00:00Z", "go1.26.8 " + platform}},
		{"go build -buildvcs=false", "", "", "",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			build{"dev", "unknown", "unknown", "go1.26.8 " + platform}},
		{"no build info", "", "", "", nil,
			build{"dev", "unknown", "unknown", runtime.Version() + " " + platform}},
	} {
		if got := resolveBuild(tc.version, tc.commit, tc.date, tc.info); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if got := (build{"1.4.0", "abc1234", "2026-11-28T05:00:00Z", "go1.26.8 linux/amd64"}).String(); got != "verdictbot 1.4.0 (commit abc1234, built 2026-11-28T05:00:00Z, go1.26.8 linux/amd64)" {
		t.Errorf("String() = %q", got)
	}
}

// TestVersionCommandInTestBinary: `verdictbot version` (and --version)
// prints the one line, with the test binary's values (no release
// ldflags: dev unless the toolchain recorded more).
func TestVersionCommandInTestBinary(t *testing.T) {
	t.Parallel()
	want := currentBuild().String() + "\n"
	for _, args := range [][]string{{"version"}, {"--version"}, {"-v"}} {
		code, out, errOut := runMain(nil, args...)
		if code != 0 || out != want || errOut != "" {
			t.Errorf("verdictbot %v: exit %d, stdout %q, stderr %q; want 0 and %q", args, code, out, errOut, want)
		}
	}
}

// TestVersionFromReleaseLdflags builds the program with the ldflags of
// .goreleaser.yaml (its templates filled in as GoReleaser would) and
// checks that `verdictbot version` prints the release's version, commit
// and date: a renamed variable, or a typo in the configuration's -X
// flags, would leave "dev" in a release.
func TestVersionFromReleaseLdflags(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the program")
	}
	raw, err := os.ReadFile("../../.goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Builds []struct {
			ID      string   `yaml:"id"`
			Main    string   `yaml:"main"`
			Ldflags []string `yaml:"ldflags"`
			Flags   []string `yaml:"flags"`
		} `yaml:"builds"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Builds) != 1 || cfg.Builds[0].Main != "./cmd/verdictbot" {
		t.Fatalf(".goreleaser.yaml: want one build of ./cmd/verdictbot, got %+v", cfg.Builds)
	}
	values := map[string]string{".Version": "1.4.0", ".ShortCommit": "abc1234", ".FullCommit": "abc1234def", ".Date": "2026-11-28T05:00:00Z"}
	tmpl := regexp.MustCompile(`\{\{\s*(\.[A-Za-z]+)\s*\}\}`)
	var ldflags []string
	for _, f := range cfg.Builds[0].Ldflags {
		ldflags = append(ldflags, tmpl.ReplaceAllStringFunc(f, func(m string) string {
			v, ok := values[tmpl.FindStringSubmatch(m)[1]]
			if !ok {
				t.Fatalf("ldflags %q: template %s is not one this test fills in", f, m)
			}
			return v
		}))
	}
	bin := filepath.Join(t.TempDir(), "verdictbot")
	args := append([]string{"build"}, cfg.Builds[0].Flags...)
	args = append(args, "-ldflags", strings.Join(ldflags, " "), "-o", bin, ".")
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("verdictbot version: %v", err)
	}
	want := regexp.MustCompile(`^verdictbot 1\.4\.0 \(commit abc1234, built 2026-11-28T05:00:00Z, go[0-9.a-z]+ ` + runtime.GOOS + "/" + runtime.GOARCH + `\)\n$`)
	if !want.Match(out) {
		t.Errorf("verdictbot version = %q, want %s", out, want)
	}
}
