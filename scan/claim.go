package scan

import (
	"context"
	"time"
)

// Claimer is a Memory shared by several replicas (scanstore.URLMemory and
// scanstore.FileMemory over the state layer): before submitting a key, a
// pipeline claims it, so that one replica submits each URL and uploads
// each file while the others wait for its verdict.
type Claimer interface {
	// Claim makes this process the one that analyses key: mine is true
	// when it should submit (existed false: an intent is now recorded) or
	// resume the analysis in flight (existed true, with its task, "" for
	// an intent whose request may or may not have arrived). mine is false
	// while a live replica analyses key.
	Claim(key string) (taskID string, existed, mine bool)
	// Release drops the intent of a fresh claim (existed false) that this
	// process will not submit after all.
	Release(key string)
}

// followPoll is how often a replica waiting for another's analysis looks
// for its verdict (a read of the state) and for its death.
var followPoll = time.Second

// claimed is the outcome of claimOrFollow.
type claimed[V any] struct {
	taskID  string
	existed bool
	// followed is true when another replica analysed the key: v is its
	// verdict, already recorded.
	followed bool
	v        V
}

// claimOrFollow claims key through mem when it is a Claimer (otherwise
// there is no other replica: the key is this process's). While a live
// replica analyses key it waits, with status "submitted" (the analysis
// exists), for that replica to record the verdict, and returns it; if that
// replica stops first, this one takes the analysis over. It returns ctx's
// error if ctx ends first. reuse is false for a recheck, which wants a new
// analysis even when a verdict within ttl is recorded.
func claimOrFollow[V any](ctx context.Context, mem Memory[V], key string, ttl time.Duration, reuse bool, status func(string)) (claimed[V], error) {
	cl, ok := mem.(Claimer)
	if !ok {
		id, existed := mem.InFlight(key)
		if !existed {
			mem.Submitting(key)
		}
		return claimed[V]{taskID: id, existed: existed}, nil
	}
	told := false
	for {
		id, existed, mine := cl.Claim(key)
		if mine && !existed && reuse {
			// The caller found no verdict before claiming, but another
			// replica may have recorded one and dropped its claim since:
			// a fresh claim is checked against the verdicts once more, or
			// that replica's analysis would be submitted a second time.
			if v, ok := mem.Recall(key, ttl); ok {
				cl.Release(key)
				return claimed[V]{followed: true, v: v}, nil
			}
		}
		if mine {
			return claimed[V]{taskID: id, existed: existed}, nil
		}
		if !existed {
			// Finished between two reads: its verdict, or claim again.
			if v, ok := mem.Recall(key, ttl); ok {
				return claimed[V]{followed: true, v: v}, nil
			}
			continue
		}
		if !told && status != nil {
			status("submitted")
			told = true
		}
		t := time.NewTimer(followPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return claimed[V]{}, ctx.Err()
		case <-t.C:
		}
		if _, running := mem.InFlight(key); !running {
			if v, ok := mem.Recall(key, ttl); ok {
				return claimed[V]{followed: true, v: v}, nil
			}
		}
	}
}
