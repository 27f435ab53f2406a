package main

import (
	"bytes"
	"maps"
	"strings"
)

// mapEnv is an environment holding exactly the variables of m: what tests
// give the program instead of setting the process's environment, so that
// they run in parallel and never read the developer's.
func mapEnv(m map[string]string) environment {
	m = maps.Clone(m)
	return environment{
		lookup: func(name string) (string, bool) {
			v, ok := m[name]
			return v, ok
		},
		environ: func() []string {
			var out []string
			for k, v := range m {
				out = append(out, k+"="+v)
			}
			return out
		},
	}
}

// merged is the maps merged, later ones winning.
func merged(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		maps.Copy(out, m)
	}
	return out
}

// runMain runs the real program in this process with the environment
// env (nil: an empty one).
func runMain(env map[string]string, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = runCLI(mapEnv(env), testOptions(), args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}
