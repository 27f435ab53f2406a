package scan

import (
	"errors"
	"strings"
	"testing"

	"github.com/verdictbot/verdictbot/sim/simtest"

	"github.com/verdictbot/verdictbot/reputation"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/verdict"
)

// lookupErrOf asserts err is a *LookupError and returns it.
func lookupErrOf(t *testing.T, what string, err error) *LookupError {
	t.Helper()
	var le *LookupError
	if !errors.As(err, &le) {
		t.Fatalf("%s: err = %T %v, want a *LookupError", what, err, err)
	}
	return le
}

func TestURLStatusAndReportGoThroughScan(t *testing.T) {
	t.Parallel()
	u, srv := newURLs(t, sim.Config{}, nil)
	v := u.Check(t.Context(), "https://login.phish.test/verify", CheckOptions{})
	if v.Err != nil || v.TaskID == "" {
		t.Fatalf("check: %+v", v)
	}
	st, err := u.Status(t.Context(), v.TaskID)
	if err != nil || st != string(reputation.StatusCompleted) {
		t.Fatalf("Status = %q, %v", st, err)
	}
	if err := u.Report(t.Context(), v.TaskID, verdict.CatPhishing, "fp"); err != nil {
		t.Fatalf("Report: %v", err)
	}
	if n := srv.Count(sim.ServiceReputation, sim.OpVerdictReport); n != 1 {
		t.Errorf("%d verdict reports reached the service, want 1", n)
	}

	unknown := strings.Repeat("ab", 16)
	_, err = u.Status(t.Context(), unknown)
	if le := lookupErrOf(t, "unknown status", err); !le.NotFound || !errors.Is(err, ErrNotFound) || le.Throttled() || le.KeyRefused() {
		t.Errorf("unknown task: %+v", le)
	}
	if err := u.Report(t.Context(), unknown, verdict.CatPhishing, "fp"); !errors.Is(err, ErrNotFound) {
		t.Errorf("report of an unknown task: %v", err)
	}
	// A refusal keeps the service's own text; it is not "not found".
	err = u.Report(t.Context(), v.TaskID, verdict.CatPhishing, "FP")
	if le := lookupErrOf(t, "bad option", err); le.NotFound || le.Message != "Option error." || le.Reason != "api" {
		t.Errorf("bad option: %+v", le)
	}
	if !errors.Is(err, reputation.ErrOption) {
		t.Errorf("the client's sentinel is lost: %v", err)
	}
}

func TestURLLookupClassifiesKeyAndQuota(t *testing.T) {
	t.Parallel()
	_, base := simtest.Start(t, sim.Config{Keys: []string{"the-right-key"}, ReputationLimits: sim.Limits{Quota: 1}})
	wrong, err := reputation.New(base, "the-wrong-key", reputation.WithRateLimits(reputation.Limit{}, reputation.Limit{}),
		reputation.WithRetries(-1, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	u := NewURLs(wrong, URLOptions{Wait: fastWait})
	t.Cleanup(u.Close)
	_, err = u.Status(t.Context(), strings.Repeat("ab", 16))
	le := lookupErrOf(t, "wrong key", err)
	if !le.KeyRefused() || le.NotFound || le.Throttled() {
		t.Errorf("wrong key: %+v", le)
	}
	if strings.Contains(err.Error(), "the-wrong-key") {
		t.Errorf("the key is in the error: %v", err)
	}

	right, err := reputation.New(base, "the-right-key", reputation.WithRateLimits(reputation.Limit{}, reputation.Limit{}),
		reputation.WithRetries(-1, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	u2 := NewURLs(right, URLOptions{Wait: fastWait})
	t.Cleanup(u2.Close)
	id := strings.Repeat("cd", 16)
	_, _ = u2.Status(t.Context(), id) // uses the quota of one
	_, err = u2.Status(t.Context(), id)
	if le := lookupErrOf(t, "quota", err); !le.Throttled() || le.Reason != "quota" || le.NotFound {
		t.Errorf("quota: %+v", le)
	}
}

func TestFilesTaskAndSampleGoThroughScan(t *testing.T) {
	t.Parallel()
	e := newFileEnv(t, sim.Config{}, nil)
	content := []byte("MZ lookup SIM:MALSCORE=7.5")
	v := e.files.Check(t.Context(), e.share("lookup.exe", content), FileCheckOptions{})
	if v.Err != nil || v.TaskID == "" {
		t.Fatalf("check: %+v", v)
	}
	task, err := e.files.Task(t.Context(), v.TaskID)
	if err != nil || task.ID != v.TaskID || task.Status != "reported" || !task.HaveTimes || task.AddedOn == "" || task.CompletedOn == "" {
		t.Fatalf("Task = %+v, %v", task, err)
	}
	md, s1, s256 := sums(content)
	for _, h := range []string{md, s1, s256} {
		s, err := e.files.Sample(t.Context(), h)
		if err != nil {
			t.Fatalf("Sample(%s): %v", h, err)
		}
		if s.SHA256 != s256 || s.MD5 != md || s.SHA1 != s1 || s.Size != int64(len(content)) || len(s.Tasks) != 1 || s.Tasks[0].ID != v.TaskID {
			t.Errorf("Sample(%s) = %+v", h, s)
		}
		if s.Report == nil || s.Report.TaskID != v.TaskID || s.Report.MalScore != 7.5 {
			t.Errorf("Sample(%s).Report = %+v", h, s.Report)
		}
	}

	_, err = e.files.Sample(t.Context(), strings.Repeat("0", 64))
	if le := lookupErrOf(t, "unknown sample", err); !le.NotFound || !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown sample: %+v", le)
	}
	_, err = e.files.Task(t.Context(), "999999")
	if le := lookupErrOf(t, "unknown task", err); !le.NotFound || le.Message == "" {
		t.Errorf("unknown task: %+v", le)
	}
}

func TestProblemNamesEitherServicesFailure(t *testing.T) {
	t.Parallel()
	_, base := simtest.Start(t, sim.Config{ReputationLimits: sim.Limits{Quota: 1}})
	rep, err := reputation.New(base, simKey, reputation.WithRateLimits(reputation.Limit{}, reputation.Limit{}), reputation.WithRetries(-1, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = rep.Status(t.Context(), strings.Repeat("ab", 16))
	_, err = rep.Status(t.Context(), strings.Repeat("ab", 16))
	if got := Problem("URL service", err); got != "our URL service quota is used up" {
		t.Errorf("quota: %q (%v)", got, err)
	}
	e := newFileEnv(t, sim.Config{}, nil)
	_, err = e.sb.Status(t.Context(), "999999")
	if got := Problem("sandbox", err); got != "the sandbox said: Task does not exist" {
		t.Errorf("sandbox refusal: %q (%v)", got, err)
	}
	if got := Problem("sandbox", reasonError("server")); got != "the sandbox answered with an error" {
		t.Errorf("a failure whose Reason is server: %q", got)
	}
}

// reasonError is a failure that classifies itself, as a fetcher's errors do
// (slackfile.DownloadError).
type reasonError string

func (e reasonError) Error() string  { return "failed: " + string(e) }
func (e reasonError) Reason() string { return string(e) }
