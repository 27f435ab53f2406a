package sim_test

import (
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/sim"
)

// parseFlags registers the simulator's flags on a new flag set, parses
// args and returns the configuration, the address and Config's error.
func parseFlags(t *testing.T, args ...string) (sim.Config, string, error) {
	t.Helper()
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := sim.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	cfg, err := f.Config()
	return cfg, f.Addr(), err
}

func TestFlagsDefaults(t *testing.T) {
	t.Parallel()
	cfg, addr, err := parseFlags(t)
	if err != nil {
		t.Fatal(err)
	}
	if addr != "127.0.0.1:8099" {
		t.Errorf("addr %q", addr)
	}
	limits := sim.Limits{RunRate: 2, ReportRate: 10}
	want := sim.Config{
		Profile:          sim.RealisticProfile(),
		ReputationLimits: limits, SandboxLimits: limits,
		ThrottleStyle: sim.ThrottleJSON,
		Faults:        sim.Faults{Seed: 1},
		ScoreScale:    1,
		Shots:         sim.DefaultShots,
		MaxFileSize:   sim.DefaultMaxFileSize,
		FirstTaskID:   sim.DefaultFirstTaskID,
		Location:      time.UTC,
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("defaults\n got %+v\nwant %+v", cfg, want)
	}
}

func TestFlagsEverySwitch(t *testing.T) {
	t.Parallel()
	cfg, addr, err := parseFlags(t,
		"--addr", "0.0.0.0:0", "--profile", "fast", "--keys", " a, ,b ,", "--run-rate", "0.5", "--report-rate", "0",
		"--quota", "7", "--quota-403", "--throttle-style", "drf", "--fail-rate", "0.25", "--fail-every", "3",
		"--fail-seed", "9", "--delay", "20ms", "--score-scale", "100", "--strict-http", "--disposition-record-only",
		"--cape-compat", "--redirect-no-slash", "--omit-report-error", "--legacy-2021", "--chaos", "--shots", "0",
		"--shuffle-shots", "--archive-zip", "--shots-dir-missing", "--max-file-size", "42", "--first-task-id", "5",
		"--base-url", "https://cape.example", "--tz", "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	limits := sim.Limits{RunRate: 0.5, ReportRate: 0, Quota: 7}
	want := sim.Config{
		Keys:             []string{"a", "b"},
		Profile:          sim.FastProfile(),
		ReputationLimits: limits, SandboxLimits: limits,
		QuotaForbidden: true,
		ThrottleStyle:  sim.ThrottleDRF,
		Faults:         sim.Faults{ErrorRate: 0.25, ErrorEvery: 3, Seed: 9, Delay: 20 * time.Millisecond},
		ScoreScale:     100,
		StrictHTTP:     true, DispositionRecordOnly: true, CAPECompat: true, RedirectNoSlash: true,
		OmitReportError: true, Legacy2021: true, Chaos: true,
		Shots: 0, ShuffleShots: true, ArchiveZip: true, ShotsDirMissing: true,
		MaxFileSize: 42, FirstTaskID: 5, BaseURL: "https://cape.example",
		Location: berlin,
	}
	if addr != "0.0.0.0:0" {
		t.Errorf("addr %q", addr)
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("config\n got %+v\nwant %+v", cfg, want)
	}
	if cfg, _, _ := parseFlags(t, "--throttle-style", "html"); cfg.ThrottleStyle != sim.ThrottleHTML {
		t.Errorf("--throttle-style html: %v", cfg.ThrottleStyle)
	}
	// make sim's profile.
	if cfg, _, _ := parseFlags(t, "--profile", "demo"); cfg.Profile != sim.DemoProfile() {
		t.Errorf("--profile demo: %+v", cfg.Profile)
	}
}

// TestFlagsErrors: each wrong value is refused with a message naming the
// flag, exactly as `verdictbot sim` prints it.
func TestFlagsErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--profile", "slow"}, `--profile: want fast, demo or realistic, got "slow"`},
		{[]string{"--profile", "Demo"}, `--profile: want fast, demo or realistic, got "Demo"`},
		{[]string{"--run-rate", "-1"}, "--run-rate, --report-rate and --quota must not be negative"},
		{[]string{"--report-rate", "-0.5"}, "--run-rate, --report-rate and --quota must not be negative"},
		{[]string{"--quota", "-1"}, "--run-rate, --report-rate and --quota must not be negative"},
		{[]string{"--throttle-style", "xml"}, `--throttle-style: want json, drf or html, got "xml"`},
		{[]string{"--fail-rate", "2"}, "--fail-rate: want 0–1, got 2"},
		{[]string{"--fail-rate", "-0.1"}, "--fail-rate: want 0–1, got -0.1"},
		{[]string{"--fail-every", "-1"}, "--fail-every and --delay must not be negative"},
		{[]string{"--delay", "-1s"}, "--fail-every and --delay must not be negative"},
		{[]string{"--score-scale", "10"}, "--score-scale: want 1 or 100, got 10"},
		{[]string{"--tz", "Mars/Base"}, "--tz: unknown time zone Mars/Base"},
	} {
		_, _, err := parseFlags(t, tc.args...)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestFlagsUsage: the flag set lists every flag with its default, as
// `verdictbot sim -h` prints them.
func TestFlagsUsage(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	sim.AddFlags(fs)
	var b strings.Builder
	fs.SetOutput(&b)
	fs.PrintDefaults()
	for _, want := range []string{
		"-addr string\n    \tlisten address (default \"127.0.0.1:8099\")",
		"-profile string\n    \ttask progression: fast (one status per poll), demo (by time: a URL ~2 s, a file ~5 s) or realistic (by time: a URL ~12 s, a file ~4.5 min) (default \"realistic\")",
		"-max-file-size int\n    \tsandbox upload limit in bytes (default 30000000)",
		"-first-task-id int\n    \tfirst sandbox task id (default 1000)",
		"-tz string\n    \ttime zone of the services' timestamps (IANA name) (default \"UTC\")",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("usage lacks %q:\n%s", want, b.String())
		}
	}
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n != 28 {
		t.Errorf("%d flags, want 28", n)
	}
}
