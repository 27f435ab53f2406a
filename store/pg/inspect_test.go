package pg_test

import (
	"context"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/store/pg"
	"github.com/verdictbot/verdictbot/store/pg/pgtest"
)

// TestInspect: Inspect reads an empty schema as version 0 with no
// replicas, and creates nothing; after a start it reads the version
// and the replicas, a killed one as not live, changing nothing.
func TestInspect(t *testing.T) {
	t.Parallel()
	schema, base := pgtest.Schema(t)
	ctx := context.Background()
	opt := pg.Options{Schema: schema, Lease: testLease}
	in, err := pg.Inspect(ctx, base, opt)
	if err != nil || in.Version != 0 || len(in.Replicas) != 0 {
		t.Fatalf("empty schema: %+v, %v", in, err)
	}
	if in, err := pg.Inspect(ctx, base, opt); err != nil || in.Version != 0 {
		t.Fatalf("Inspect migrated the schema: %+v, %v", in, err)
	}
	openReplica(t, schema, pgtest.URL(t), "a")
	b := openReplica(t, schema, pgtest.URL(t), "b")
	b.Crash()
	time.Sleep(testLease) // b's heartbeat is older than 3/5 of the lease
	in, err = pg.Inspect(ctx, base, opt)
	if err != nil || in.Version != pg.SchemaVersion || len(in.Replicas) != 2 {
		t.Fatalf("after a start: %+v, %v", in, err)
	}
	if r := in.Replicas[0]; r.ID != "a" || !r.Live || r.Started.IsZero() {
		t.Errorf("live replica %+v", r)
	}
	if r := in.Replicas[1]; r.ID != "b" || r.Live || r.Age < testLease*3/5 {
		t.Errorf("killed replica %+v", r)
	}
}
