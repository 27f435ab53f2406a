package store

import (
	"time"

	"github.com/verdictbot/verdictbot/verdict"
)

// Report is one feedback report, for the audit trail.
type Report struct {
	Target   string           `json:"target"`
	TaskID   string           `json:"task_id"`
	User     string           `json:"user"`
	Option   string           `json:"option"` // fp, fn, restore
	Category verdict.Category `json:"category"`
	At       time.Time        `json:"at"`
	// Outcome is "" when the service accepted it, else the service's text.
	Outcome string  `json:"outcome,omitempty"`
	Card    CardRef `json:"card"`
}

// RecordReport appends a report to the target's audit trail.
func (db *DB) RecordReport(r Report) error {
	if r.At.IsZero() {
		r.At = db.now()
	}
	seq := db.nextSeq()
	return db.update(func(t txn) error {
		return t.put(bReports, r.Target+"\x00"+timeKey(r.At)+seqKey(seq), enc(r))
	})
}

// Reports returns a target's reports, oldest first.
func (db *DB) Reports(target string) ([]Report, error) {
	var out []Report
	var derr error
	err := db.be.view(func(t txn) error {
		p := target + "\x00"
		t.scan(bReports, p, prefixEnd(p), func(_ string, raw []byte) bool {
			var r Report
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
func (db *DB) SetChannelMode(channel, mode string) error {
	return db.update(func(t txn) error {
		if mode == "" {
			return t.del(bChannels, channel)
		}
		return t.put(bChannels, channel, []byte(mode))
	})
}

// AllowEntry is a domain added to the allowlist at run time.
type AllowEntry struct {
	Domain string    `json:"domain"`
	By     string    `json:"by"`
	At     time.Time `json:"at"`
}

// Allow adds a domain to the runtime allowlist.
func (db *DB) Allow(domain, by string) error {
	e := AllowEntry{Domain: domain, By: by, At: db.now()}
	return db.update(func(t txn) error { return t.put(bAllow, domain, enc(e)) })
}

// Disallow removes a domain; it reports whether it was there.
func (db *DB) Disallow(domain string) (bool, error) {
	found := false
	err := db.update(func(t txn) error {
		found = t.get(bAllow, domain) != nil
		return t.del(bAllow, domain)
	})
	return found, err
}

// AllowList returns the runtime allowlist, sorted by domain.
func (db *DB) AllowList() ([]AllowEntry, error) {
	var out []AllowEntry
	var derr error
	err := db.be.view(func(t txn) error {
		t.scan(bAllow, "", "", func(_ string, raw []byte) bool {
			var e AllowEntry
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
