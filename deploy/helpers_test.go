package deploy_test

import (
	"github.com/verdictbot/verdictbot/config"
)

// settingsMap is an environment holding exactly the variables of a map.
type settingsMap map[string]string

// mapEnv is the environment m (what the checks give config instead of
// the process's environment).
func mapEnv(m map[string]string) settingsMap { return settingsMap(m) }

// loadValidConfig is the settings of env checked as `verdictbot run`
// checks them (needSlack) or `verdictbot migrate` (not): config.Load,
// config.Unknown and Validate, every problem in one error.
func loadValidConfig(env settingsMap, needSlack bool) (config.Config, error) {
	cfg, err := config.Load(func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	})
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	return cfg, config.Join(err, config.Unknown(environ), cfg.Validate(needSlack))
}
