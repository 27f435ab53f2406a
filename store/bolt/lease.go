package bolt

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/verdictbot/verdictbot/store"
)

// Lead always leads: the file is opened by one process at a time (its
// lock), so there is nobody to share the periodic jobs with. Its term lasts
// until Release and fences nothing.
func (db *DB) Lead(_ context.Context, job string) (store.Lease, bool, error) {
	return &soleLease{job: job, done: make(chan struct{})}, true, nil
}

// soleLease is the embedded file's term: it holds until released.
type soleLease struct {
	job  string
	once sync.Once
	done chan struct{}
}

func (l *soleLease) Fence() store.Fence { return store.Fence{} }

func (l *soleLease) Remaining() time.Duration {
	select {
	case <-l.done:
		return 0
	default:
		return time.Duration(math.MaxInt64)
	}
}

func (l *soleLease) Done() <-chan struct{} { return l.done }

func (l *soleLease) Release() { l.once.Do(func() { close(l.done) }) }
