package apiclient

import (
	"context"
	"net/http"
)

type headersKey struct{}

// WithResponseHeaders returns a context whose requests hand every answer
// they receive (each attempt's, before it is decoded) to f: its HTTP
// status and a copy of its headers. `verdictbot doctor` reads a service's
// rate-limit headers with it; f runs on the caller's goroutine.
func WithResponseHeaders(ctx context.Context, f func(status int, h http.Header)) context.Context {
	return context.WithValue(ctx, headersKey{}, f)
}

// responseHeaders calls ctx's WithResponseHeaders function, if any.
func responseHeaders(ctx context.Context, resp *http.Response) {
	if f, ok := ctx.Value(headersKey{}).(func(int, http.Header)); ok && f != nil {
		f(resp.StatusCode, resp.Header.Clone())
	}
}
