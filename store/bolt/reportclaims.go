package bolt

import (
	"sync"
	"time"
)

// reportClaims is the embedded store's ClaimReport state: key → holder and
// the end of its claim. It is held in memory: the file is opened by one
// process, so every claim is this process's, and a restart rightly forgets
// a dead process's claims.
type reportClaims struct {
	mu     sync.Mutex
	claims map[string]reportClaim
}

type reportClaim struct {
	holder string
	until  time.Time
}

// ClaimReport makes holder the one that sends the report key, while no
// other holder's claim on it is live (store.State).
func (db *DB) ClaimReport(key, holder string, hold time.Duration) (bool, error) {
	now := db.now()
	r := &db.reports
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.claims == nil {
		r.claims = map[string]reportClaim{}
	}
	if c, ok := r.claims[key]; ok && c.holder != holder && c.until.After(now) {
		return false, nil
	}
	// Forget the lapsed claims now and then: the map holds the reports
	// being sent, a handful.
	if len(r.claims) > 64 {
		for k, c := range r.claims {
			if !c.until.After(now) {
				delete(r.claims, k)
			}
		}
	}
	r.claims[key] = reportClaim{holder: holder, until: now.Add(hold)}
	return true, nil
}

// ReleaseReport ends holder's claim on key (store.State).
func (db *DB) ReleaseReport(key, holder string) error {
	r := &db.reports
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.claims[key]; ok && c.holder == holder {
		delete(r.claims, key)
	}
	return nil
}
