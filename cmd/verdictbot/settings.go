package main

import "reflect"

// settingTags returns the environment names Config reads, in field order.
func settingTags() []string {
	t := reflect.TypeFor[Config]()
	var names []string
	for i := range t.NumField() {
		if tag := t.Field(i).Tag.Get("envconfig"); tag != "" {
			names = append(names, tag)
		}
	}
	return names
}
