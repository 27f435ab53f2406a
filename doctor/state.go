package doctor

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/verdictbot/verdictbot/internal/bytesize"
	"github.com/verdictbot/verdictbot/store/bolt"
	"github.com/verdictbot/verdictbot/store/pg"
)

// state checks where the bot keeps its state: VERDICTBOT_DATA_DIR (the
// embedded file, or temporary files beside PostgreSQL), then the
// database or the store file. Nothing is migrated or written but a
// probe file in the data directory, removed at once.
func (r *run) state(ctx context.Context) []Result {
	out := []Result{r.dataDir()}
	if r.cfg.DatabaseURL != "" {
		return append(out, r.postgres(ctx)...)
	}
	return append(out, r.storeFile())
}

// dataDir checks that VERDICTBOT_DATA_DIR is a writable directory, or
// can be made: the bot creates it at start.
func (r *run) dataDir() Result {
	dir := r.cfg.DataDir
	res := Result{Section: secState, Name: "data directory"}
	fix := fmt.Sprintf("make %s a directory the bot's user may write (or set VERDICTBOT_DATA_DIR to one)", dir)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		parent := existingParent(dir)
		if err := probeWrite(parent); err != nil {
			res.Status, res.Detail, res.Fix = Fail, fmt.Sprintf("%s does not exist, and %s, where the bot would create it, is not writable: %v", dir, parent, err), fix
			return res
		}
		res.Status, res.Detail = Pass, fmt.Sprintf("%s does not exist yet: the bot creates it at start (%s is writable)", dir, parent)
		return res
	case err != nil:
		res.Status, res.Detail, res.Fix = Fail, err.Error(), fix
		return res
	case !fi.IsDir():
		res.Status, res.Detail, res.Fix = Fail, dir+" is not a directory", fix
		return res
	}
	if err := probeWrite(dir); err != nil {
		res.Status, res.Detail, res.Fix = Fail, fmt.Sprintf("%s is not writable: %v", dir, err), fix
		return res
	}
	what := "the store file and temporary files"
	if r.cfg.DatabaseURL != "" {
		what = "temporary files (the state is in PostgreSQL)"
	}
	res.Status, res.Detail = Pass, fmt.Sprintf("%s is writable (%s)", dir, what)
	return res
}

// existingParent is the nearest directory of dir's ancestors that exists.
func existingParent(dir string) string {
	p := filepath.Clean(dir)
	for {
		next := filepath.Dir(p)
		if fi, err := os.Stat(next); err == nil && fi.IsDir() || next == p {
			return next
		}
		p = next
	}
}

// probeWrite creates and removes a file in dir.
func probeWrite(dir string) error {
	f, err := os.CreateTemp(dir, ".verdictbot-doctor-*")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// postgres checks VERDICTBOT_DATABASE_URL: reachable, its schema version
// against this binary's, and the replicas registered.
func (r *run) postgres(ctx context.Context) []Result {
	where := pg.Describe(r.cfg.DatabaseURL.Reveal())
	res := Result{Section: secState, Name: "PostgreSQL"}
	in, err := pg.Inspect(ctx, r.cfg.DatabaseURL.Reveal(), pg.Options{Timeout: r.timeout, Lease: r.cfg.Lease})
	if err != nil {
		res.Status, res.Detail = Fail, err.Error()
		res.Fix = fmt.Sprintf("check that PostgreSQL runs and that this host reaches %s; check the user, password, database and sslmode in VERDICTBOT_DATABASE_URL", dbHost(r.cfg.DatabaseURL.Reveal()))
		return []Result{res}
	}
	switch v := in.Version; {
	case v == 0:
		res.Status, res.Detail = Pass, where+": reachable, no schema yet: the first start creates it (or verdictbot migrate)"
	case v < pg.SchemaVersion:
		res.Status, res.Detail = Pass, fmt.Sprintf("%s: schema %d; this verdictbot's is %d: it migrates the database at start (or run verdictbot migrate)", where, v, pg.SchemaVersion)
	case v > pg.SchemaVersion:
		res.Status, res.Detail = Fail, fmt.Sprintf("%s: schema %d is newer than this verdictbot's (%d)", where, v, pg.SchemaVersion)
		res.Fix = "run the verdictbot that migrated it, or a newer one"
	default:
		res.Status, res.Detail = Pass, fmt.Sprintf("%s: schema %d, this verdictbot's", where, v)
	}
	rep := Result{Section: secState, Name: "replicas", Status: Pass}
	var live, gone []string
	for _, rp := range in.Replicas {
		if rp.Live {
			live = append(live, fmt.Sprintf("%s (up %s)", rp.ID, since(time.Since(rp.Started))))
		} else {
			gone = append(gone, fmt.Sprintf("%s (silent for %s)", rp.ID, since(rp.Age)))
		}
	}
	switch {
	case len(live) == 0:
		rep.Detail = "none running now"
	default:
		rep.Detail = plural(len(live), "replica") + " alive: " + strings.Join(live, ", ")
	}
	if len(gone) > 0 {
		rep.Status = Warn
		rep.Detail += "; stopped without leaving: " + strings.Join(gone, ", ")
		rep.Fix = fmt.Sprintf("nothing to do if they were killed or lost: their work was taken over within VERDICTBOT_LEASE (%s), and they are forgotten after a day; "+
			"if one still runs, its heartbeat does not reach the database", r.cfg.Lease)
	}
	return []Result{res, rep}
}

// since is a duration for people: 2h5m, 40s.
func since(d time.Duration) string {
	if d >= time.Minute {
		return d.Truncate(time.Minute).String()
	}
	return d.Truncate(time.Second).String()
}

// storeFile checks the embedded store file in VERDICTBOT_DATA_DIR,
// read-only: a file a running bot holds is left alone.
func (r *run) storeFile() Result {
	res := Result{Section: secState, Name: "store file"}
	info, err := bolt.Inspect(r.cfg.DataDir, time.Second)
	switch {
	case errors.Is(err, bolt.ErrInUse):
		res.Status, res.Detail = Pass, info.Path+": in use by a running verdictbot (not read: one process opens it at a time)"
	case err != nil:
		res.Status, res.Detail = Fail, err.Error()
		res.Fix = "restore the file from a backup, or move it away to start with an empty store"
	case !info.Exists:
		res.Status, res.Detail = Pass, info.Path+": none yet: the first start creates it"
	case info.Version > bolt.SchemaVersion:
		res.Status, res.Detail = Fail, fmt.Sprintf("%s: schema %d is newer than this verdictbot's (%d)", info.Path, info.Version, bolt.SchemaVersion)
		res.Fix = "run the verdictbot that wrote it, or a newer one"
	case info.Version < bolt.SchemaVersion:
		res.Status, res.Detail = Pass, fmt.Sprintf("%s: schema %d, %s; this verdictbot's is %d: it migrates the file at start, after a backup",
			info.Path, info.Version, bytesize.Format(info.Size), bolt.SchemaVersion)
	default:
		res.Status, res.Detail = Pass, fmt.Sprintf("%s: schema %d, this verdictbot's; %s", info.Path, info.Version, bytesize.Format(info.Size))
	}
	return res
}

// dbHost is a database URL's host:port, for messages.
func dbHost(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return u.Host
	}
	return "the database's host"
}
