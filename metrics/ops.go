package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// WatchConnection registers verdictbot_socket_mode_connected, read at
// scrape time from connected (bot.Bot.Connected): 1 while the Socket Mode
// connection is up.
func (m *Metrics) WatchConnection(connected func() bool) {
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "socket_mode_connected",
		Help: "1 while the Socket Mode connection to Slack is up, 0 while it is down or reconnecting."},
		func() float64 {
			if connected() {
				return 1
			}
			return 0
		}))
}

// WatchCards registers verdictbot_cards_scanning and
// verdictbot_cards_scanning_oldest_seconds, read at scrape time from
// scanning (cards.Cards.Scanning): the cards this process started that
// still wait for a verdict, and the age of the oldest. Analyses end by
// their deadlines (VERDICTBOT_URL_DEADLINE, VERDICTBOT_SANDBOX_DEADLINE),
// so a card older than those is stuck.
func (m *Metrics) WatchCards(scanning func(now time.Time) (int, time.Duration)) {
	m.Registry.MustRegister(cardsCollector(scanning))
}

var (
	cardsScanningDesc = prometheus.NewDesc(ns+"_cards_scanning",
		"Cards this process started that still wait for a verdict.", nil, nil)
	cardsOldestDesc = prometheus.NewDesc(ns+"_cards_scanning_oldest_seconds",
		"Age of the oldest card still waiting for a verdict (0 when none); above the analysis deadlines it is stuck.", nil, nil)
)

type cardsCollector func(now time.Time) (int, time.Duration)

func (cardsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- cardsScanningDesc
	ch <- cardsOldestDesc
}

func (f cardsCollector) Collect(ch chan<- prometheus.Metric) {
	n, oldest := f(time.Now())
	ch <- prometheus.MustNewConstMetric(cardsScanningDesc, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(cardsOldestDesc, prometheus.GaugeValue, oldest.Seconds())
}

// WatchAdminGroup registers verdictbot_admin_group_expired, read at scrape
// time from expired (commands.AdminGroup.Expired, nil-safe: 0 without
// VERDICTBOT_ADMIN_GROUP): 1 while the admin group's members have expired
// because every lookup failed for longer than its maximum age, so nobody
// is an admin through the group.
func (m *Metrics) WatchAdminGroup(expired func() bool) {
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "admin_group_expired",
		Help: "1 while VERDICTBOT_ADMIN_GROUP's members have expired (its lookups failed for over 15 minutes): nobody is an admin through the group, VERDICTBOT_ADMINS still are."},
		func() float64 {
			if expired != nil && expired() {
				return 1
			}
			return 0
		}))
}
