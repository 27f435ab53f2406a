package sim_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/sim"
)

// scanOnce asks base's URL service to scan a URL and returns the answer's
// HTTP status, or an error if nothing answers.
func scanOnce(ctx context.Context, base string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/api/k/scan/", strings.NewReader(`{"url":"https://example.com/"}`))
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		return resp.StatusCode, err
	}
	if id, _ := m["task_id"].(string); id == "" {
		return resp.StatusCode, errors.New("no task_id")
	}
	return resp.StatusCode, nil
}

func TestStartLocalServesUntilStopped(t *testing.T) {
	t.Parallel()
	base, stop, err := sim.StartLocal(sim.Config{Profile: sim.QuickProfile()})
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^http://127\.0\.0\.1:\d+$`).MatchString(base) {
		t.Errorf("base %q", base)
	}
	if code, err := scanOnce(t.Context(), base); err != nil || code != 200 {
		t.Fatalf("scan: %d %v", code, err)
	}
	stop()
	if _, err := scanOnce(t.Context(), base); err == nil {
		t.Error("the simulator still answers after stop")
	}
}

func TestServeStopsWhenTheContextEnds(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- sim.Serve(ctx, ln, sim.Config{}) }()

	if code, err := scanOnce(t.Context(), base); err != nil || code != 200 {
		t.Fatalf("scan: %d %v", code, err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve after cancel: %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	if _, err := scanOnce(t.Context(), base); err == nil {
		t.Error("the simulator still answers after Serve returned")
	}
}

func TestServeReportsAFailedListener(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	err = sim.Serve(t.Context(), ln, sim.Config{})
	if err == nil || !strings.HasPrefix(err.Error(), "serve: ") || !errors.Is(err, net.ErrClosed) {
		t.Errorf("Serve on a closed listener: %v", err)
	}
}

// TestNamedProfiles: the demo and quick profiles move by time, quick
// faster than demo on every step.
func TestNamedProfiles(t *testing.T) {
	t.Parallel()
	demo, quick := sim.DemoProfile(), sim.QuickProfile()
	if demo.Name != "demo" || quick.Name != "quick" || demo.PerPoll || quick.PerPoll {
		t.Fatalf("demo %+v, quick %+v", demo, quick)
	}
	if total := demo.URLPending + demo.URLProcessing; total != 2*time.Second {
		t.Errorf("demo URL total %v, want 2s (shell -h says ~2 s)", total)
	}
	if total := demo.SandboxPending + demo.SandboxRunning + demo.SandboxCompleted + demo.SandboxReporting; total != 5*time.Second {
		t.Errorf("demo file total %v, want 5s (shell -h says ~5 s)", total)
	}
	for _, d := range [][2]time.Duration{
		{quick.URLPending, demo.URLPending}, {quick.URLProcessing, demo.URLProcessing},
		{quick.SandboxPending, demo.SandboxPending}, {quick.SandboxRunning, demo.SandboxRunning},
		{quick.SandboxCompleted, demo.SandboxCompleted}, {quick.SandboxReporting, demo.SandboxReporting},
	} {
		if d[0] <= 0 || d[0] >= d[1] {
			t.Errorf("quick step %v, demo step %v: want 0 < quick < demo", d[0], d[1])
		}
	}
}
