package scan

import (
	"io"
	"testing"
)

func TestTempFileIsPrivateAndHashes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tf, err := newTempFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := tf.f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if perm := st.Mode().Perm(); perm != 0o600 {
		t.Errorf("mode %v, want 0600", perm)
	}
	if _, err := io.WriteString(tf, "first attempt, cut short"); err != nil {
		t.Fatal(err)
	}
	if err := tf.reset(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(tf, "abc"); err != nil {
		t.Fatal(err)
	}
	tf.finish(3)
	if tf.md5 != "900150983cd24fb0d6963f7d28e17f72" || tf.sha1 != "a9993e364706816aba3e25717850c26c9cd0d89d" ||
		tf.sha256 != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("hashes %s %s %s", tf.md5, tf.sha1, tf.sha256)
	}
	if err := tf.rewind(); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(tf.f)
	if string(b) != "abc" {
		t.Errorf("content %q", b)
	}
	tf.remove()
	tf.remove()
	if _, err := tf.f.Stat(); err == nil {
		t.Error("file still open after remove")
	}
	if left, _ := filepathGlob(dir); len(left) != 0 {
		t.Errorf("left in the temp dir: %v", left)
	}
}
