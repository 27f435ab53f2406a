package apiclient

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

func TestShareDividesEachBudget(t *testing.T) {
	t.Parallel()
	c, _, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {}, func(cfg *Config) {
		cfg.RunLimit = Limit{Rate: 4, Burst: 5}
		cfg.ReportLimit = Limit{} // unlimited
	})
	for _, tc := range []struct {
		n    int
		want Limit
	}{
		{2, Limit{Rate: 2, Burst: 3}},
		{3, Limit{Rate: 4.0 / 3, Burst: 2}},
		{10, Limit{Rate: 0.4, Burst: 1}}, // the burst never drops below 1
		{0, Limit{Rate: 4, Burst: 5}},    // n < 1 counts as 1
		{5, Limit{Rate: 0.8, Burst: 1}},
		{1, Limit{Rate: 4, Burst: 5}}, // restored exactly
	} {
		c.Share(tc.n)
		if got := c.CurrentLimit(Run); got != tc.want {
			t.Errorf("Share(%d): run budget %+v, want %+v", tc.n, got, tc.want)
		}
		if got := c.CurrentLimit(Report); got != (Limit{}) {
			t.Errorf("Share(%d): the unlimited report budget became %+v", tc.n, got)
		}
		if l := c.limiters[Report].Limit(); l != rate.Inf {
			t.Errorf("Share(%d): report limiter at %v, want rate.Inf", tc.n, l)
		}
	}
}

func TestShareOfABurstBelowOne(t *testing.T) {
	t.Parallel()
	c, _, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {}, func(cfg *Config) {
		cfg.RunLimit = Limit{Rate: 1, Burst: 0}
	})
	c.Share(3)
	if got := c.CurrentLimit(Run); got.Burst != 1 {
		t.Errorf("shared burst %d, want 1", got.Burst)
	}
	c.Share(1)
	if got := c.CurrentLimit(Run); got != (Limit{Rate: 1, Burst: 1}) {
		t.Errorf("restored budget %+v, want the configured rate with burst 1", got)
	}
}

// TestShareSpacesReservations reads the spacing the limiter hands out at a
// fixed instant: it is 1/rate, so n replicas are spaced n times wider.
func TestShareSpacesReservations(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n       int
		burst   int
		spacing time.Duration
	}{
		{1, 4, 250 * time.Millisecond},
		{2, 2, 500 * time.Millisecond},
		{4, 1, time.Second},
	} {
		c, _, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {}, func(cfg *Config) {
			cfg.RunLimit = Limit{Rate: 4, Burst: 4}
		})
		c.Share(tc.n)
		lim := c.limiters[Run]
		t0 := time.Now()
		if r := lim.ReserveN(t0, tc.burst); !r.OK() || r.DelayFrom(t0) != 0 {
			t.Fatalf("n=%d: the shared burst of %d is not available at once", tc.n, tc.burst)
		}
		for i := 1; i <= 2; i++ {
			r := lim.ReserveN(t0, 1)
			if got, want := r.DelayFrom(t0), time.Duration(i)*tc.spacing; got != want {
				t.Errorf("n=%d: token %d after the burst due in %v, want %v", tc.n, i, got, want)
			}
		}
	}
}

// TestShareHoldsRequestsToTheShare sends run requests to a real server
// until the budget refuses one: with a rate of one an hour, what goes out
// is the burst, and a wait for the next token exceeds the context's
// deadline at once (no timing involved). A fresh bucket holds the full
// configured burst; sharing drops the tokens above the replica's share.
func TestShareHoldsRequestsToTheShare(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ n, want int }{{1, 4}, {2, 2}, {3, 2}, {8, 1}} {
		t.Run(fmt.Sprint("n=", tc.n), func(t *testing.T) {
			t.Parallel()
			var served atomic.Int64
			c, _, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
				served.Add(1)
				fmt.Fprint(w, `{"error":false}`)
			}, func(cfg *Config) {
				cfg.RunLimit = Limit{Rate: 1.0 / 3600, Burst: 4}
			})
			c.Share(tc.n)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			sent := 0
			for range 10 {
				err := c.DoJSON(ctx, Request{Op: "scan", Budget: Run, Method: http.MethodPost, Path: []string{"scan"}}, nil)
				if err != nil {
					break
				}
				sent++
			}
			if sent != tc.want || served.Load() != int64(tc.want) {
				t.Fatalf("n=%d: %d requests sent, %d served; want %d", tc.n, sent, served.Load(), tc.want)
			}
			// The report budget is another bucket: still open.
			if err := c.DoJSON(ctx, Request{Op: "status", Budget: Report, Method: http.MethodGet, Path: []string{"status"}}, nil); err != nil {
				t.Fatalf("report request after the run budget ran out: %v", err)
			}
		})
	}
}

// TestShareWhileRequesting changes n while requests are under way; run
// with -race it checks that Share is safe for concurrent use.
func TestShareWhileRequesting(t *testing.T) {
	t.Parallel()
	c, _, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"error":false}`)
	}, func(cfg *Config) {
		cfg.RunLimit = Limit{Rate: 10000, Burst: 100}
		cfg.ReportLimit = Limit{Rate: 10000, Burst: 100}
	})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			b := []Budget{Run, Report}[i%2]
			for range 20 {
				if err := c.DoJSON(t.Context(), Request{Op: "op", Budget: b, Method: http.MethodGet, Path: []string{"x"}}, nil); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 200 {
			c.Share(i%3 + 1)
			_ = c.CurrentLimit(Run)
		}
	})
	wg.Wait()
	c.Share(1)
	if got := c.CurrentLimit(Run); got != (Limit{Rate: 10000, Burst: 100}) {
		t.Fatalf("after Share(1): %+v", got)
	}
}
