package bolt

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// fillDay writes n tracked URLs on cards, as a day of the bot would, at
// the clock's time.
func fillDay(t testing.TB, db *DB, day, n int) {
	t.Helper()
	now := db.now()
	for i := range n {
		url := fmt.Sprintf("https://host%d.example/day/%d/path/%d?id=%x", i%97, day, i, i*7919)
		ref := card.Ref{Channel: fmt.Sprintf("C%08d", i%30), SourceTS: fmt.Sprintf("%d.%06d", now.Unix(), i)}
		task := fmt.Sprintf("%032x", day*1_000_000+i)
		s := verdict.Scores{verdict.CatPhishing: 0.1, verdict.CatMalicious: 0.02}
		if _, _, err := db.RecordVerdict(store.Verdict{Target: url, Kind: "url", TaskID: task, Level: verdict.Clean, Scores: s, Source: "scan"}, &ref, nil, false); err != nil {
			t.Fatal(err)
		}
		c := card.Card{Channel: ref.Channel, SourceTS: ref.SourceTS, ThreadTS: ref.SourceTS, Final: true,
			Lines: []card.Line{{Kind: card.KindURL, Target: url, Level: verdict.Clean, Scores: s, TaskID: task, Service: "reputation", CheckedAt: now}}}
		if err := db.PutCard(&store.CardRecord{Card: c, Mode: "quiet", Gen: 1}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFileStopsGrowingUnderInsertAndPrune: with a day's records written
// and the records older than the retention pruned every day, bbolt reuses
// the freed pages: once retention applies, the file stops growing.
func TestFileStopsGrowingUnderInsertAndPrune(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}
	dir := t.TempDir()
	db, err := Open(dir, Options{Now: c.now, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const retention = 3 * 24 * time.Hour
	var sizes []int64
	for day := range 16 {
		fillDay(t, db, day, 400)
		if _, err := db.Prune(c.now().Add(-retention)); err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, db.Size())
		c.add(24 * time.Hour)
	}
	t.Logf("file size per day: %v", sizes)
	if sizes[3] < 2*sizes[0] {
		t.Fatalf("the first days did not grow the file (%v): the test writes too little", sizes)
	}
	// From day 4 on, as much is pruned each day as is written.
	plateau := sizes[6]
	for day := 7; day < len(sizes); day++ {
		if sizes[day] > plateau+plateau/10 {
			t.Fatalf("day %d: file %d bytes, more than 10%% above day 6's %d: freed pages are not reused (%v)", day, sizes[day], plateau, sizes)
		}
	}
	if n := db.Counts()[bTargets]; n != 4*400 {
		t.Errorf("%d targets kept, want 4 days' worth (%d)", n, 4*400)
	}
}

func TestCompactShrinksTheFileAndKeepsTheRecords(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}
	dir := t.TempDir()
	db, err := Open(dir, Options{Now: c.now, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	for day := range 5 {
		fillDay(t, db, day, 400)
		c.add(24 * time.Hour)
	}
	keptURL := "https://host0.example/day/4/path/0?id=0"
	if _, err := db.Prune(c.now().Add(-36 * time.Hour)); err != nil { // all but day 4
		t.Fatal(err)
	}
	before := db.Counts()
	wantHist, _ := db.History(keptURL)
	db.Close()

	st, err := Compact(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("before %d bytes, after %d bytes, %s", st.Before, st.After, st.Took)
	if st.After*2 > st.Before {
		t.Errorf("compacted file %d bytes, want under half of %d", st.After, st.Before)
	}
	if fi, err := os.Stat(filepath.Join(dir, FileName+".precompact")); err != nil || fi.Size() != st.Before {
		t.Errorf("original not kept as .precompact: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, FileName+".compact")); !os.IsNotExist(err) {
		t.Errorf("temporary file left: %v", err)
	}
	db, err = Open(dir, Options{Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := db.Counts(); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Errorf("records after compaction %v, before %v", got, before)
	}
	if h, err := db.History(keptURL); err != nil || len(h) != 1 || !h[0].At.Equal(wantHist[0].At) || h[0].TaskID != wantHist[0].TaskID {
		t.Errorf("history after compaction %+v, %v; want %+v", h, err, wantHist)
	}
	if db.Size() != st.After {
		t.Errorf("Size %d, Compact said %d", db.Size(), st.After)
	}
}

func TestCompactRefusesWhileTheStoreIsOpen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.SetChannelMode("C1", "quiet"); err != nil {
		t.Fatal(err)
	}
	_, err = Compact(dir)
	if err == nil || !strings.Contains(err.Error(), "locked by another process") {
		t.Fatalf("Compact while open: %v, want refused", err)
	}
	for _, suffix := range []string{".compact", ".precompact"} {
		if _, err := os.Stat(filepath.Join(dir, FileName+suffix)); !os.IsNotExist(err) {
			t.Errorf("%s exists after a refused compaction", suffix)
		}
	}
	if m, _ := db.ChannelMode("C1"); m != "quiet" {
		t.Errorf("store changed: mode %q", m)
	}
}
