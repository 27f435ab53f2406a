package config

import (
	"fmt"
	"io"
	"net/url"
	"reflect"
	"strings"
	"text/tabwriter"
	"time"
)

// Values returns each setting of c by name, as `verdictbot config` and
// the commands' help show it: secrets masked, lists comma-separated,
// durations short.
func (c Config) Values() map[string]string {
	out := map[string]string{}
	v := reflect.ValueOf(c)
	t := v.Type()
	for i := range t.NumField() {
		if name := t.Field(i).Tag.Get("envconfig"); name != "" {
			out[name] = showSetting(v.Field(i).Interface())
		}
	}
	return out
}

// showSetting is one value for display. Secrets print masked (Secret,
// DatabaseURL); a URL setting with a password in it is masked too.
func showSetting(x any) string {
	switch v := x.(type) {
	case Secret:
		return v.String()
	case DatabaseURL:
		return v.String()
	case time.Duration:
		return shortDuration(v)
	case []time.Duration:
		parts := make([]string, len(v))
		for i, d := range v {
			parts[i] = shortDuration(d)
		}
		return strings.Join(parts, ",")
	case []string:
		return strings.Join(v, ",")
	case string:
		return maskURLPassword(v)
	}
	return fmt.Sprint(x)
}

// shortDuration prints 1h rather than 1h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// maskURLPassword masks the password of a URL with credentials; other
// strings are returned as they are.
func maskURLPassword(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "<unparsable URL>"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
		return u.String()
	}
	return s
}

// WriteListing writes `verdictbot config`'s table: every setting of c,
// its value as Values shows it ("-" when empty) and where it comes from
// (the environment, the default, or the default because the
// environment's value is empty or not valid), lookup being what c was
// loaded from.
func WriteListing(w io.Writer, c Config, lookup func(string) (string, bool)) {
	values := c.Values()
	fmt.Fprintln(w, "# The settings verdictbot run would use (secrets masked).")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SETTING\tVALUE\tFROM")
	for _, name := range Names() {
		from := "default"
		switch raw, set := lookup(name); {
		case c.fromEnv[name]:
			from = "environment"
		case set && strings.TrimSpace(raw) != "":
			from = "default (the environment's value is not valid)"
		case set:
			from = "default (empty in the environment)"
		}
		val := values[name]
		if val == "" {
			val = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", name, val, from)
	}
	tw.Flush()
}
