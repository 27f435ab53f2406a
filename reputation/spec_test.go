package reputation

import (
	"os"
	"strings"
	"testing"
)

// TestEveryErrorTextOfTheSpecHasASentinel reads the error table of the
// service's specification (docs/specs/url-reputation-api.md §7) and checks
// that each msg it lists is the text of one of the package's sentinels,
// byte for byte, so errors.Is can match every documented failure.
func TestEveryErrorTextOfTheSpecHasASentinel(t *testing.T) {
	raw, err := os.ReadFile("../docs/specs/url-reputation-api.md")
	if err != nil {
		t.Fatal(err)
	}
	spec := string(raw)
	start := strings.Index(spec, "## 7. Errors")
	end := strings.Index(spec, "## 8.")
	if start < 0 || end < start {
		t.Fatal("the spec has no §7 Errors section")
	}
	sentinels := map[string]bool{}
	for _, e := range []error{ErrInvalidMethod, ErrInvalidJSON, ErrInvalidURL, ErrTaskNotFound, ErrWrongTaskID,
		ErrTaskNotCompleted, ErrFailedToGetResult, ErrVerdictType, ErrOption} {
		sentinels[e.Error()] = true
	}
	var texts []string
	for _, line := range strings.Split(spec[start:end], "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") || strings.TrimSpace(cells[1]) == "msg" {
			continue
		}
		texts = append(texts, strings.TrimSpace(cells[1]))
	}
	if len(texts) < 9 {
		t.Fatalf("read %d error texts from the spec's table: %q", len(texts), texts)
	}
	for _, msg := range texts {
		if !sentinels[msg] {
			t.Errorf("the spec's error %q has no sentinel", msg)
		}
	}
}
