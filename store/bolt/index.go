package bolt

import (
	"errors"
	"strings"

	"github.com/verdictbot/verdictbot/store"
)

// bTasks maps a task id to its target, for lookups by task id
// (/scan history <task_id>, /scan report). Task ids of the two services do
// not collide (32 hex characters vs decimal numbers).
const bTasks = "tasks"

func init() { buckets = append(buckets, bTasks) }

func indexTask(t txn, taskID, target string) error {
	if taskID == "" || target == "" {
		return nil
	}
	return t.put(bTasks, taskKey(taskID), taskValue(t, target))
}

// TargetOfTask returns the target a task analysed, or ErrNotFound.
func (db *DB) TargetOfTask(taskID string) (string, error) {
	var target string
	err := db.be.view(func(t txn) error {
		v := t.get(bTasks, taskKey(strings.TrimSpace(taskID)))
		if v == nil {
			return store.ErrNotFound
		}
		var err error
		if _, target, err = taskTarget(t, v); err == nil && target == "" {
			return store.ErrNotFound
		}
		return err
	})
	return target, err
}

// RecentCards returns up to n cards of a channel, newest message first.
// Only their keys are read until the last n are known, so the cost is
// small even for channels with many cards.
func (db *DB) RecentCards(channel string, n int) ([]*store.CardRecord, error) {
	if n <= 0 {
		return nil, nil
	}
	var out []*store.CardRecord
	err := db.be.view(func(t txn) error {
		p := channel + "/"
		var keys []string
		t.scan(bCards, p, prefixEnd(p), func(k string, _ []byte) bool {
			keys = append(keys, k)
			return true
		})
		for i := len(keys) - 1; i >= 0 && len(out) < n; i-- {
			rec, err := getCard(t, keys[i])
			if err != nil {
				return err
			}
			if len(rec.Card.Lines) == 0 && len(rec.Card.Skipped) == 0 {
				continue
			}
			out = append(out, rec)
		}
		return nil
	})
	return out, err
}

// CardsOfTask returns the cards that show a line of taskID (through the
// task index and the cards its target is shown on), in the order the
// target first appeared on them. It returns none, not an error, for an
// unknown task.
func (db *DB) CardsOfTask(taskID string) ([]*store.CardRecord, error) {
	taskID = strings.TrimSpace(taskID)
	var out []*store.CardRecord
	err := db.be.view(func(t txn) error {
		v := t.get(bTasks, taskKey(taskID))
		if v == nil {
			return nil
		}
		_, target, err := taskTarget(t, v)
		if err != nil || target == "" {
			return err
		}
		id, _, ok, err := getTarget(t, target)
		if err != nil || !ok {
			return err
		}
		for _, ref := range targetCards(t, id) {
			rec, err := getCard(t, ref.Key())
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			for _, l := range rec.Card.Lines {
				if l.TaskID == taskID {
					out = append(out, rec)
					break
				}
			}
		}
		return nil
	})
	return out, err
}
