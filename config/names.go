package config

import "reflect"

// Names returns the environment variables Config reads, in field order:
// every setting's name (the documentation's settings tables, `verdictbot
// config`'s listing and the deployment files follow it).
func Names() []string {
	t := reflect.TypeFor[Config]()
	var names []string
	for i := range t.NumField() {
		if tag := t.Field(i).Tag.Get("envconfig"); tag != "" {
			names = append(names, tag)
		}
	}
	return names
}
