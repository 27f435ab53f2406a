package bolt

import (
	"time"

	"github.com/verdictbot/verdictbot/store"
)

// bBackfills holds the backfills (store.State.StartBackfill): channel →
// backfillRow's JSON. Like the other buckets added since schema 3 it
// changed no schema: a file of an earlier release gets it at its first
// write, and an earlier release reads a file that has it as it is,
// without its backfills.
const bBackfills = "backfills"

func init() { buckets = append(buckets, bBackfills) }

// backfillRow is a backfill as the file keeps it.
type backfillRow struct {
	Channel      string    `json:"channel"`
	Since        time.Time `json:"since"`
	Until        time.Time `json:"until"`
	StartedBy    string    `json:"started_by,omitempty"`
	State        string    `json:"state"`
	Cursor       string    `json:"cursor,omitempty"`
	Thread       string    `json:"thread,omitempty"`
	ThreadCursor string    `json:"thread_cursor,omitempty"`
	Pages        int       `json:"pages,omitempty"`
	Messages     int       `json:"messages,omitempty"`
	Links        int       `json:"links,omitempty"`
	Files        int       `json:"files,omitempty"`
	Found        int       `json:"found,omitempty"`
	ProgressTS   string    `json:"progress_ts,omitempty"`
	Owner        string    `json:"owner,omitempty"`
	OwnedUntil   time.Time `json:"owned_until,omitzero"`
	Problem      string    `json:"problem,omitempty"`
	Created      time.Time `json:"created"`
	Updated      time.Time `json:"updated"`
}

// micro is t as the backends keep it: to the microsecond, in UTC (what
// PostgreSQL keeps), so that both return the same times.
func micro(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.Truncate(time.Microsecond).UTC()
}

func backfillToRow(b store.Backfill) backfillRow {
	return backfillRow{Channel: b.Channel, Since: micro(b.Since), Until: micro(b.Until), StartedBy: b.StartedBy, State: b.State,
		Cursor: b.Cursor, Thread: b.Thread, ThreadCursor: b.ThreadCursor,
		Pages: b.Pages, Messages: b.Messages, Links: b.Links, Files: b.Files, Found: b.Found,
		ProgressTS: b.ProgressTS, Owner: b.Owner, OwnedUntil: micro(b.OwnedUntil), Problem: b.Problem,
		Created: micro(b.Created), Updated: micro(b.Updated)}
}

func (row backfillRow) backfill() store.Backfill {
	return store.Backfill{Channel: row.Channel, Since: row.Since, Until: row.Until, StartedBy: row.StartedBy, State: row.State,
		Cursor: row.Cursor, Thread: row.Thread, ThreadCursor: row.ThreadCursor,
		Pages: row.Pages, Messages: row.Messages, Links: row.Links, Files: row.Files, Found: row.Found,
		ProgressTS: row.ProgressTS, Owner: row.Owner, OwnedUntil: row.OwnedUntil, Problem: row.Problem,
		Created: row.Created, Updated: row.Updated}
}

// getBackfill reads channel's backfill (ok false: none).
func getBackfill(t txn, channel string) (b store.Backfill, ok bool, err error) {
	v := t.get(bBackfills, channel)
	if v == nil {
		return store.Backfill{}, false, nil
	}
	var row backfillRow
	if err := dec(v, &row); err != nil {
		return store.Backfill{}, false, err
	}
	return row.backfill(), true, nil
}

// putBackfill writes b and returns it as read back.
func putBackfill(t txn, b store.Backfill) (store.Backfill, error) {
	row := backfillToRow(b)
	return row.backfill(), t.put(bBackfills, b.Channel, enc(row))
}

// StartBackfill records a new backfill of b.Channel unless one is running
// there (store.State).
func (db *DB) StartBackfill(b store.Backfill) (store.Backfill, bool, error) {
	if b.Channel == "" {
		return store.Backfill{}, false, store.ErrNoChannel
	}
	now := db.now()
	var out store.Backfill
	var ok bool
	err := db.update(func(t txn) error {
		cur, exists, err := getBackfill(t, b.Channel)
		if err != nil {
			return err
		}
		if exists && cur.Running() {
			out, ok = cur, false
			return nil
		}
		b.State, b.Created, b.Updated = store.BackfillRunning, now, now
		out, err = putBackfill(t, b)
		ok = err == nil
		return err
	})
	if err != nil {
		return store.Backfill{}, false, err
	}
	return out, ok, nil
}

// UpdateBackfill applies fn to channel's backfill and saves it in one
// transaction (store.State).
func (db *DB) UpdateBackfill(channel string, fn func(b *store.Backfill) error) (store.Backfill, error) {
	now := db.now()
	var out store.Backfill
	err := db.update(func(t txn) error {
		b, ok, err := getBackfill(t, channel)
		if err != nil {
			return err
		}
		if !ok {
			return store.ErrNotFound
		}
		old := b
		if err := fn(&b); err != nil {
			return err
		}
		b.Channel, b.Created, b.Updated = old.Channel, old.Created, now
		out, err = putBackfill(t, b)
		return err
	})
	if err != nil {
		return store.Backfill{}, err
	}
	return out, nil
}

// Backfill returns channel's backfill, or store.ErrNotFound.
func (db *DB) Backfill(channel string) (store.Backfill, error) {
	var out store.Backfill
	err := db.be.view(func(t txn) error {
		b, ok, err := getBackfill(t, channel)
		if err == nil && !ok {
			err = store.ErrNotFound
		}
		out = b
		return err
	})
	return out, err
}

// ClaimBackfill makes owner the runner of channel's running backfill,
// until until, if its claim is free, expired or owner's (store.State).
func (db *DB) ClaimBackfill(channel, owner string, now, until time.Time) (store.Backfill, bool, error) {
	stamp := db.now()
	var out store.Backfill
	var ok bool
	err := db.update(func(t txn) error {
		b, exists, err := getBackfill(t, channel)
		if err != nil {
			return err
		}
		if !exists {
			return store.ErrNotFound
		}
		if !b.Claimable(owner, now) {
			out, ok = b, false
			return nil
		}
		b.Owner, b.OwnedUntil, b.Updated = owner, until, stamp
		out, err = putBackfill(t, b)
		ok = err == nil
		return err
	})
	if err != nil {
		return store.Backfill{}, false, err
	}
	return out, ok, nil
}

// RunningBackfills lists the running backfills, by channel (store.State).
func (db *DB) RunningBackfills() ([]store.Backfill, error) {
	var out []store.Backfill
	err := db.be.view(func(t txn) error {
		var derr error
		t.scan(bBackfills, "", "", func(_ string, v []byte) bool {
			var row backfillRow
			if derr = dec(v, &row); derr != nil {
				return false
			}
			if b := row.backfill(); b.Running() {
				out = append(out, b)
			}
			return true
		})
		return derr
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// pruneBackfills removes the finished backfills last updated before
// cutoff.
func (db *DB) pruneBackfills(cutoff time.Time) (int, error) {
	return db.sweep(bBackfills, func(t txn, k string, v []byte) (bool, error) {
		var row backfillRow
		if err := dec(v, &row); err != nil {
			return false, err
		}
		if b := row.backfill(); b.Running() || !b.Updated.Before(cutoff) {
			return false, nil
		}
		return true, t.del(bBackfills, k)
	})
}
