package notify

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

func TestShareDividesPacing(t *testing.T) {
	t.Parallel()
	p, _ := newTestPoster(t, PosterOptions{PostInterval: time.Second, PostBurst: 3, UpdatesPerMinute: 50, UpdateBurst: 20})
	if err := p.Reply(t.Context(), "CA", "", "hello"); err != nil { // CA has a limiter before Share
		t.Fatal(err)
	}
	for _, tc := range []struct {
		n        int
		want     Pacing
		postRate rate.Limit
	}{
		{1, Pacing{Replicas: 1, UpdatesPerMinute: 50, UpdateBurst: 20, PostInterval: time.Second, PostBurst: 3}, 1},
		{2, Pacing{Replicas: 2, UpdatesPerMinute: 25, UpdateBurst: 10, PostInterval: 2 * time.Second, PostBurst: 2}, 0.5},
		{3, Pacing{Replicas: 3, UpdatesPerMinute: 50.0 / 3, UpdateBurst: 7, PostInterval: 3 * time.Second, PostBurst: 1}, 1.0 / 3},
		{0, Pacing{Replicas: 1, UpdatesPerMinute: 50, UpdateBurst: 20, PostInterval: time.Second, PostBurst: 3}, 1},
		{30, Pacing{Replicas: 30, UpdatesPerMinute: 50.0 / 30, UpdateBurst: 1, PostInterval: 30 * time.Second, PostBurst: 1}, 1.0 / 30},
		{1, Pacing{Replicas: 1, UpdatesPerMinute: 50, UpdateBurst: 20, PostInterval: time.Second, PostBurst: 3}, 1},
	} {
		p.Share(tc.n)
		if got := p.Pacing(); got != tc.want {
			t.Errorf("Share(%d): pacing %+v, want %+v", tc.n, got, tc.want)
		}
		n := max(tc.n, 1)
		wantUpdate := rate.Limit(50.0/60) / rate.Limit(n)
		if got := p.updateRate.Limit(); got != wantUpdate || p.updateRate.Burst() != tc.want.UpdateBurst {
			t.Errorf("Share(%d): chat.update limiter %v burst %d, want %v burst %d",
				tc.n, got, p.updateRate.Burst(), wantUpdate, tc.want.UpdateBurst)
		}
		for _, ch := range []string{"CA", fmt.Sprint("C-after-", tc.n)} { // seen before Share, and after
			lim := p.channelRate(ch)
			if !near(lim.Limit(), tc.postRate) || lim.Burst() != tc.want.PostBurst {
				t.Errorf("Share(%d): %s post limiter %v burst %d, want %v burst %d",
					tc.n, ch, lim.Limit(), lim.Burst(), tc.postRate, tc.want.PostBurst)
			}
		}
	}
}

func near(a, b rate.Limit) bool { return a-b < 1e-12 && b-a < 1e-12 }

// postUntilRefused replies in channel until the limiter refuses: with a
// pace of one post an hour, what goes out is the bucket's tokens, and the
// wait for the next one exceeds the context's deadline at once (no timing
// involved).
func postUntilRefused(t *testing.T, p *Poster, channel string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for sent := range 10 {
		if err := p.Reply(ctx, channel, "1.2", "hello"); err != nil {
			return sent
		}
	}
	t.Fatalf("%s: 10 posts went out at a pace of one an hour", channel)
	return 0
}

// TestShareHoldsPostsToTheShare: n replicas posting in one channel each get
// their share of the burst; a channel posted in before Share loses the
// tokens above its new share.
func TestShareHoldsPostsToTheShare(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ n, fresh, seen int }{{1, 4, 3}, {2, 2, 2}, {3, 2, 2}, {8, 1, 1}} {
		t.Run(fmt.Sprint("n=", tc.n), func(t *testing.T) {
			t.Parallel()
			p, f := newTestPoster(t, PosterOptions{PostInterval: time.Hour, PostBurst: 4})
			if err := p.Reply(t.Context(), "CSEEN", "1.2", "before Share"); err != nil {
				t.Fatal(err)
			}
			p.Share(tc.n)
			if got := postUntilRefused(t, p, "CSEEN"); got != tc.seen {
				t.Errorf("channel seen before Share: %d more posts, want %d", got, tc.seen)
			}
			if got := postUntilRefused(t, p, "CNEW"); got != tc.fresh {
				t.Errorf("channel seen after Share: %d posts, want %d", got, tc.fresh)
			}
			if got, want := len(f.callsTo("chat.postMessage")), 1+tc.seen+tc.fresh; got != want {
				t.Errorf("Slack received %d posts, want %d", got, want)
			}
		})
	}
}

// TestShareHoldsUpdatesToTheShare: progress updates are written only when
// the workspace-wide chat.update budget has a token to spare, so with one
// token an hour the number written is the replica's share of the burst.
func TestShareHoldsUpdatesToTheShare(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ n, want int }{{1, 4}, {2, 2}, {4, 1}} {
		t.Run(fmt.Sprint("n=", tc.n), func(t *testing.T) {
			t.Parallel()
			p, f := newTestPoster(t, PosterOptions{UpdatesPerMinute: 1.0 / 60, UpdateBurst: 4})
			p.Share(tc.n)
			for i := range 6 {
				c := testCard("C1")
				c.CardTS = fmt.Sprintf("1700000000.%06d", i+1) // six cards
				if err := p.Update(t.Context(), c); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			if err := p.Close(ctx); err != nil { // waits for the writers
				t.Fatal(err)
			}
			if got := len(f.callsTo("chat.update")); got != tc.want {
				t.Fatalf("%d progress updates written, want %d", got, tc.want)
			}
		})
	}
}

// TestShareWhilePosting changes n while posts and updates are under way;
// run with -race it checks that Share is safe for concurrent use.
func TestShareWhilePosting(t *testing.T) {
	t.Parallel()
	p, _ := newTestPoster(t, PosterOptions{PostInterval: time.Millisecond, PostBurst: 50, UpdatesPerMinute: 60000, UpdateBurst: 50})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 10 {
				ch := fmt.Sprint("C", i, j%3)
				if err := p.Reply(t.Context(), ch, "1.2", "hello"); err != nil {
					t.Error(err)
					return
				}
				c := testCard(ch)
				c.CardTS = fmt.Sprintf("1700000000.%03d%03d", i, j)
				if err := p.Update(t.Context(), c); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 200 {
			p.Share(i%3 + 1)
			_ = p.Pacing()
		}
	})
	wg.Wait()
}
