package main

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"reflect"
	"strings"
	"text/tabwriter"
	"time"
)

// settingValues returns each setting of c as `verdictbot config` shows it:
// secrets masked, lists comma-separated, durations short.
func settingValues(c *Config) map[string]string {
	out := map[string]string{}
	v := reflect.ValueOf(c).Elem()
	t := v.Type()
	for i := range t.NumField() {
		if name := t.Field(i).Tag.Get("envconfig"); name != "" {
			out[name] = showSetting(v.Field(i).Interface())
		}
	}
	return out
}

// settingDefaults is settingValues of the defaults.
func settingDefaults() map[string]string { return settingValues(defaultConfig()) }

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

// runConfig is `verdictbot config`: every setting, its effective value and
// where it comes from, secrets masked; then the problems `run` would
// report, if any (exit 1).
func runConfig(args []string, stdout io.Writer) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: config takes no arguments, got %q", errUsage, args)
	}
	cfg, err := loadValidConfig(true)
	values := settingValues(cfg)
	fmt.Fprintln(stdout, "# The settings verdictbot run would use (secrets masked).")
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SETTING\tVALUE\tFROM")
	for _, name := range settingTags() {
		from := "default"
		switch raw, set := os.LookupEnv(name); {
		case cfg.fromEnv[name]:
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
	return err
}
