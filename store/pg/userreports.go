package pg

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/verdictbot/verdictbot/store"
)

// selectUserReport reads reports (alias r) with their reporters in order
// of arrival, in one statement: one snapshot of the report and its
// reporters.
const selectUserReport = `SELECT r.channel, r.ts, r.thread_ts, r.author, r.author_team, r.triage_channel, r.triage_ts,
	r.assignee, r.outcome, r.decided_by, r.decided_at, r.created, r.updated, p.users, p.ats, p.vias, p.told
FROM user_reports r CROSS JOIN LATERAL (
	SELECT array_agg(x.user_id ORDER BY x.seq) AS users, array_agg(x.at ORDER BY x.seq) AS ats,
		array_agg(x.via ORDER BY x.seq) AS vias, array_agg(x.told ORDER BY x.seq) AS told
	FROM user_report_reporters x WHERE x.channel = r.channel AND x.ts = r.ts) p`

func scanUserReport(row pgx.Row) (store.UserReport, error) {
	var rep store.UserReport
	var decided *time.Time
	var users, vias []string
	var ats []time.Time
	var told []bool
	if err := row.Scan(&rep.Channel, &rep.TS, &rep.ThreadTS, &rep.Author, &rep.AuthorTeam, &rep.TriageChannel, &rep.TriageTS,
		&rep.Assignee, &rep.Outcome, &rep.DecidedBy, &decided, &rep.Created, &rep.Updated, &users, &ats, &vias, &told); err != nil {
		return store.UserReport{}, err
	}
	if decided != nil {
		rep.DecidedAt = decided.UTC()
	}
	rep.Created, rep.Updated = rep.Created.UTC(), rep.Updated.UTC()
	for i, u := range users {
		rep.Reporters = append(rep.Reporters, store.Reporter{User: u, At: ats[i].UTC(), Via: vias[i], Told: told[i]})
	}
	return rep, nil
}

// getUserReport reads the report of (channel, ts), its row locked when
// lock is set (pgx.ErrNoRows: none).
//
// The lock is taken by a statement of its own, before the read: a
// statement that waits for the lock sees the row as the holder committed
// it, but its subqueries (the reporters) as they were when it began, which
// would leave out the reporters that the transactions it waited for
// added. Read after, under READ COMMITTED, they are there.
func getUserReport(ctx context.Context, q querier, channel, ts string, lock bool) (store.UserReport, error) {
	if lock {
		var one int
		if err := q.QueryRow(ctx, `SELECT 1 FROM user_reports WHERE channel = $1 AND ts = $2 FOR UPDATE`, channel, ts).Scan(&one); err != nil {
			return store.UserReport{}, err
		}
	}
	return scanUserReport(q.QueryRow(ctx, selectUserReport+` WHERE r.channel = $1 AND r.ts = $2`, channel, ts))
}

// saveUserReport writes rep's fields but its key and Created; a triage
// card that is another report's is store.ErrTriageTaken.
func saveUserReport(ctx context.Context, q querier, rep *store.UserReport) error {
	_, err := q.Exec(ctx, `UPDATE user_reports SET thread_ts = $3, author = $4, author_team = $5, triage_channel = $6, triage_ts = $7,
		assignee = $8, outcome = $9, decided_by = $10, decided_at = $11, updated = $12
		WHERE channel = $1 AND ts = $2`,
		rep.Channel, rep.TS, rep.ThreadTS, rep.Author, rep.AuthorTeam, rep.TriageChannel, rep.TriageTS,
		rep.Assignee, rep.Outcome, rep.DecidedBy, nullTime(rep.DecidedAt), rep.Updated)
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == "user_reports_triage" {
		return errCallback{store.ErrTriageTaken}
	}
	return err
}

const insertReporter = `INSERT INTO user_report_reporters (channel, ts, user_id, at, via, told) VALUES ($1, $2, $3, $4, $5, $6)`

// AddUserReport records that r.User reported the message (channel, ts),
// creating its report at the first reporter (store.State). The report's
// row is locked (created, or SELECT … FOR UPDATE) before its reporters are
// read, so that concurrent reporters, in any replica, add theirs one after
// the other, each once, in the order they took the lock.
func (db *DB) AddUserReport(channel, ts string, r store.Reporter, fn func(rep *store.UserReport)) (store.UserReport, bool, error) {
	if channel == "" || ts == "" || r.User == "" {
		return store.UserReport{}, false, store.ErrBadUserReport
	}
	now := micro(db.now())
	r.At = micro(r.At)
	if r.At.IsZero() {
		r.At = now
	}
	var out store.UserReport
	var added bool
	err := db.tx(func(ctx context.Context, tx pgx.Tx) error {
		out, added = store.UserReport{}, false
		var rep store.UserReport
		created := false
		// The row may be pruned between the two statements (an old
		// report reported again as retention runs): then it is created.
		for attempt := 0; ; attempt++ {
			tag, err := tx.Exec(ctx, `INSERT INTO user_reports (channel, ts, created, updated) VALUES ($1, $2, $3, $3)
				ON CONFLICT (channel, ts) DO NOTHING`, channel, ts, now)
			if err != nil {
				return err
			}
			created = tag.RowsAffected() == 1
			rep, err = getUserReport(ctx, tx, channel, ts, true)
			if errors.Is(err, pgx.ErrNoRows) && !created && attempt < 2 {
				continue
			}
			if err != nil {
				return err
			}
			break
		}
		if created {
			if fn != nil {
				fn(&rep)
			}
			rep.Channel, rep.TS, rep.Reporters, rep.Created = channel, ts, nil, now
			rep.DecidedAt = micro(rep.DecidedAt)
		} else if rep.HasReporter(r.User) {
			out = rep
			return nil
		}
		rep.Reporters = append(rep.Reporters, r)
		rep.Updated = now
		if err := saveUserReport(ctx, tx, &rep); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, insertReporter, channel, ts, r.User, r.At, r.Via, r.Told); err != nil {
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

// UpdateUserReport applies fn to the report of (channel, ts), its row
// locked, and saves it in one transaction (store.State). The reporters
// are written anew, in fn's order, only when fn changed them.
func (db *DB) UpdateUserReport(channel, ts string, fn func(rep *store.UserReport) error) (store.UserReport, error) {
	var out store.UserReport
	err := db.tx(func(ctx context.Context, tx pgx.Tx) error {
		rep, err := getUserReport(ctx, tx, channel, ts, true)
		if err != nil {
			return err
		}
		old := rep
		rep.Reporters = slices.Clone(rep.Reporters) // fn may change them in place
		if err := fn(&rep); err != nil {
			return errCallback{err}
		}
		rep.Channel, rep.TS, rep.Created, rep.Updated = old.Channel, old.TS, old.Created, micro(db.now())
		rep.DecidedAt = micro(rep.DecidedAt)
		for i := range rep.Reporters {
			rep.Reporters[i].At = micro(rep.Reporters[i].At)
		}
		if err := rep.CheckReporters(); err != nil {
			return errCallback{err}
		}
		if err := saveUserReport(ctx, tx, &rep); err != nil {
			return err
		}
		if !slices.EqualFunc(old.Reporters, rep.Reporters, sameReporter) {
			b := &pgx.Batch{}
			b.Queue(`DELETE FROM user_report_reporters WHERE channel = $1 AND ts = $2`, channel, ts)
			for _, r := range rep.Reporters {
				b.Queue(insertReporter, channel, ts, r.User, r.At, r.Via, r.Told)
			}
			if err := tx.SendBatch(ctx, b).Close(); err != nil {
				return err
			}
		}
		out = rep
		return nil
	})
	if err != nil {
		return store.UserReport{}, err
	}
	return out, nil
}

func sameReporter(a, b store.Reporter) bool {
	return a.User == b.User && a.At.Equal(b.At) && a.Via == b.Via && a.Told == b.Told
}

// UserReport returns the report of the message (channel, ts), or
// store.ErrNotFound.
func (db *DB) UserReport(channel, ts string) (store.UserReport, error) {
	ctx, cancel := db.ctx()
	defer cancel()
	rep, err := getUserReport(ctx, db.pool, channel, ts, false)
	if err != nil {
		return store.UserReport{}, db.result(err)
	}
	return rep, nil
}

// UserReportByTriage returns the report whose triage card is (channel,
// ts), or store.ErrNotFound (the partial unique index user_reports_triage).
func (db *DB) UserReportByTriage(channel, ts string) (store.UserReport, error) {
	if channel == "" || ts == "" {
		return store.UserReport{}, store.ErrNotFound
	}
	ctx, cancel := db.ctx()
	defer cancel()
	rep, err := scanUserReport(db.pool.QueryRow(ctx, selectUserReport+
		` WHERE r.triage_channel = $1 AND r.triage_ts = $2 AND r.triage_channel <> '' AND r.triage_ts <> ''`, channel, ts))
	if err != nil {
		return store.UserReport{}, db.result(err)
	}
	return rep, nil
}

// UserReportsBy returns up to n reports user made, the one they reported
// last first (store.State).
func (db *DB) UserReportsBy(user string, n int) ([]store.UserReport, error) {
	if n <= 0 || user == "" {
		return nil, nil
	}
	ctx, cancel := db.ctx()
	defer cancel()
	rows, err := db.pool.Query(ctx, selectUserReport+
		` JOIN user_report_reporters b ON b.channel = r.channel AND b.ts = r.ts
		WHERE b.user_id = $1 ORDER BY b.at DESC, b.seq DESC LIMIT $2`, user, n)
	if err != nil {
		return nil, db.result(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.UserReport, error) { return scanUserReport(r) })
	if err != nil {
		return nil, db.result(err)
	}
	return out, nil
}

// UserReportsSince counts the reports user made at or after since
// (store.State): a range of the index on (user_id, at).
func (db *DB) UserReportsSince(user string, since time.Time) (int, error) {
	ctx, cancel := db.ctx()
	defer cancel()
	var n int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM user_report_reporters WHERE user_id = $1 AND at >= $2`, user, since).Scan(&n); err != nil {
		return 0, db.result(err)
	}
	return n, nil
}
