package scan_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/reputation"
	"github.com/verdictbot/verdictbot/scan"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
)

// Settings of BenchmarkNewLinkBehindResumed.
const (
	resumedBacklog = 1000 // analyses in flight when the process restarted
	newLinkSeconds = 20   // how long the service takes for the new link
)

// resumedReportLimit is the client's report budget: the production default
// (reputation.DefaultReportLimit, 5/s), which a resumed backlog of 1,000
// analyses (each a status and a result call at least) keeps busy for
// minutes.
var resumedReportLimit = reputation.DefaultReportLimit

// BenchmarkNewLinkBehindResumed is issue 14's "new work first" target: a
// restart with 1,000 analyses in flight does not slow the next new link's
// verdict by more than 1 s. Each iteration runs, over real HTTP and real
// time against the simulator, with the production report budget (5/s):
//
//   - alone: one new link whose analysis takes 20 s, nothing else;
//   - behind-1000-resumed: 1,000 analyses that finished at the service
//     while the bot was down are resumed (CheckOptions.TaskID, as the card
//     replay does), and 2 s later, with the resumed analyses queued for
//     the report budget, the same new link is checked.
//
// Metrics: lag-s, the time from the service finishing the new link's
// analysis to Check returning its verdict (the card is updated right
// after), and total-s, from the Check call to its return; resumed-done,
// how many of the backlog had their verdict by then (the backlog keeps
// moving). The difference of lag-s between the two is the slowdown.
//
//	go test -run '^$' -bench NewLinkBehindResumed -benchtime 1x ./scan/
//
// One run takes about a minute. Skipped with -short.
func BenchmarkNewLinkBehindResumed(b *testing.B) {
	if testing.Short() {
		b.Skip("takes a minute of real time")
	}
	for _, backlog := range []int{0, resumedBacklog} {
		name := "alone"
		if backlog > 0 {
			name = fmt.Sprintf("behind-%d-resumed", backlog)
		}
		b.Run(name, func(b *testing.B) {
			var lag, total, waited time.Duration
			var done int64
			for i := 0; i < b.N; i++ {
				r := runNewLinkBehind(b, backlog, i)
				lag += r.lag
				total += r.total
				waited += r.waited
				done += r.resumedDone
			}
			n := float64(b.N)
			b.ReportMetric(lag.Seconds()/n, "lag-s")
			b.ReportMetric(total.Seconds()/n, "total-s")
			b.ReportMetric(waited.Seconds()/n, "budget-wait-s")
			b.ReportMetric(float64(done)/n, "resumed-done")
		})
	}
}

type newLinkRun struct {
	lag, total, waited time.Duration
	resumedDone        int64
}

func runNewLinkBehind(b *testing.B, backlog, iter int) newLinkRun {
	srv, base := simtest.Start(b, sim.Config{Profile: sim.RealisticProfile(), MaxLog: 1 << 20})
	// The backlog was submitted by the previous process: created here with
	// a client of its own, without client-side budgets.
	pre, err := reputation.New(base, "bench-key", reputation.WithRateLimits(reputation.Limit{}, reputation.Limit{}))
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]string, backlog)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range backlog {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			sub, err := pre.Scan(context.Background(), fmt.Sprintf("https://resumed-%d.d1s.test/%d", iter, i))
			if err != nil {
				b.Error(err)
				return
			}
			ids[i] = sub.TaskID
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	time.Sleep(1500 * time.Millisecond) // every backlog analysis has finished at the service

	// The new link's requests are the only high-priority ones: their
	// budget waits are what the backlog costs it.
	var (
		waited atomic.Int64
		mu     sync.Mutex
		trail  []string // the new link's requests
	)
	rep, err := reputation.New(base, "bench-key", reputation.WithRateLimits(reputation.DefaultRunLimit, resumedReportLimit),
		reputation.WithObserver(func(ev reputation.Event) {
			if ev.Priority != "high" {
				return
			}
			if ev.IsWait {
				waited.Add(int64(ev.Wait))
				return
			}
			mu.Lock()
			trail = append(trail, fmt.Sprintf("%s#%d %d %s %.0fms", ev.Op, ev.Attempt, ev.Status, ev.Reason, float64(ev.Duration.Microseconds())/1000))
			mu.Unlock()
		}))
	if err != nil {
		b.Fatal(err)
	}
	u := scan.NewURLs(rep, scan.URLOptions{})
	defer u.Close()
	var resumedDone atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i, id := range ids {
		wg.Go(func() {
			v := u.Check(ctx, fmt.Sprintf("https://resumed-%d.d1s.test/%d", iter, i), scan.CheckOptions{TaskID: id})
			if v.Err == nil {
				resumedDone.Add(1)
			}
		})
	}
	if backlog > 0 {
		time.Sleep(2 * time.Second) // the restart's replay is under way
	}
	start := time.Now()
	v := u.Check(context.Background(), fmt.Sprintf("https://new-%d.d%ds.test/", iter, newLinkSeconds), scan.CheckOptions{})
	returned := time.Now()
	r := newLinkRun{total: returned.Sub(start), waited: time.Duration(waited.Load()), resumedDone: resumedDone.Load()}
	cancel()
	wg.Wait()
	if v.Err != nil {
		b.Fatalf("new link: %v", v.Err)
	}
	task, ok := srv.URLTask(v.TaskID)
	if !ok {
		b.Fatalf("task %s unknown to the simulator", v.TaskID)
	}
	r.lag = returned.Sub(task.Created.Add(newLinkSeconds * time.Second))
	mu.Lock()
	defer mu.Unlock()
	b.Logf("%s: new link lag %.2fs, total %.2fs, %d polls, %.2fs waiting for the budget; %d of %d resumed analyses done by then; requests: %s",
		b.Name(), r.lag.Seconds(), r.total.Seconds(), v.Polls, r.waited.Seconds(), r.resumedDone, backlog, strings.Join(trail, ", "))
	return r
}
