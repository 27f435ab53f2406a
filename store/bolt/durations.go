package bolt

import (
	"encoding/binary"
	"time"
)

// bDurations holds the analysis durations the learned polling schedules
// learn from (store.State.RecordDuration): service → its latest durations,
// oldest first, 8 bytes each (nanoseconds, big-endian). A list is bounded
// by its keep, 64 in production: one small value per service.
const bDurations = "durations"

func init() { buckets = append(buckets, bDurations) }

// RecordDurations records that analyses of service took ds, keeping the
// latest keep (store.State).
func (db *DB) RecordDurations(service string, add []time.Duration, keep int) error {
	if keep < 1 {
		keep = 1
	}
	if len(add) == 0 {
		return nil
	}
	// Shared: fn reads the stored list afresh each time it runs.
	return db.be.batch(func(t txn) error {
		ds := append(decodeDurations(t.get(bDurations, service)), add...)
		if len(ds) > keep {
			ds = ds[len(ds)-keep:]
		}
		return t.put(bDurations, service, encodeDurations(ds))
	})
}

// Durations returns up to keep of service's latest durations, oldest first
// (store.State).
func (db *DB) Durations(service string, keep int) ([]time.Duration, error) {
	var ds []time.Duration
	err := db.be.view(func(t txn) error {
		ds = decodeDurations(t.get(bDurations, service))
		return nil
	})
	if keep >= 0 && len(ds) > keep {
		ds = ds[len(ds)-keep:]
	}
	return ds, err
}

func encodeDurations(ds []time.Duration) []byte {
	b := make([]byte, 8*len(ds))
	for i, d := range ds {
		binary.BigEndian.PutUint64(b[8*i:], uint64(d))
	}
	return b
}

// decodeDurations reads a list; a trailing partial entry (not written by
// this code) is ignored.
func decodeDurations(b []byte) []time.Duration {
	ds := make([]time.Duration, 0, len(b)/8)
	for i := 0; i+8 <= len(b); i += 8 {
		ds = append(ds, time.Duration(binary.BigEndian.Uint64(b[i:])))
	}
	return ds
}
