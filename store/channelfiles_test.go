package store

import "testing"

func TestChannelFilesSwitchIsKeptApartFromTheMode(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *DB, _ *clock) {
		if v, err := db.ChannelFiles("C1"); v != "" || err != nil {
			t.Fatalf("unset: %q %v", v, err)
		}
		if err := db.SetChannelMode("C1", "verbose"); err != nil {
			t.Fatal(err)
		}
		if err := db.SetChannelFiles("C1", "off"); err != nil {
			t.Fatal(err)
		}
		if v, _ := db.ChannelFiles("C1"); v != "off" {
			t.Fatalf("files %q", v)
		}
		if m, _ := db.ChannelMode("C1"); m != "verbose" {
			t.Fatalf("the files switch changed the mode: %q", m)
		}
		if v, _ := db.ChannelFiles("C2"); v != "" {
			t.Fatalf("another channel got %q", v)
		}
		db.SetChannelFiles("C1", "")
		if v, _ := db.ChannelFiles("C1"); v != "" {
			t.Fatalf("removed: %q", v)
		}
	})
}

// The switch survives a restart of the file store.
func TestChannelFilesSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.SetChannelFiles("C9", "off")
	db.Close()
	db, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v, _ := db.ChannelFiles("C9"); v != "off" {
		t.Fatalf("after reopen: %q", v)
	}
}
