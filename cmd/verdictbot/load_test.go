package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/sim"
)

// BenchmarkAckLatencyUnderLoad is the load check for issue 3's ack target:
// the fake Slack delivers 500 envelopes per second for 10 s to the real
// bot wiring (quiet channel, typical traffic: one message in five carries
// a link, drawn from 50 URLs) while it scans against the simulator. Ack
// latency is measured by the fake, from writing the envelope to the
// socket to receiving its ack. Everything (fake Slack, bot, simulator)
// shares the same process and cores.
//
//	go test -run '^$' -bench AckLatencyUnderLoad -benchtime 1x ./cmd/verdictbot/
func BenchmarkAckLatencyUnderLoad(b *testing.B) {
	if testing.Short() {
		b.Skip("10 s load run")
	}
	const (
		rate    = 500
		seconds = 10
	)
	for b.Loop() {
		h := startBot(b, map[string]string{"VERDICTBOT_CHANNEL_MODE": "quiet", "VERDICTBOT_LOG_LEVEL": "warn"},
			sim.Config{Profile: sim.Profile{Name: "load", URLPending: 200 * time.Millisecond, URLProcessing: time.Second}},
			slackfake.WithEchoOwnMessages(false))
		ctx, cancel := context.WithTimeout(context.Background(), (seconds+30)*time.Second)
		deliveries, err := h.slack.DeliverEvents(ctx, rate*seconds, rate, func(i int) any {
			text := fmt.Sprintf("status update %d: deploy finished, see the dashboard", i)
			if i%5 == 0 {
				text = fmt.Sprintf("have a look at <https://docs.example.com/page/%d|the page>", i%50)
			}
			return slackfake.MessageEvent{Channel: secChannel, User: alice, Text: text}
		})
		if err != nil {
			b.Fatal(err)
		}
		ids := make([]string, len(deliveries))
		for i, d := range deliveries {
			ids[i] = d.EnvelopeID
		}
		if err := h.slack.WaitAcked(ctx, ids...); err != nil {
			b.Fatalf("not every envelope was acked: %v", err)
		}
		cancel()
		st := h.slack.AckStats(ids...)
		if !st.ExactlyOnce() || st.Envelopes != rate*seconds {
			b.Fatalf("acks: %+v", st)
		}
		b.ReportMetric(float64(st.Envelopes), "envelopes")
		b.ReportMetric(float64(st.P50.Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(st.P99.Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(st.Max.Microseconds())/1000, "max-ms")
		b.ReportMetric(float64(st.Late), "late")
	}
}
