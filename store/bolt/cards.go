package bolt

import (
	"errors"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
)

// PutCard saves a card (and indexes it by its ts once posted).
func (db *DB) PutCard(rec *store.CardRecord) error {
	rec.Updated = db.now()
	return db.update(func(t txn) error { return putCard(t, rec) })
}

func putCard(t txn, rec *store.CardRecord) error {
	key := rec.Ref().Key()
	if err := t.put(bCards, key, encodeCard(rec)); err != nil {
		return err
	}
	if err := enqueueOutbox(t, rec); err != nil {
		return err
	}
	if rec.Card.CardTS != "" {
		return t.put(bCardTS, rec.Card.Channel+"/"+rec.Card.CardTS, []byte(key))
	}
	return nil
}

// Card returns the card answering (channel, sourceTS), or ErrNotFound.
func (db *DB) Card(ref card.Ref) (*store.CardRecord, error) {
	var rec *store.CardRecord
	err := db.be.view(func(t txn) error {
		var err error
		rec, err = getCard(t, ref.Key())
		return err
	})
	return rec, err
}

func getCard(t txn, key string) (*store.CardRecord, error) {
	v := t.get(bCards, key)
	if v == nil {
		return nil, store.ErrNotFound
	}
	return decodeCard(v)
}

// CardByTS returns the card posted at (channel, cardTS), or ErrNotFound.
func (db *DB) CardByTS(channel, cardTS string) (*store.CardRecord, error) {
	var rec *store.CardRecord
	err := db.be.view(func(t txn) error {
		key := t.get(bCardTS, channel+"/"+cardTS)
		if key == nil {
			return store.ErrNotFound
		}
		var err error
		rec, err = getCard(t, string(key))
		return err
	})
	return rec, err
}

// UpdateCard applies fn to the stored card in one transaction and saves
// it; fn's error aborts without saving. It returns the saved record.
func (db *DB) UpdateCard(ref card.Ref, fn func(rec *store.CardRecord) error) (*store.CardRecord, error) {
	return db.updateCard(db.update, ref, fn, nil)
}

// UpdateCardShared is UpdateCard for the writes every link makes (its
// verdict on the card): concurrent calls may share one transaction and its
// fsync, and each returns once its write is durable. fn may be called more
// than once, each time with the stored record read afresh: it must change
// nothing but rec.
func (db *DB) UpdateCardShared(ref card.Ref, fn func(rec *store.CardRecord) error) (*store.CardRecord, error) {
	return db.updateCard(db.be.batch, ref, fn, nil)
}

// SettleCard is UpdateCard for the write that shows a verdict on a card:
// when target is recorded, ref joins its cards (AddCard) in the same
// transaction, so a recheck of target that finds the verdict finds the
// card too, and a link's verdict costs one commit instead of two. A
// target not recorded (an analysis that failed) is left out, without an
// error; target "" links nothing. On the embedded store concurrent calls
// may share one commit (as UpdateCardShared): fn may run more than once,
// each time with the stored record read afresh, and must change nothing
// but rec.
func (db *DB) SettleCard(ref card.Ref, target string, fn func(rec *store.CardRecord) error) (*store.CardRecord, error) {
	var link func(t txn) error
	if target != "" {
		link = func(t txn) error {
			if err := addCard(t, target, ref, db.nextSeq()); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			return nil
		}
	}
	return db.updateCard(db.be.batch, ref, fn, link)
}

// updateCard applies fn to the card ref and saves it with write; also, if
// set, then runs in the same transaction.
func (db *DB) updateCard(write func(func(t txn) error) error, ref card.Ref, fn func(rec *store.CardRecord) error, also func(t txn) error) (*store.CardRecord, error) {
	var out *store.CardRecord
	err := write(func(t txn) error {
		out = nil
		rec, err := getCard(t, ref.Key())
		if err != nil {
			return err
		}
		if err := fn(rec); err != nil {
			return err
		}
		rec.Updated = db.now()
		if err := putCard(t, rec); err != nil {
			return err
		}
		if also != nil {
			if err := also(t); err != nil {
				return err
			}
		}
		out = rec
		return nil
	})
	return out, err
}

// UnfinishedCards returns the cards still being analysed or whose post was
// interrupted.
func (db *DB) UnfinishedCards() ([]*store.CardRecord, error) {
	var out []*store.CardRecord
	var derr error
	err := db.be.view(func(t txn) error {
		t.scan(bCards, "", "", func(_ string, v []byte) bool {
			var rec *store.CardRecord
			if rec, derr = decodeCard(v); derr != nil {
				return false
			}
			if !rec.Card.Final || rec.PostStarted {
				out = append(out, rec)
			}
			return true
		})
		return derr
	})
	return out, err
}

// UpsertCard applies fn to the card answering ref, or to a new empty record
// when there is none (exists tells which), and saves it in one transaction.
func (db *DB) UpsertCard(ref card.Ref, fn func(rec *store.CardRecord, exists bool) error) (*store.CardRecord, error) {
	return db.upsertCard(db.update, ref, fn)
}

// UpsertCardShared is UpsertCard for the writes every link makes (its
// card's start): concurrent calls may share one transaction and its fsync,
// and each returns once its write is durable. fn may be called more than
// once, each time with the stored record read afresh: it must change
// nothing but rec.
func (db *DB) UpsertCardShared(ref card.Ref, fn func(rec *store.CardRecord, exists bool) error) (*store.CardRecord, error) {
	return db.upsertCard(db.be.batch, ref, fn)
}

func (db *DB) upsertCard(write func(func(t txn) error) error, ref card.Ref, fn func(rec *store.CardRecord, exists bool) error) (*store.CardRecord, error) {
	var out *store.CardRecord
	err := write(func(t txn) error {
		out = nil
		rec, err := getCard(t, ref.Key())
		exists := err == nil
		if errors.Is(err, store.ErrNotFound) {
			rec, err = &store.CardRecord{}, nil
		}
		if err != nil {
			return err
		}
		if err := fn(rec, exists); err != nil {
			return err
		}
		rec.Updated = db.now()
		out = rec
		return putCard(t, rec)
	})
	return out, err
}
