package bolt

import (
	"slices"
	"time"

	"github.com/verdictbot/verdictbot/store"
)

// The messages reported to the security team (store.State.AddUserReport).
// Like the other buckets added since schema 3 they changed no schema: a
// file of an earlier release gets them at its first write, and an earlier
// release reads a file that has them as it is, without its reports. The
// index buckets are written in the transaction that writes the report, and
// pruned with it.
const (
	bUserReports      = "user_reports"       // channel/ts → userReportRow's JSON
	bUserReportTriage = "user_report_triage" // triage channel/ts → channel/ts of the report
	bUserReportsBy    = "user_reports_by"    // user \x00 time reported (timeKey) channel/ts → nil
)

func init() { buckets = append(buckets, bUserReports, bUserReportTriage, bUserReportsBy) }

// userReportRow is a user report as the file keeps it.
type userReportRow struct {
	Channel       string        `json:"channel"`
	TS            string        `json:"ts"`
	ThreadTS      string        `json:"thread_ts,omitempty"`
	Author        string        `json:"author,omitempty"`
	AuthorTeam    string        `json:"author_team,omitempty"`
	Reporters     []reporterRow `json:"reporters"`
	TriageChannel string        `json:"triage_channel,omitempty"`
	TriageTS      string        `json:"triage_ts,omitempty"`
	Assignee      string        `json:"assignee,omitempty"`
	Outcome       string        `json:"outcome,omitempty"`
	DecidedBy     string        `json:"decided_by,omitempty"`
	DecidedAt     time.Time     `json:"decided_at,omitzero"`
	Created       time.Time     `json:"created"`
	Updated       time.Time     `json:"updated"`
}

type reporterRow struct {
	User string    `json:"user"`
	At   time.Time `json:"at"`
	Via  string    `json:"via,omitempty"`
	Told bool      `json:"told,omitempty"`
}

func userReportToRow(rep store.UserReport) userReportRow {
	row := userReportRow{Channel: rep.Channel, TS: rep.TS, ThreadTS: rep.ThreadTS, Author: rep.Author, AuthorTeam: rep.AuthorTeam,
		TriageChannel: rep.TriageChannel, TriageTS: rep.TriageTS, Assignee: rep.Assignee, Outcome: rep.Outcome,
		DecidedBy: rep.DecidedBy, DecidedAt: rep.DecidedAt, Created: rep.Created, Updated: rep.Updated}
	for _, r := range rep.Reporters {
		row.Reporters = append(row.Reporters, reporterRow{User: r.User, At: r.At, Via: r.Via, Told: r.Told})
	}
	return row
}

func (row userReportRow) report() store.UserReport {
	rep := store.UserReport{Channel: row.Channel, TS: row.TS, ThreadTS: row.ThreadTS, Author: row.Author, AuthorTeam: row.AuthorTeam,
		TriageChannel: row.TriageChannel, TriageTS: row.TriageTS, Assignee: row.Assignee, Outcome: row.Outcome,
		DecidedBy: row.DecidedBy, DecidedAt: row.DecidedAt, Created: row.Created, Updated: row.Updated}
	for _, r := range row.Reporters {
		rep.Reporters = append(rep.Reporters, store.Reporter{User: r.User, At: r.At, Via: r.Via, Told: r.Told})
	}
	return rep
}

func userReportKey(channel, ts string) string { return channel + "/" + ts }

// reportedByKey is a reporter's entry in bUserReportsBy: the keys of one
// user sort by when they reported.
func reportedByKey(user string, at time.Time, key string) string {
	return user + "\x00" + timeKey(at) + key
}

// getUserReport reads the report at key (ok false: none).
func getUserReport(t txn, key string) (rep store.UserReport, ok bool, err error) {
	v := t.get(bUserReports, key)
	if v == nil {
		return store.UserReport{}, false, nil
	}
	var row userReportRow
	if err := dec(v, &row); err != nil {
		return store.UserReport{}, false, err
	}
	return row.report(), true, nil
}

// putUserReport writes rep and its index entries, replacing those of old
// (the report as it was stored; nil when rep is new). A triage card that
// is another report's is store.ErrTriageTaken.
func putUserReport(t txn, old *store.UserReport, rep store.UserReport) error {
	key := userReportKey(rep.Channel, rep.TS)
	if rep.HasTriage() {
		if v := t.get(bUserReportTriage, userReportKey(rep.TriageChannel, rep.TriageTS)); v != nil && string(v) != key {
			return store.ErrTriageTaken
		}
	}
	if old != nil {
		if err := dropUserReportIndex(t, key, *old); err != nil {
			return err
		}
	}
	if rep.HasTriage() {
		if err := t.put(bUserReportTriage, userReportKey(rep.TriageChannel, rep.TriageTS), []byte(key)); err != nil {
			return err
		}
	}
	for _, r := range rep.Reporters {
		if err := t.put(bUserReportsBy, reportedByKey(r.User, r.At, key), nil); err != nil {
			return err
		}
	}
	return t.put(bUserReports, key, enc(userReportToRow(rep)))
}

// dropUserReportIndex removes the index entries of rep, stored at key.
func dropUserReportIndex(t txn, key string, rep store.UserReport) error {
	if rep.HasTriage() {
		tk := userReportKey(rep.TriageChannel, rep.TriageTS)
		if string(t.get(bUserReportTriage, tk)) == key {
			if err := t.del(bUserReportTriage, tk); err != nil {
				return err
			}
		}
	}
	for _, r := range rep.Reporters {
		if err := t.del(bUserReportsBy, reportedByKey(r.User, r.At, key)); err != nil {
			return err
		}
	}
	return nil
}

// AddUserReport records that r.User reported the message (channel, ts),
// creating its report at the first reporter (store.State).
func (db *DB) AddUserReport(channel, ts string, r store.Reporter, fn func(rep *store.UserReport)) (store.UserReport, bool, error) {
	if channel == "" || ts == "" || r.User == "" {
		return store.UserReport{}, false, store.ErrBadUserReport
	}
	now := db.now()
	if r.At.IsZero() {
		r.At = now
	}
	key := userReportKey(channel, ts)
	var out store.UserReport
	var added bool
	err := db.update(func(t txn) error {
		rep, ok, err := getUserReport(t, key)
		if err != nil {
			return err
		}
		var old *store.UserReport
		if ok {
			if rep.HasReporter(r.User) {
				out = rep
				return nil
			}
			was := rep
			was.Reporters = slices.Clone(rep.Reporters)
			old = &was
		} else {
			if fn != nil {
				fn(&rep)
			}
			rep.Channel, rep.TS, rep.Reporters, rep.Created = channel, ts, nil, now
		}
		rep.Reporters = append(rep.Reporters, r)
		rep.Updated = now
		if err := putUserReport(t, old, rep); err != nil {
			return err
		}
		out, added = rep, true
		return nil
	})
	if err != nil {
		return store.UserReport{}, false, err
	}
	return out, added, nil
}

// UpdateUserReport applies fn to the report of (channel, ts) and saves it,
// with its index entries, in one transaction (store.State).
func (db *DB) UpdateUserReport(channel, ts string, fn func(rep *store.UserReport) error) (store.UserReport, error) {
	key := userReportKey(channel, ts)
	now := db.now()
	var out store.UserReport
	err := db.update(func(t txn) error {
		rep, ok, err := getUserReport(t, key)
		if err != nil {
			return err
		}
		if !ok {
			return store.ErrNotFound
		}
		old := rep
		rep.Reporters = slices.Clone(rep.Reporters) // fn may change them in place
		if err := fn(&rep); err != nil {
			return err
		}
		rep.Channel, rep.TS, rep.Created, rep.Updated = old.Channel, old.TS, old.Created, now
		if err := rep.CheckReporters(); err != nil {
			return err
		}
		if err := putUserReport(t, &old, rep); err != nil {
			return err
		}
		out = rep
		return nil
	})
	if err != nil {
		return store.UserReport{}, err
	}
	return out, nil
}

// UserReport returns the report of the message (channel, ts), or
// store.ErrNotFound.
func (db *DB) UserReport(channel, ts string) (store.UserReport, error) {
	var out store.UserReport
	err := db.be.view(func(t txn) error {
		rep, ok, err := getUserReport(t, userReportKey(channel, ts))
		if err == nil && !ok {
			err = store.ErrNotFound
		}
		out = rep
		return err
	})
	return out, err
}

// UserReportByTriage returns the report whose triage card is (channel,
// ts), or store.ErrNotFound.
func (db *DB) UserReportByTriage(channel, ts string) (store.UserReport, error) {
	if channel == "" || ts == "" {
		return store.UserReport{}, store.ErrNotFound
	}
	var out store.UserReport
	err := db.be.view(func(t txn) error {
		key := t.get(bUserReportTriage, userReportKey(channel, ts))
		if key == nil {
			return store.ErrNotFound
		}
		rep, ok, err := getUserReport(t, string(key))
		if err == nil && !ok {
			err = store.ErrNotFound
		}
		out = rep
		return err
	})
	return out, err
}

// UserReportsBy returns up to n reports user made, the one they reported
// last first (store.State).
func (db *DB) UserReportsBy(user string, n int) ([]store.UserReport, error) {
	if n <= 0 || user == "" {
		return nil, nil
	}
	var out []store.UserReport
	err := db.be.view(func(t txn) error {
		p := user + "\x00"
		var keys []string
		t.scan(bUserReportsBy, p, prefixEnd(p), func(k string, _ []byte) bool {
			keys = append(keys, k)
			return true
		})
		for i := len(keys) - 1; i >= 0 && len(out) < n; i-- {
			if len(keys[i]) < len(p)+8 {
				continue // not a key of ours
			}
			rep, ok, err := getUserReport(t, keys[i][len(p)+8:])
			if err != nil {
				return err
			}
			if ok {
				out = append(out, rep)
			}
		}
		return nil
	})
	return out, err
}

// UserReportsSince counts the reports user made at or after since
// (store.State).
func (db *DB) UserReportsSince(user string, since time.Time) (int, error) {
	if user == "" {
		return 0, nil
	}
	if epoch := time.Unix(0, 0); since.Before(epoch) {
		since = epoch // timeKey's range
	}
	n := 0
	err := db.be.view(func(t txn) error {
		p := user + "\x00"
		t.scan(bUserReportsBy, p+timeKey(since), prefixEnd(p), func(string, []byte) bool {
			n++
			return true
		})
		return nil
	})
	return n, err
}

// pruneUserReports removes the user reports last updated before cutoff,
// with their index entries.
func (db *DB) pruneUserReports(cutoff time.Time) (int, error) {
	return db.sweep(bUserReports, func(t txn, k string, v []byte) (bool, error) {
		var row userReportRow
		if err := dec(v, &row); err != nil {
			return false, err
		}
		if !row.Updated.Before(cutoff) {
			return false, nil
		}
		if err := dropUserReportIndex(t, k, row.report()); err != nil {
			return false, err
		}
		return true, t.del(bUserReports, k)
	})
}
