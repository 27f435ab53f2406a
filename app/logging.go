package app

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/verdictbot/verdictbot/config"
)

// NewLogger builds a logger writing format ("json", else text) at level
// (VERDICTBOT_LOG_FORMAT, _LOG_LEVEL) to w.
// As a last line of defence it removes every configured secret from every
// string it writes, messages included; the code is not meant to log them.
func NewLogger(w io.Writer, format, level string, secrets ...config.Secret) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(strings.ToUpper(level)))
	var forms []string
	for _, s := range secrets {
		if len(s) >= 6 {
			forms = append(forms, string(s))
		}
	}
	redact := func(s string) string {
		for _, f := range forms {
			s = strings.ReplaceAll(s, f, "<redacted>")
		}
		return s
	}
	opts := &slog.HandlerOptions{Level: lvl, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		switch a.Value.Kind() {
		case slog.KindString:
			a.Value = slog.StringValue(redact(a.Value.String()))
		case slog.KindAny:
			switch v := a.Value.Any().(type) {
			case error:
				a.Value = slog.StringValue(redact(v.Error()))
			case fmt.Stringer:
				a.Value = slog.StringValue(redact(v.String()))
			}
		}
		return a
	}}
	if strings.EqualFold(format, "json") {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
