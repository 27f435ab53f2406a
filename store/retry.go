package store

import (
	"errors"
	"time"
)

// RetryWindow is how long a write the store refuses (a database restart, a
// killed session, a full disk being freed) is retried before the caller
// gives up on it: what it records (a verdict, a claim, a report) was
// acked or done already, so it waits for the store rather than being lost.
const RetryWindow = 2 * time.Minute

// Retry runs write until it succeeds, or fails with an answer rather than
// a failure of the store (ErrNotFound, or what answer reports; nil: only
// ErrNotFound), with backoff from 100 ms doubling to 5 s, for up to window
// (negative: no bound) or until done is closed; it returns write's last
// error. The first try runs even when done is closed already.
func Retry(done <-chan struct{}, window time.Duration, write func() error, answer func(error) bool) error {
	start := time.Now()
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		err := write()
		if err == nil || errors.Is(err, ErrNotFound) || (answer != nil && answer(err)) ||
			(window >= 0 && time.Since(start)+wait > window) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-done:
			t.Stop()
			return err
		case <-t.C:
		}
	}
}
