package bot

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/internal/testutil"
	"github.com/verdictbot/verdictbot/store"
)

// downJournal is a journal whose FinishJob the store refuses while down
// (a database stopped), counting the refusals and keeping what it took.
type downJournal struct {
	mu       sync.Mutex
	down     bool
	refused  int
	finished map[uint64]int
}

var errDown = errors.New("postgres: dial tcp 127.0.0.1:5432: connect: connection refused")

func (j *downJournal) FinishJob(id uint64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.down {
		j.refused++
		return errDown
	}
	j.finished[id]++
	return nil
}

func (j *downJournal) state() (refused int, finished map[uint64]int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := map[uint64]int{}
	for id, n := range j.finished {
		out[id] = n
	}
	return j.refused, out
}

func (j *downJournal) setDown(down bool) { j.mu.Lock(); j.down = down; j.mu.Unlock() }

func (j *downJournal) RecordJobs([]*store.Job) ([]bool, error) { return nil, errDown }
func (j *downJournal) PendingJobs() ([]store.Job, error)       { return nil, nil }
func (j *downJournal) OrphanJobs() ([]store.Job, error)        { return nil, nil }
func (j *downJournal) SweepEvery() time.Duration               { return 0 }

// finisherBot is a bot over j whose finisher retries every 1 to 4 ms (the
// real one: every 1 to 10 s), running until the test ends or stop is
// called.
func finisherBot(t *testing.T, j *downJournal) (b *Bot, logs *testutil.SyncBuffer, stop func()) {
	t.Helper()
	logs = &testutil.SyncBuffer{}
	b = New(nil, nil, Handlers{}, Options{Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	b.SetJournal(j)
	b.fin.min, b.fin.max = time.Millisecond, 4*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); b.runFinisher(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return b, logs, stop
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// A job done while the store refuses writes is marked finished once the
// store is back, however long it stayed down: the soak's two PostgreSQL
// stops 13 s apart outlasted the minute a finish used to be retried for,
// and left six jobs in the shared journal until their replica stopped.
func TestAFinishRefusedIsRetriedUntilTheStoreTakesIt(t *testing.T) {
	t.Parallel()
	j := &downJournal{down: true, finished: map[uint64]int{}}
	b, logs, _ := finisherBot(t, j)
	for id := uint64(1); id <= 5; id++ {
		b.finish(id)
	}
	if n := b.unfinished(); n != 5 {
		t.Fatalf("unfinished() = %d while the store is down, want 5", n)
	}
	// Far more refused tries than the old retries (6, over 63 s): the
	// finisher does not give up.
	waitFor(t, "100 refused tries", func() bool { r, _ := j.state(); return r >= 100 })
	if n := b.unfinished(); n != 5 {
		t.Fatalf("unfinished() = %d after 100 refusals, want 5", n)
	}
	j.setDown(false)
	waitFor(t, "the jobs marked finished", func() bool { return b.unfinished() == 0 })
	_, finished := j.state()
	for id := uint64(1); id <= 5; id++ {
		if finished[id] != 1 {
			t.Errorf("job %d finished %d times, want 1 (finished: %v)", id, finished[id], finished)
		}
	}
	// Quiet once done: no more tries.
	refused, _ := j.state()
	time.Sleep(20 * time.Millisecond)
	if r, f := j.state(); r != refused || len(f) != 5 {
		t.Errorf("the finisher kept trying after the store took every job: %d refusals, %v", r, f)
	}
	// One warning for the outage, not one a job; one line when it is over.
	out := logs.String()
	if n := strings.Count(out, `"level":"WARN","msg":"could not mark a job finished`); n != 1 {
		t.Errorf("%d warnings for the refused finishes, want 1:\n%s", n, out)
	}
	if !strings.Contains(out, `"msg":"jobs marked finished now that the store takes writes again","jobs":5`) {
		t.Errorf("no line saying the 5 jobs were marked finished:\n%s", out)
	}
	// A later refusal warns again.
	j.setDown(true)
	b.finish(6)
	if n := strings.Count(logs.String(), `"level":"WARN","msg":"could not mark a job finished`); n != 2 {
		t.Errorf("%d warnings after a second outage, want 2", n)
	}
	j.setDown(false)
	waitFor(t, "job 6 marked finished", func() bool { _, f := j.state(); return f[6] == 1 })
}

// Stopping while the store still refuses: the finisher tries once more,
// says how many jobs will run again after a restart, and returns.
func TestAFinisherStoppingWithTheStoreDownSaysWhatIsLeft(t *testing.T) {
	t.Parallel()
	j := &downJournal{down: true, finished: map[uint64]int{}}
	b, logs, stop := finisherBot(t, j)
	b.finish(7)
	b.finish(8)
	waitFor(t, "a retry", func() bool { r, _ := j.state(); return r >= 3 })
	stop()
	if !strings.Contains(logs.String(), `"msg":"stopping with jobs done that the store did not mark finished: they run again after a restart, and their cards are updated in place","jobs":2`) {
		t.Errorf("no line saying 2 jobs are left:\n%s", logs.String())
	}
}

// The finish that succeeds at once does not involve the finisher.
func TestAFinishTheStoreTakesIsNotRetried(t *testing.T) {
	t.Parallel()
	j := &downJournal{finished: map[uint64]int{}}
	b, logs, stop := finisherBot(t, j)
	b.finish(9)
	stop()
	if _, f := j.state(); f[9] != 1 || b.unfinished() != 0 {
		t.Fatalf("finished %v, unfinished() = %d; want job 9 once and none left", f, b.unfinished())
	}
	if strings.Contains(logs.String(), "could not mark") {
		t.Errorf("a warning for a finish the store took:\n%s", logs.String())
	}
}
