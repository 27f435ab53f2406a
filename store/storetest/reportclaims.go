package storetest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/store"
)

// reportClaims: ClaimReport gives a report's claim to one holder at a
// time; the holder's own claim is renewed; a release by another holder
// leaves it; a released or lapsed claim may be taken; reports are kept
// apart; and of concurrent claimants exactly one gets it.
func reportClaims(t *testing.T, db store.State, c *Clock) {
	claim := func(key, holder string) bool {
		t.Helper()
		ok, err := db.ClaimReport(key, holder, time.Minute)
		must(t, err)
		return ok
	}
	const key = "T1|fp|phishing"
	if !claim(key, "A") {
		t.Fatal("the first claim was refused")
	}
	if claim(key, "B") {
		t.Fatal("a second holder got a live claim")
	}
	if !claim("T1|fp|malware", "B") || !claim("T2|fp|phishing", "B") {
		t.Fatal("a claim of another report was refused")
	}
	c.Add(50 * time.Second)
	if !claim(key, "A") {
		t.Fatal("the holder's own claim was not renewed")
	}
	c.Add(50 * time.Second) // 100 s after the first, 50 after the renewal
	if claim(key, "B") {
		t.Fatal("a renewed claim lapsed at the first claim's end")
	}
	must(t, db.ReleaseReport(key, "B"))
	if claim(key, "B") {
		t.Fatal("another holder's release ended the claim")
	}
	must(t, db.ReleaseReport(key, "A"))
	if !claim(key, "B") {
		t.Fatal("a released claim was refused")
	}
	c.Add(time.Minute + time.Second)
	if !claim(key, "A") {
		t.Fatal("a lapsed claim (its holder died) was refused")
	}
	must(t, db.ReleaseReport(key, "A"))

	var won atomic.Int32
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			ok, err := db.ClaimReport("T3|fp|phishing", fmt.Sprintf("H%d", i), time.Minute)
			if err != nil {
				t.Error(err)
			}
			if ok {
				won.Add(1)
			}
		})
	}
	wg.Wait()
	if n := won.Load(); n != 1 {
		t.Fatalf("%d of 20 concurrent claimants got the claim, want 1", n)
	}
}
