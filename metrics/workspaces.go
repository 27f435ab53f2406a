package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// MaxTeamLabels bounds the team label of verdictbot_workspace_events_total:
// the first this many workspaces seen get their own series, the rest
// count under team="other". An Enterprise Grid organisation can have
// thousands of workspaces; the other metrics carry no team label at all
// (a series per workspace for each of them would multiply the series by
// that many).
const MaxTeamLabels = 100

// Workspaces counts the work of an org-wide install per workspace.
type Workspaces struct {
	events *prometheus.CounterVec
	mu     sync.Mutex
	teams  map[string]bool
}

// WatchWorkspaces registers verdictbot_workspaces (the workspaces of an
// org-wide install by state, granted or revoked, read at scrape time from
// counts; 1 granted on a workspace install) and
// verdictbot_workspace_events_total (the messages, files, commands and
// clicks handled per workspace, bounded by MaxTeamLabels).
func (m *Metrics) WatchWorkspaces(counts func() (granted, revoked int)) *Workspaces {
	for _, state := range []string{"granted", "revoked"} {
		m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "workspaces",
			Help:        "Workspaces of the install by state: on Enterprise Grid, those an Org Admin granted the app or revoked; 1 granted on a workspace install.",
			ConstLabels: prometheus.Labels{"state": state}},
			func() float64 {
				g, r := counts()
				if state == "granted" {
					return float64(g)
				}
				return float64(r)
			}))
	}
	w := &Workspaces{teams: map[string]bool{},
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "workspace_events_total",
			Help: "Messages, files, slash commands and clicks handled, by workspace (team id; the first 100 seen, then \"other\")."}, []string{"team"})}
	m.Registry.MustRegister(w.events)
	return w
}

// Event counts one thing handled for team. A nil *Workspaces does nothing.
func (w *Workspaces) Event(team string) {
	if w == nil || team == "" {
		return
	}
	w.mu.Lock()
	if !w.teams[team] {
		if len(w.teams) >= MaxTeamLabels {
			team = "other"
		} else {
			w.teams[team] = true
		}
	}
	w.mu.Unlock()
	w.events.WithLabelValues(team).Inc()
}
