package store

import (
	"errors"
	"testing"
	"time"
)

func TestRetry(t *testing.T) {
	down := errors.New("connection refused")
	answer := errors.New("the card changed")
	isAnswer := func(err error) bool { return errors.Is(err, answer) }

	// A store that comes back: retried until the write succeeds.
	n := 0
	if err := Retry(nil, time.Minute, func() error {
		if n++; n < 3 {
			return down
		}
		return nil
	}, isAnswer); err != nil || n != 3 {
		t.Fatalf("a store back at the 3rd try: %v after %d tries", err, n)
	}
	// An answer, and ErrNotFound, are not retried.
	for _, want := range []error{answer, ErrNotFound} {
		n = 0
		if err := Retry(nil, time.Minute, func() error { n++; return want }, isAnswer); !errors.Is(err, want) || n != 1 {
			t.Fatalf("%v: %v after %d tries, want it at once", want, err, n)
		}
	}
	// The window bounds the tries: 100 + 200 ms fit in 350 ms, 400 more do not.
	n = 0
	start := time.Now()
	if err := Retry(nil, 350*time.Millisecond, func() error { n++; return down }, nil); !errors.Is(err, down) || n != 3 {
		t.Fatalf("a store that stays down: %v after %d tries, want 3", err, n)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("a 350 ms window took %s", took)
	}
	// done ends the wait; the first try runs all the same.
	done := make(chan struct{})
	close(done)
	n = 0
	if err := Retry(done, -1, func() error { n++; return down }, nil); !errors.Is(err, down) || n != 1 {
		t.Fatalf("closed done: %v after %d tries, want the one try", err, n)
	}
}
