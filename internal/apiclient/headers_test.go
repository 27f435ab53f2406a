package apiclient

import (
	"context"
	"errors"
	"net/http"
	"testing"
)

// TestResponseHeaders: WithResponseHeaders sees each attempt's status
// and headers, a refusal's and a retried one's included; a context
// without it sees nothing and changes nothing.
func TestResponseHeaders(t *testing.T) {
	t.Parallel()
	n := 0
	c, _, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		n++
		w.Header().Set("X-RateLimit-Remaining", map[int]string{1: "9", 2: "8"}[n])
		if n == 1 {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte(`<html>bad gateway</html>`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"error":true,"msg":"task not found"}`))
	}, nil)
	type seen struct {
		status    int
		remaining string
	}
	var got []seen
	ctx := WithResponseHeaders(t.Context(), func(status int, h http.Header) {
		got = append(got, seen{status, h.Get("X-RateLimit-Remaining")})
	})
	err := c.DoJSON(ctx, Request{Op: "status", Method: http.MethodGet, Path: []string{"status", "x"}}, nil)
	if !errors.Is(err, errTaskNotFound) {
		t.Fatalf("err %v", err)
	}
	want := []seen{{http.StatusBadGateway, "9"}, {http.StatusOK, "8"}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("seen %+v, want %+v", got, want)
	}
	if err := c.DoJSON(context.Background(), Request{Op: "status", Method: http.MethodGet, Path: []string{"status", "x"}}, nil); !errors.Is(err, errTaskNotFound) {
		t.Errorf("without the hook: %v", err)
	}
}
