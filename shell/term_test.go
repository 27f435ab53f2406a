package shell

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFileHistory(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "verdictbot", "shell_history")
	h, err := openHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"one", "two", "two", "", "esc \x1b[A", "three"} {
		h.Add(l)
	}
	if h.Len() != 3 || h.At(0) != "three" || h.At(2) != "one" {
		t.Fatalf("len %d", h.Len())
	}
	for i := range shellHistoryMax + 10 {
		h.Add(strings.Repeat("x", i%7+1) + string(rune('a'+i%26)))
	}
	h2, err := openHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	if h2.Len() != shellHistoryMax || h2.At(0) != h.At(0) {
		t.Fatalf("reloaded %d lines, newest %q (want %d, %q)", h2.Len(), h2.At(0), shellHistoryMax, h.At(0))
	}
	data, _ := os.ReadFile(path)
	if n := strings.Count(string(data), "\n"); n != shellHistoryMax {
		t.Fatalf("the file was not cut back: %d lines", n)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("history file mode %v", st.Mode())
	}
	if _, err := openHistory(filepath.Join(path, "sub", "x")); err == nil {
		t.Fatal("a history under a file opened")
	}
	var perr *os.PathError
	if _, err := openHistory(filepath.Join(path, "x")); !errors.As(err, &perr) {
		t.Fatalf("err %v", err)
	}
}
