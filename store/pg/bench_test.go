package pg_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/store/pg"
	"github.com/verdictbot/verdictbot/store/pg/pgtest"
)

// BenchmarkRecordJobs is one journal batch (what an ack waits for) of 1,
// 16 and 256 message jobs with fresh event ids; ns/op is per batch.
//
//	VERDICTBOT_TEST_DATABASE_URL=… go test -run '^$' -bench RecordJobs ./store/pg/
func BenchmarkRecordJobs(b *testing.B) {
	schema, _ := pgtest.Schema(b)
	db, err := pg.Open(context.Background(), pgtest.URL(b), pg.Options{Schema: schema})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	payload := []byte(`{"type":"events_api","payload":{"event":{"type":"message","text":"see <https://example.com/a>"}}}`)
	n := 0
	for _, size := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			for b.Loop() {
				jobs := make([]*store.Job, size)
				for i := range jobs {
					n++
					jobs[i] = &store.Job{Kind: "events_api", EventID: fmt.Sprintf("Ev%d", n), Payload: payload}
				}
				if _, err := db.RecordJobs(jobs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
