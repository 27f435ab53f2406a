package bolt

import (
	"encoding/json"

	"github.com/verdictbot/verdictbot/store"
)

// migrateCompactV3 moves a schema 2 store to schema 3 (see encode3.go):
// every target gets an id and its history moves into its record (the
// history bucket is emptied), the due and task indexes point to ids, and
// cards are deflated. Other records keep their schema 2 format.
func migrateCompactV3(t txn) error {
	type kv struct {
		k string
		v []byte
	}
	collect := func(bucket string) []kv {
		var all []kv
		t.scan(bucket, "", "", func(k string, v []byte) bool {
			all = append(all, kv{k, append([]byte(nil), v...)})
			return true
		})
		return all
	}
	// Targets (schema 2: URL → JSON Target) and their history
	// (URL \x00 time seq → JSON Verdict, in time order per target).
	hist := map[string][]store.Verdict{}
	for _, e := range collect(bHistory) {
		var v store.Verdict
		if err := json.Unmarshal(e.v, &v); err != nil {
			return err
		}
		if i := len(e.k) - 17; v.Target == "" && i >= 0 && e.k[i] == 0 {
			v.Target = e.k[:i] // target \x00 time(8) seq(8)
		}
		hist[v.Target] = append(hist[v.Target], v)
		if err := t.del(bHistory, e.k); err != nil {
			return err
		}
	}
	for _, e := range collect(bDue) {
		if err := t.del(bDue, e.k); err != nil {
			return err
		}
	}
	for _, e := range collect(bTargets) {
		var tg store.Target
		if err := dec(e.v, &tg); err != nil {
			return err
		}
		if err := t.del(bTargets, e.k); err != nil {
			return err
		}
		id, err := newTargetID(t, tg.Target)
		if err != nil {
			return err
		}
		rec := targetRecord{Target: tg, History: hist[tg.Target]}
		delete(hist, tg.Target)
		if err := putTargetWithCards(t, id, &rec); err != nil {
			return err
		}
		if !tg.NextCheck.IsZero() {
			if err := t.put(bDue, timeKey(tg.NextCheck)+id, nil); err != nil {
				return err
			}
		}
	}
	// A history without its target (never written by schema 2, but keep
	// it rather than lose it): a target made of its last verdict.
	for target, vs := range hist {
		last := vs[len(vs)-1]
		id, err := newTargetID(t, target)
		if err != nil {
			return err
		}
		rec := targetRecord{Target: store.Target{Target: target, Kind: last.Kind, FirstSeen: vs[0].At, Checked: last.At,
			Level: last.Level, Category: last.Category, TaskID: last.TaskID}, History: vs}
		if err := t.put(bTargets, id, encodeTarget(&rec)); err != nil {
			return err
		}
	}
	// Task index: task id → URL becomes packed task id → id.
	for _, e := range collect(bTasks) {
		if err := t.del(bTasks, e.k); err != nil {
			return err
		}
		if err := t.put(bTasks, taskKey(e.k), taskValue(t, string(e.v))); err != nil {
			return err
		}
	}
	for _, e := range collect(bCards) {
		rec, err := decodeCard(e.v)
		if err != nil {
			return err
		}
		if err := t.put(bCards, e.k, encodeCard(rec)); err != nil {
			return err
		}
	}
	return nil
}
