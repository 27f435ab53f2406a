package bolt

import "testing"

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
