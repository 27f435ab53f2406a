package bolt

import "github.com/verdictbot/verdictbot/store"

// RecordReport appends a report to the target's audit trail.
func (db *DB) RecordReport(r store.Report) error {
	if r.At.IsZero() {
		r.At = db.now()
	}
	seq := db.nextSeq()
	return db.update(func(t txn) error {
		return t.put(bReports, r.Target+"\x00"+timeKey(r.At)+seqKey(seq), enc(r))
	})
}

// Reports returns a target's reports, oldest first.
func (db *DB) Reports(target string) ([]store.Report, error) {
	var out []store.Report
	var derr error
	err := db.be.view(func(t txn) error {
		p := target + "\x00"
		t.scan(bReports, p, prefixEnd(p), func(_ string, raw []byte) bool {
			var r store.Report
			if derr = dec(raw, &r); derr != nil {
				return false
			}
			out = append(out, r)
			return true
		})
		return derr
	})
	return out, err
}

// ChannelMode returns a channel's mode ("" when not set).
func (db *DB) ChannelMode(channel string) (string, error) {
	var mode string
	err := db.be.view(func(t txn) error {
		mode = string(t.get(bChannels, channel))
		return nil
	})
	return mode, err
}

// SetChannelMode sets a channel's mode; "" removes the setting.
func (db *DB) SetChannelMode(channel, mode string, out ...*store.Outgoing) error {
	return db.update(func(t txn) error {
		if err := setOrDel(t, bChannels, channel, mode); err != nil {
			return err
		}
		return enqueueAll(t, out)
	})
}

// setOrDel sets key to v, or removes it for "".
func setOrDel(t txn, bucket, key, v string) error {
	if v == "" {
		return t.del(bucket, key)
	}
	return t.put(bucket, key, []byte(v))
}

// Allow adds a domain to the runtime allowlist.
func (db *DB) Allow(domain, by string, out ...*store.Outgoing) error {
	e := store.AllowEntry{Domain: domain, By: by, At: db.now()}
	return db.update(func(t txn) error {
		if err := t.put(bAllow, domain, enc(e)); err != nil {
			return err
		}
		return enqueueAll(t, out)
	})
}

// Disallow removes a domain; it reports whether it was there.
func (db *DB) Disallow(domain string, out ...*store.Outgoing) (bool, error) {
	found := false
	err := db.update(func(t txn) error {
		found = t.get(bAllow, domain) != nil
		if !found {
			return nil // nothing changed: no event
		}
		if err := t.del(bAllow, domain); err != nil {
			return err
		}
		return enqueueAll(t, out)
	})
	return found, err
}

// AllowList returns the runtime allowlist, sorted by domain.
func (db *DB) AllowList() ([]store.AllowEntry, error) {
	var out []store.AllowEntry
	var derr error
	err := db.be.view(func(t txn) error {
		t.scan(bAllow, "", "", func(_ string, raw []byte) bool {
			var e store.AllowEntry
			if derr = dec(raw, &e); derr != nil {
				return false
			}
			out = append(out, e)
			return true
		})
		return derr
	})
	return out, err
}
