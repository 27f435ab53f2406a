package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/verdictbot/verdictbot/scan"
)

// TestOperatorSeries: the series the alerts and the dashboard in deploy/
// read for Socket Mode, cards stuck scanning and recheck lag follow their
// sources.
func TestOperatorSeries(t *testing.T) {
	m := New(func() int { return 0 }, func() int { return 0 }, func() bool { return false })
	connected := false
	m.WatchConnection(func() bool { return connected })
	scanning, oldest := 0, time.Duration(0)
	m.WatchCards(func(time.Time) (int, time.Duration) { return scanning, oldest })

	start := testutil.ToFloat64(m.recheckLast)
	if now := float64(time.Now().Unix()); start < now-5 || start > now+1 {
		t.Fatalf("last recheck timestamp %v before any run; want the start time (%v)", start, now)
	}
	m.RecheckRun(scan.RunStats{Follower: true, Lag: time.Hour})
	if got := testutil.ToFloat64(m.recheckLag); got != 0 {
		t.Fatalf("a follower's tick set the lag to %v", got)
	}
	time.Sleep(10 * time.Millisecond)
	m.RecheckRun(scan.RunStats{Checked: 3, Lag: 90 * time.Minute})
	if got := testutil.ToFloat64(m.recheckLag); got != 5400 {
		t.Fatalf("recheck lag %v, want 5400", got)
	}
	if got := testutil.ToFloat64(m.recheckLast); got <= start {
		t.Fatalf("a run did not move the last-run timestamp: %v then %v", start, got)
	}

	want := func(text string) {
		t.Helper()
		if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(text),
			"verdictbot_socket_mode_connected", "verdictbot_cards_scanning", "verdictbot_cards_scanning_oldest_seconds"); err != nil {
			t.Fatal(err)
		}
	}
	want(`
# HELP verdictbot_cards_scanning Cards this process started that still wait for a verdict.
# TYPE verdictbot_cards_scanning gauge
verdictbot_cards_scanning 0
# HELP verdictbot_cards_scanning_oldest_seconds Age of the oldest card still waiting for a verdict (0 when none); above the analysis deadlines it is stuck.
# TYPE verdictbot_cards_scanning_oldest_seconds gauge
verdictbot_cards_scanning_oldest_seconds 0
# HELP verdictbot_socket_mode_connected 1 while the Socket Mode connection to Slack is up, 0 while it is down or reconnecting.
# TYPE verdictbot_socket_mode_connected gauge
verdictbot_socket_mode_connected 0
`)
	connected, scanning, oldest = true, 4, 95*time.Second
	want(`
# HELP verdictbot_cards_scanning Cards this process started that still wait for a verdict.
# TYPE verdictbot_cards_scanning gauge
verdictbot_cards_scanning 4
# HELP verdictbot_cards_scanning_oldest_seconds Age of the oldest card still waiting for a verdict (0 when none); above the analysis deadlines it is stuck.
# TYPE verdictbot_cards_scanning_oldest_seconds gauge
verdictbot_cards_scanning_oldest_seconds 95
# HELP verdictbot_socket_mode_connected 1 while the Socket Mode connection to Slack is up, 0 while it is down or reconnecting.
# TYPE verdictbot_socket_mode_connected gauge
verdictbot_socket_mode_connected 1
`)
}

// TestAdminGroupExpiredSeries: verdictbot_admin_group_expired follows the
// admin group (0 with no group at all).
func TestAdminGroupExpiredSeries(t *testing.T) {
	for _, tc := range []struct {
		name    string
		expired func() bool
		want    float64
	}{
		{"no group", nil, 0},
		{"fresh", func() bool { return false }, 0},
		{"expired", func() bool { return true }, 1},
	} {
		m := New(func() int { return 0 }, func() int { return 0 }, func() bool { return false })
		m.WatchAdminGroup(tc.expired)
		mfs, err := m.Registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := -1.0
		for _, mf := range mfs {
			if mf.GetName() == "verdictbot_admin_group_expired" {
				got = mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		if got != tc.want {
			t.Errorf("%s: verdictbot_admin_group_expired = %v, want %v", tc.name, got, tc.want)
		}
	}
}
