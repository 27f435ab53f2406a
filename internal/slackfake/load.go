package slackfake

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// DeliverEvents delivers n events at perSecond events per second (≤ 0: as
// fast as possible) and returns their deliveries. event(i) makes the i-th
// event: a MessageEvent goes through DeliverMessage, anything else through
// DeliverEvent. With event nil each is a user message with a link in channel
// CLOAD00001. It stops early when ctx ends.
func (s *Server) DeliverEvents(ctx context.Context, n int, perSecond float64, event func(i int) any) ([]Delivery, error) {
	if event == nil {
		event = func(i int) any {
			return MessageEvent{Channel: "CLOAD00001", User: "ULOAD00001", Text: fmt.Sprintf("load %d <https://load.example/%d>", i, i)}
		}
	}
	out := make([]Delivery, 0, n)
	start := time.Now()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for i := range n {
		if perSecond > 0 {
			if wait := time.Until(start.Add(time.Duration(float64(i) / perSecond * float64(time.Second)))); wait > 0 {
				if timer == nil {
					timer = time.NewTimer(wait)
				} else {
					timer.Reset(wait)
				}
				select {
				case <-timer.C:
				case <-ctx.Done():
					return out, ctx.Err()
				}
			}
		}
		if err := ctx.Err(); err != nil {
			return out, err
		}
		var d Delivery
		var err error
		if m, ok := event(i).(MessageEvent); ok {
			d, err = s.DeliverMessage(m)
		} else {
			d, err = s.DeliverEvent(event(i))
		}
		if err != nil {
			return out, fmt.Errorf("event %d: %w", i, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// AckStats summarises acknowledgements. Latency is from writing an envelope
// to the socket to its first ack.
type AckStats struct {
	Envelopes    int // envelopes written to a socket
	Acked        int // … acked at least once
	Unacked      int
	Duplicated   int // … acked more than once
	UnknownAcks  int // acks naming no envelope the fake sent
	Redeliveries int // envelopes that were retries (retry_attempt > 0)
	Late         int // acked after the ack timeout
	P50, P90     time.Duration
	P99, Max     time.Duration
	Mean         time.Duration
}

// ExactlyOnce reports whether every envelope was acked exactly once.
func (a AckStats) ExactlyOnce() bool {
	return a.Unacked == 0 && a.Duplicated == 0 && a.UnknownAcks == 0
}

// AckStats computes statistics over the listed envelopes, or over all
// envelopes written to a socket when none are listed.
func (st *State) AckStats(envelopeIDs ...string) AckStats {
	var envs []*Envelope
	if len(envelopeIDs) == 0 {
		envs = st.envelopes
	} else {
		for _, id := range envelopeIDs {
			if e := st.envByID[id]; e != nil {
				envs = append(envs, e)
			}
		}
	}
	var a AckStats
	var lat []time.Duration
	var sum time.Duration
	for _, e := range envs {
		if e.SentAt.IsZero() {
			continue
		}
		a.Envelopes++
		if e.RetryAttempt > 0 {
			a.Redeliveries++
		}
		if len(e.Acks) == 0 {
			a.Unacked++
			continue
		}
		a.Acked++
		if len(e.Acks) > 1 {
			a.Duplicated++
		}
		l := e.Acks[0].Latency
		if st.ackTimeout > 0 && l > st.ackTimeout {
			a.Late++
		}
		lat = append(lat, l)
		sum += l
	}
	if len(envelopeIDs) == 0 {
		for _, k := range st.acks {
			if k.Unknown {
				a.UnknownAcks++
			}
		}
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		a.P50, a.P90, a.P99 = percentile(lat, 50), percentile(lat, 90), percentile(lat, 99)
		a.Max, a.Mean = lat[len(lat)-1], sum/time.Duration(len(lat))
	}
	return a
}

// AckStats computes statistics over the listed envelopes, or all of them.
func (s *Server) AckStats(envelopeIDs ...string) (a AckStats) {
	s.Inspect(func(st *State) { a = st.AckStats(envelopeIDs...) })
	return a
}

// percentile is the nearest-rank percentile of sorted values.
func percentile(sorted []time.Duration, p int) time.Duration {
	rank := (p*len(sorted) + 99) / 100
	return sorted[max(rank, 1)-1]
}
