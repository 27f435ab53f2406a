package deploy_test

// Checks of the deployment examples in deploy/: the Kubernetes set for one
// replica on the embedded file (deploy/kubernetes), the overlay for several
// replicas on PostgreSQL (deploy/kubernetes-postgres), and the Compose trial
// (deploy/compose.yaml). No cluster and no Docker engine run here, so the
// tests read the files: the Kubernetes sets are rendered as `kubectl apply
// -k` would (kustomizeBuild, cross-checked against kubectl when it is
// installed), and each test names what would break in the running system.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/config"
)

const (
	repoRoot       = "../"
	k8sFileDir     = repoRoot + "deploy/kubernetes"
	k8sPostgresDir = repoRoot + "deploy/kubernetes-postgres"
	composeFile    = repoRoot + "deploy/compose.yaml"
	composeEnvFile = repoRoot + "deploy/.env.example"

	// documentedGrace is the grace period before SIGKILL that
	// docs/operations.md ("Stopping") asks for: the process exits within
	// 10 s of SIGTERM.
	documentedGrace = 15
)

// TestDeployKubernetesFileIsOneReplica: the default set keeps the state in
// the embedded file, which has one writer: one replica, Recreate (the old
// pod releases the volume before the new one starts), the claim mounted
// at VERDICTBOT_DATA_DIR, and no database.
func TestDeployKubernetesFileIsOneReplica(t *testing.T) {
	t.Parallel()
	objs := kustomizeBuild(t, k8sFileDir)
	dep := onlyObject(t, objs, "Deployment")
	spec := dig(t, dep, "spec").(map[string]any)
	if r := spec["replicas"]; r != 1 {
		t.Errorf("replicas = %v, want 1 (the file has one writer)", r)
	}
	if s := dig(t, dep, "spec", "strategy", "type"); s != "Recreate" {
		t.Errorf("strategy = %v, want Recreate (a rolling update would start a second pod on the locked file)", s)
	}
	pvc := onlyObject(t, objs, "PersistentVolumeClaim")
	vol := volumeAt(t, dep, "/data")
	if claim, _ := digOK(vol, "persistentVolumeClaim", "claimName"); claim != dig(t, pvc, "metadata", "name") {
		t.Errorf("/data is %v, want the claim %v", vol, dig(t, pvc, "metadata", "name"))
	}
	if _, ok := containerEnv(t, dep)["VERDICTBOT_DATABASE_URL"]; ok {
		t.Error("the one-replica set reads VERDICTBOT_DATABASE_URL: it is the file's example")
	}
	checkPodBasics(t, dep)
	checkSettingNames(t, objs)
}

// TestDeployKubernetesPostgresOverlay: the overlay runs 3 replicas with a
// RollingUpdate that never goes below 3 (maxUnavailable 0, maxSurge 1), a
// PodDisruptionBudget of one replica at a time over the same pods, spread
// over nodes, no claim, /data an emptyDir, and the database URL from the
// Secret; everything the base gets right (service links off, probes,
// grace period) still holds.
func TestDeployKubernetesPostgresOverlay(t *testing.T) {
	t.Parallel()
	objs := kustomizeBuild(t, k8sPostgresDir)
	dep := onlyObject(t, objs, "Deployment")
	if r := dig(t, dep, "spec", "replicas"); r != 3 {
		t.Errorf("replicas = %v, want 3", r)
	}
	strategy := dig(t, dep, "spec", "strategy").(map[string]any)
	want := map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxUnavailable": 0, "maxSurge": 1}}
	if !reflect.DeepEqual(strategy, want) {
		t.Errorf("strategy = %v, want %v", strategy, want)
	}
	if n := len(objectsOf(objs, "PersistentVolumeClaim")); n != 0 {
		t.Errorf("%d PersistentVolumeClaim(s): the state is in PostgreSQL", n)
	}
	if vol := volumeAt(t, dep, "/data"); vol["emptyDir"] == nil || len(vol) != 2 {
		t.Errorf("/data is %v, want an emptyDir (temporary files only)", vol)
	}
	env := containerEnv(t, dep)
	dbURL, ok := env["VERDICTBOT_DATABASE_URL"]
	if !ok {
		t.Fatal("VERDICTBOT_DATABASE_URL is not set")
	}
	if name, _ := digOK(dbURL, "valueFrom", "secretKeyRef", "name"); name != "verdictbot" {
		t.Errorf("VERDICTBOT_DATABASE_URL = %v, want it from the Secret verdictbot", dbURL)
	}

	pdb := onlyObject(t, objs, "PodDisruptionBudget")
	if m := dig(t, pdb, "spec", "maxUnavailable"); m != 1 {
		t.Errorf("PodDisruptionBudget maxUnavailable = %v, want 1", m)
	}
	if _, ok := digOK(pdb, "spec", "minAvailable"); ok {
		t.Error("PodDisruptionBudget sets minAvailable too")
	}
	podLabels := dig(t, dep, "spec", "template", "metadata", "labels").(map[string]any)
	if !selects(dig(t, pdb, "spec", "selector", "matchLabels").(map[string]any), podLabels) {
		t.Errorf("the PodDisruptionBudget's selector does not select the pods (labels %v)", podLabels)
	}

	spread, _ := digOK(dep, "spec", "template", "spec", "topologySpreadConstraints")
	hostSpread := false
	for _, c := range asList(spread) {
		c := c.(map[string]any)
		if c["topologyKey"] == "kubernetes.io/hostname" && selects(dig(t, c, "labelSelector", "matchLabels").(map[string]any), podLabels) {
			hostSpread = true
		}
	}
	if !hostSpread {
		t.Error("no topology spread of the pods over nodes (kubernetes.io/hostname)")
	}
	checkPodBasics(t, dep)
	checkSettingNames(t, objs)
}

// TestDeployKubernetesRendersLikeKubectl: kustomizeBuild, which the tests
// above rely on, renders both sets as kubectl's kustomize does. It needs
// kubectl; without it the other tests still run on kustomizeBuild alone.
func TestDeployKubernetesRendersLikeKubectl(t *testing.T) {
	t.Parallel()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed: the renderer of these tests is not cross-checked")
	}
	for _, dir := range []string{k8sFileDir, k8sPostgresDir} {
		var stderr bytes.Buffer
		cmd := exec.Command(kubectl, "kustomize", dir)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("kubectl kustomize %s: %v: %s", dir, err, stderr.String())
		}
		got := byKindName(t, kustomizeBuild(t, dir))
		want := byKindName(t, decodeYAMLDocs(t, dir, out))
		if !reflect.DeepEqual(got, want) {
			for k := range want {
				if !reflect.DeepEqual(got[k], want[k]) {
					t.Errorf("%s: %s renders differently:\n got  %v\n want %v", dir, k, got[k], want[k])
				}
			}
			for k := range got {
				if _, ok := want[k]; !ok {
					t.Errorf("%s: %s is not in kubectl's output", dir, k)
				}
			}
		}
	}
}

// TestDeployComposeReplicasShareOneDatabase: compose.yaml runs PostgreSQL
// 15 (healthy by pg_isready, data in a named volume) and at least two
// replicas of `verdictbot run` with the very same VERDICTBOT_DATABASE_URL
// pointing at it, each healthy by `verdictbot healthcheck`, started once
// the database is healthy, with the tokens from deploy/.env; the
// simulator serves both services unless .env names real ones.
func TestDeployComposeReplicasShareOneDatabase(t *testing.T) {
	t.Parallel()
	services := composeServices(t)

	pg, pgName := composeService(t, services, func(s map[string]any) bool {
		img, _ := s["image"].(string)
		return strings.HasPrefix(img, "postgres:")
	})
	if img := pg["image"].(string); img != "postgres:15" && !strings.HasPrefix(img, "postgres:15.") && !strings.HasPrefix(img, "postgres:15-") {
		t.Errorf("PostgreSQL image %s, want 15", img)
	}
	if hc := strings.Join(asStrings(dig(t, pg, "healthcheck", "test")), " "); !strings.Contains(hc, "pg_isready") {
		t.Errorf("PostgreSQL healthcheck %q does not use pg_isready", hc)
	}
	checkNamedVolume(t, pg, "/var/lib/postgresql/data")
	pgEnv := composeEnv(t, pg)

	_, simName := composeService(t, services, func(s map[string]any) bool {
		cmd := asStrings(s["command"])
		return len(cmd) > 0 && cmd[0] == "sim"
	})
	simPort := "8099" // `verdictbot sim` listens on 127.0.0.1:8099 by default
	if cmd := asStrings(services[simName].(map[string]any)["command"]); slices.Contains(cmd, "--addr") {
		addr := cmd[slices.Index(cmd, "--addr")+1]
		if !strings.HasPrefix(addr, "0.0.0.0:") {
			t.Errorf("the simulator listens on %s: the replicas cannot reach it", addr)
		}
		simPort = strings.TrimPrefix(addr, "0.0.0.0:")
	} else {
		t.Error("the simulator keeps its default 127.0.0.1 address: the replicas cannot reach it")
	}

	var replicas []string
	dbURL := ""
	for name, s := range services {
		s := s.(map[string]any)
		if !slices.Equal(asStrings(s["command"]), []string{"run"}) {
			continue
		}
		replicas = append(replicas, name)
		if b, _ := digOK(s, "build", "dockerfile"); b != "Dockerfile" {
			t.Errorf("%s: not built from the repository's Dockerfile (build: %v)", name, s["build"])
		}
		if ctx, _ := digOK(s, "build", "context"); ctx != ".." {
			t.Errorf("%s: build context %v, want .. (the repository)", name, ctx)
		}
		if hc := asStrings(dig(t, s, "healthcheck", "test")); len(hc) < 2 || hc[len(hc)-1] != "healthcheck" || !strings.HasSuffix(hc[len(hc)-2], "verdictbot") {
			t.Errorf("%s: healthcheck %v, want verdictbot healthcheck", name, hc)
		}
		if cond, _ := digOK(s, "depends_on", pgName, "condition"); cond != "service_healthy" {
			t.Errorf("%s: starts before PostgreSQL is healthy (depends_on: %v)", name, s["depends_on"])
		}
		if !slices.Contains(composeEnvFiles(s), ".env") {
			t.Errorf("%s: the tokens do not come from .env (env_file: %v)", name, s["env_file"])
		}
		if g := s["stop_grace_period"]; g != fmt.Sprintf("%ds", documentedGrace) {
			t.Errorf("%s: stop_grace_period %v, want %ds (the process exits within 10 s)", name, g, documentedGrace)
		}
		env := composeEnv(t, s)
		u := env["VERDICTBOT_DATABASE_URL"]
		if u == "" {
			t.Errorf("%s: VERDICTBOT_DATABASE_URL is not set", name)
		} else if dbURL == "" {
			dbURL = u
		} else if u != dbURL {
			t.Errorf("%s: VERDICTBOT_DATABASE_URL %q, another replica has %q: two databases, two bots", name, u, dbURL)
		}
		plainHosts := interpolationDefault(env["VERDICTBOT_SERVICE_PLAIN_HTTP_HOSTS"], "VERDICTBOT_SERVICE_PLAIN_HTTP_HOSTS")
		for _, svc := range []string{"REPUTATION_URL", "SANDBOX_URL"} {
			def := interpolationDefault(env[svc], svc)
			if def != "http://"+simName+":"+simPort+"/" {
				t.Errorf("%s: %s = %q, want the simulator by default (http://%s:%s/)", name, svc, env[svc], simName, simPort)
			}
			// Plain http to the simulator's name must be allowed, or the
			// replicas refuse to start.
			if _, err := apptest.LoadConfig(map[string]string{svc: def, "VERDICTBOT_SERVICE_PLAIN_HTTP_HOSTS": plainHosts}, false); err != nil {
				t.Errorf("%s: the default %s is refused: %v", name, svc, err)
			}
		}
		checkNamesAreSettings(t, "compose.yaml "+name, slices.Collect(maps.Keys(env)), nil)
	}
	if len(replicas) < 2 {
		t.Fatalf("%d service(s) run `verdictbot run`, want 2 or more: %v", len(replicas), replicas)
	}

	u, err := url.Parse(withoutInterpolations(dbURL))
	if err != nil {
		t.Fatalf("VERDICTBOT_DATABASE_URL %q: %v", dbURL, err)
	}
	if u.Hostname() != pgName || (u.Port() != "" && u.Port() != "5432") {
		t.Errorf("VERDICTBOT_DATABASE_URL points at %s, not at the service %s", u.Host, pgName)
	}
	if db := strings.TrimPrefix(u.Path, "/"); db != pgEnv["POSTGRES_DB"] || u.User.Username() != pgEnv["POSTGRES_USER"] {
		t.Errorf("VERDICTBOT_DATABASE_URL names user %q, database %q; PostgreSQL creates %q, %q",
			u.User.Username(), db, pgEnv["POSTGRES_USER"], pgEnv["POSTGRES_DB"])
	}
	pw, _ := u.User.Password()
	if want := withoutInterpolations(pgEnv["POSTGRES_PASSWORD"]); pw != want || !strings.HasPrefix(want, "INTERPOLATED-") {
		t.Errorf("VERDICTBOT_DATABASE_URL's password %q is not PostgreSQL's POSTGRES_PASSWORD %q from .env", pw, pgEnv["POSTGRES_PASSWORD"])
	}
}

// TestDeployNoSecretIsCommitted: no token, key or password is written in
// deploy/: Kubernetes reads them from the Secret (the example holds
// placeholders), Compose from deploy/.env, which git ignores and whose
// example is empty. A value that looks like a Slack token or a connection
// string with a password fails anywhere under deploy/.
func TestDeployNoSecretIsCommitted(t *testing.T) {
	t.Parallel()
	tokenLike := regexp.MustCompile(`xox[abpre]-[0-9]|xapp-[0-9]|postgres(?:ql)?://[^\s:/@"']+:([^\s@"']+)@`)
	err := filepath.WalkDir(repoRoot+"deploy", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Base(path) == ".env" { // a local .env is git-ignored
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range tokenLike.FindAllSubmatch(b, -1) {
			if pw := string(m[1]); pw != "" && (strings.HasPrefix(pw, "${") || strings.HasPrefix(pw, "<")) {
				continue // an interpolation, or a <placeholder> in a comment
			}
			t.Errorf("%s: %q looks like a secret", path, m[0])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	for _, dir := range []string{k8sFileDir, k8sPostgresDir} {
		objs := kustomizeBuild(t, dir)
		for name, e := range containerEnv(t, onlyObject(t, objs, "Deployment")) {
			if !secretName(name) {
				continue
			}
			if _, ok := digOK(e, "valueFrom", "secretKeyRef", "name"); !ok {
				t.Errorf("%s: %s is not read from the Secret: %v", dir, name, e)
			}
		}
		for _, cm := range objectsOf(objs, "ConfigMap") {
			data, _ := cm["data"].(map[string]any)
			for name := range data {
				if secretName(name) {
					t.Errorf("%s: the ConfigMap holds %s: secrets go in the Secret", dir, name)
				}
			}
		}
	}
	secret := decodeYAMLDocs(t, "secret.example.yaml", readFile(t, k8sFileDir+"/secret.example.yaml"))[0]
	for name, v := range dig(t, secret, "stringData").(map[string]any) {
		if s, _ := v.(string); !strings.HasPrefix(s, "REPLACE-") {
			t.Errorf("secret.example.yaml: %s = %q, want a REPLACE-… placeholder", name, s)
		}
	}

	for name, s := range composeServices(t) {
		for k, v := range composeEnv(t, s.(map[string]any)) {
			if !secretName(k) {
				continue
			}
			if k == "VERDICTBOT_DATABASE_URL" {
				u, err := url.Parse(withoutInterpolations(v))
				if pw, set := u.User.Password(); err != nil || (set && !strings.HasPrefix(pw, "INTERPOLATED-")) {
					t.Errorf("compose.yaml %s: the password in %s is written out, not taken from .env", name, k)
				}
				continue
			}
			// The value is the variable of the same name from .env; the API
			// keys may default to a placeholder the simulator accepts.
			m := interpolation.FindStringSubmatch(v)
			ok := m != nil && m[0] == v && m[1] == k &&
				(m[2] == "" || m[2] == ":?" || m[2] == "?" || (m[2] == ":-" && m[3] == "sim" && strings.HasSuffix(k, "_API_KEY")))
			if !ok {
				t.Errorf("compose.yaml %s: %s = %q, want ${%s} from .env", name, k, v, k)
			}
		}
	}

	names := []string{}
	for i, line := range strings.Split(string(readFile(t, composeEnvFile)), "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "#"))
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.ContainsAny(k, " \t") || k == "" {
			continue // prose
		}
		names = append(names, k)
		if secretName(k) && v != "" {
			t.Errorf(".env.example:%d: %s has a value: the example stays empty", i+1, k)
		}
	}
	if !slices.Contains(names, "SLACK_BOT_TOKEN") || !slices.Contains(names, "SLACK_APP_TOKEN") || !slices.Contains(names, "POSTGRES_PASSWORD") {
		t.Errorf(".env.example does not document the tokens and the database password: %v", names)
	}
	checkNamesAreSettings(t, ".env.example", names, []string{"POSTGRES_PASSWORD"})

	ignored := false
	for line := range strings.SplitSeq(string(readFile(t, repoRoot+".gitignore")), "\n") {
		switch strings.TrimSpace(line) {
		case "/deploy/.env", "deploy/.env", ".env", "*.env":
			ignored = true
		}
	}
	if !ignored {
		t.Error(".gitignore does not ignore deploy/.env")
	}
}

// TestDeployFilesNameOnlyKnownSettings: every VERDICTBOT_* name written in
// deploy/, comments included (a commented-out example is copied), is a
// setting verdictbot knows; it refuses to start on any other. The names
// Kubernetes derives from the metrics Service are the exception the
// comments explain.
func TestDeployFilesNameOnlyKnownSettings(t *testing.T) {
	t.Parallel()
	name := regexp.MustCompile(`VERDICTBOT_[A-Z0-9_]*[A-Z0-9]`)
	known := config.Names()
	err := filepath.WalkDir(repoRoot+"deploy", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Base(path) == ".env" {
			return err
		}
		names := name.FindAllString(string(readFile(t, path)), -1)
		slices.Sort(names)
		for _, n := range slices.Compact(names) {
			// The test suite's own variables (testutil.TestVariables) are
			// not settings; the prefix is split so that this line names none.
			if !slices.Contains(known, n) && !strings.HasPrefix(n, "VERDICTBOT_METRICS") && !strings.HasPrefix(n, "VERDICTBOT_"+"TEST_") {
				t.Errorf("%s names %s, which is not a setting", path, n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkPodBasics: what both Kubernetes sets must keep.
func checkPodBasics(t *testing.T, dep map[string]any) {
	t.Helper()
	pod := dig(t, dep, "spec", "template", "spec").(map[string]any)
	if pod["enableServiceLinks"] != false {
		t.Error("enableServiceLinks is not false: Kubernetes would inject VERDICTBOT_METRICS_* variables, which verdictbot refuses")
	}
	if g := pod["terminationGracePeriodSeconds"]; g != documentedGrace {
		t.Errorf("terminationGracePeriodSeconds = %v, want %d (the process exits within 10 s)", g, documentedGrace)
	}
	c := onlyContainer(t, dep)
	if p, _ := digOK(c, "livenessProbe", "httpGet", "path"); p != "/healthz" {
		t.Errorf("livenessProbe on %v, want /healthz (a not-ready replica may hold acked envelopes: never restart on /readyz)", p)
	}
	if p, _ := digOK(c, "readinessProbe", "httpGet", "path"); p != "/readyz" {
		t.Errorf("readinessProbe on %v, want /readyz", p)
	}
	if args := asStrings(c["args"]); !slices.Equal(args, []string{"run"}) {
		t.Errorf("args %v, want [run]", args)
	}
	if d := containerEnv(t, dep)["VERDICTBOT_DATA_DIR"]; d == nil || d.(map[string]any)["value"] != "/data" {
		t.Errorf("VERDICTBOT_DATA_DIR = %v, want /data (the mount)", d)
	}
}

// checkSettingNames: the names the Kubernetes objects give the container
// (env entries, ConfigMap keys) are settings.
func checkSettingNames(t *testing.T, objs []map[string]any) {
	t.Helper()
	var names []string
	for n := range containerEnv(t, onlyObject(t, objs, "Deployment")) {
		names = append(names, n)
	}
	for _, cm := range objectsOf(objs, "ConfigMap") {
		data, _ := cm["data"].(map[string]any)
		for n := range data {
			names = append(names, n)
		}
	}
	// GOMEMLIMIT is the Go runtime's, set from the memory limit.
	checkNamesAreSettings(t, "Kubernetes", names, []string{"GOMEMLIMIT"})
}

// checkNamesAreSettings fails for a name that is not a setting of Config
// (or one of extra): VERDICTBOT_* names stop start-up, others are ignored
// silently, which is worse.
func checkNamesAreSettings(t *testing.T, where string, names, extra []string) {
	t.Helper()
	tags := config.Names()
	for _, n := range names {
		if !slices.Contains(tags, n) && !slices.Contains(extra, n) {
			t.Errorf("%s sets %s, which is not a setting", where, n)
		}
	}
}

// secretName reports whether the variable name holds a secret.
func secretName(name string) bool {
	return name == "VERDICTBOT_DATABASE_URL" || strings.HasSuffix(name, "_TOKEN") ||
		strings.HasSuffix(name, "_KEY") || strings.HasSuffix(name, "_PASSWORD") || strings.HasSuffix(name, "_SECRET")
}

// ---- Compose ----

func composeServices(t *testing.T) map[string]any {
	t.Helper()
	doc := decodeYAMLDocs(t, composeFile, readFile(t, composeFile))
	if len(doc) != 1 {
		t.Fatalf("compose.yaml: %d documents", len(doc))
	}
	return dig(t, doc[0], "services").(map[string]any)
}

// composeService returns the one service for which match holds.
func composeService(t *testing.T, services map[string]any, match func(map[string]any) bool) (map[string]any, string) {
	t.Helper()
	var found []string
	for name, s := range services {
		if match(s.(map[string]any)) {
			found = append(found, name)
		}
	}
	if len(found) != 1 {
		t.Fatalf("compose.yaml: want one such service, found %v", found)
	}
	return services[found[0]].(map[string]any), found[0]
}

// composeEnv returns a service's environment, written as a mapping or as
// a list of NAME=value.
func composeEnv(t *testing.T, s map[string]any) map[string]string {
	t.Helper()
	env := map[string]string{}
	switch e := s["environment"].(type) {
	case nil:
	case map[string]any:
		for k, v := range e {
			env[k] = fmt.Sprint(v)
		}
	case []any:
		for _, kv := range e {
			k, v, _ := strings.Cut(kv.(string), "=")
			env[k] = v
		}
	default:
		t.Fatalf("environment %T", e)
	}
	return env
}

func composeEnvFiles(s map[string]any) []string {
	var files []string
	for _, f := range asList(s["env_file"]) {
		if m, ok := f.(map[string]any); ok {
			f = m["path"]
		}
		files = append(files, fmt.Sprint(f))
	}
	return files
}

// checkNamedVolume: the service mounts a named volume (declared at the top
// of compose.yaml) at target.
func checkNamedVolume(t *testing.T, s map[string]any, target string) {
	t.Helper()
	doc := decodeYAMLDocs(t, composeFile, readFile(t, composeFile))[0]
	declared, _ := doc["volumes"].(map[string]any)
	for _, v := range asList(s["volumes"]) {
		src, dst, _ := strings.Cut(fmt.Sprint(v), ":")
		if dst == target {
			if _, ok := declared[src]; !ok {
				t.Errorf("%s is mounted from %q, not a named volume", target, src)
			}
			return
		}
	}
	t.Errorf("no volume mounted at %s", target)
}

// interpolation matches Compose's ${NAME}, ${NAME:-default}, ${NAME:?message}
// (and the forms without the colon).
var interpolation = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}`)

// withoutInterpolations replaces each ${NAME…} by INTERPOLATED-NAME, so that
// the value can be parsed.
func withoutInterpolations(s string) string {
	return interpolation.ReplaceAllString(s, "INTERPOLATED-$1")
}

// interpolationDefault is the value of v when .env does not set name: its
// ${name:-default}'s default, or v itself when it interpolates nothing.
func interpolationDefault(v, name string) string {
	m := interpolation.FindStringSubmatch(v)
	if m == nil {
		return v
	}
	if m[0] != v || m[1] != name || m[2] != ":-" {
		return ""
	}
	return m[3]
}

// ---- Kubernetes ----

// kustomizeBuild renders the kustomization in dir as `kubectl kustomize`
// does, for what the sets in deploy/ use: resources (files, and
// directories holding a kustomization), images, and patches that are
// either JSON patches (RFC 6902: add, remove, replace, test) or a
// `$patch: delete` of one object. Anything else fails the test rather
// than being ignored; TestDeployKubernetesRendersLikeKubectl compares the
// result with kubectl's.
func kustomizeBuild(t *testing.T, dir string) []map[string]any {
	t.Helper()
	k := decodeYAMLDocs(t, dir+"/kustomization.yaml", readFile(t, dir+"/kustomization.yaml"))[0]
	for key := range k {
		switch key {
		case "apiVersion", "kind", "resources", "patches", "images":
		default:
			t.Fatalf("%s/kustomization.yaml: %s is not understood by this test's renderer: teach kustomizeBuild", dir, key)
		}
	}
	var objs []map[string]any
	for _, r := range asStrings(k["resources"]) {
		path := filepath.Join(dir, r)
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.IsDir() {
			objs = append(objs, kustomizeBuild(t, path)...)
			continue
		}
		objs = append(objs, decodeYAMLDocs(t, path, readFile(t, path))...)
	}
	for _, p := range asList(k["patches"]) {
		p := p.(map[string]any)
		var body []byte
		if path, ok := p["path"].(string); ok {
			body = readFile(t, filepath.Join(dir, path))
		} else {
			body = []byte(p["patch"].(string))
		}
		var patch any
		if err := yaml.Unmarshal(body, &patch); err != nil {
			t.Fatalf("%s: patch: %v", dir, err)
		}
		switch patch := patch.(type) {
		case []any:
			target, _ := p["target"].(map[string]any)
			n := 0
			for i, o := range objs {
				if !matchesTarget(o, target) {
					continue
				}
				patched, err := applyJSONPatch(o, patch)
				if err != nil {
					t.Fatalf("%s: patch of %s/%v: %v", dir, o["kind"], dig(t, o, "metadata", "name"), err)
				}
				objs[i] = patched.(map[string]any)
				n++
			}
			if n == 0 {
				t.Fatalf("%s: patch target %v matches nothing", dir, target)
			}
		case map[string]any:
			if patch["$patch"] != "delete" {
				t.Fatalf("%s: a strategic merge patch other than $patch: delete is not understood by this test's renderer", dir)
			}
			name := dig(t, patch, "metadata", "name")
			before := len(objs)
			objs = slices.DeleteFunc(objs, func(o map[string]any) bool {
				return o["kind"] == patch["kind"] && dig(t, o, "metadata", "name") == name
			})
			if len(objs) == before {
				t.Fatalf("%s: $patch: delete of %s/%v matches nothing", dir, patch["kind"], name)
			}
		default:
			t.Fatalf("%s: patch %T", dir, patch)
		}
	}
	for _, img := range asList(k["images"]) {
		img := img.(map[string]any)
		for _, o := range objs {
			cs, _ := digOK(o, "spec", "template", "spec", "containers")
			for _, c := range asList(cs) {
				c := c.(map[string]any)
				name, tag := splitImage(c["image"].(string))
				if name != img["name"] {
					continue
				}
				if n, ok := img["newName"].(string); ok {
					name = n
				}
				if nt, ok := img["newTag"].(string); ok {
					tag = nt
				}
				c["image"] = name
				if tag != "" {
					c["image"] = name + ":" + tag
				}
			}
		}
	}
	return objs
}

func matchesTarget(o, target map[string]any) bool {
	group, version, _ := strings.Cut(fmt.Sprint(o["apiVersion"]), "/")
	if version == "" { // core: "v1"
		group, version = "", group
	}
	meta, _ := o["metadata"].(map[string]any)
	for k, want := range target {
		var got any
		switch k {
		case "group":
			got = group
		case "version":
			got = version
		case "kind":
			got = o["kind"]
		case "name":
			got = meta["name"]
		default:
			return false // a selector this renderer does not know matches nothing
		}
		if got != want {
			return false
		}
	}
	return true
}

func splitImage(image string) (name, tag string) {
	slash := strings.LastIndex(image, "/")
	if colon := strings.LastIndex(image, ":"); colon > slash {
		return image[:colon], image[colon+1:]
	}
	return image, ""
}

// applyJSONPatch applies RFC 6902 operations (add, remove, replace, test)
// to doc.
func applyJSONPatch(doc any, ops []any) (any, error) {
	for i, o := range ops {
		op, _ := o.(map[string]any)
		path, _ := op["path"].(string)
		if !strings.HasPrefix(path, "/") {
			return nil, fmt.Errorf("operation %d: path %q", i, path)
		}
		toks := strings.Split(path[1:], "/")
		for j, tok := range toks {
			toks[j] = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		}
		var err error
		switch kind := op["op"]; kind {
		case "test":
			var got any
			if got, err = pointerGet(doc, toks); err == nil && !reflect.DeepEqual(got, op["value"]) {
				err = fmt.Errorf("test of %s: %v, want %v", path, got, op["value"])
			}
		case "add", "replace", "remove":
			doc, err = patchNode(doc, toks, kind.(string), op["value"])
		default:
			err = fmt.Errorf("operation %v is not understood by this test's renderer", kind)
		}
		if err != nil {
			return nil, fmt.Errorf("operation %d (%v %s): %w", i, op["op"], path, err)
		}
	}
	return doc, nil
}

func pointerGet(node any, toks []string) (any, error) {
	for _, tok := range toks {
		switch n := node.(type) {
		case map[string]any:
			v, ok := n[tok]
			if !ok {
				return nil, fmt.Errorf("no member %q", tok)
			}
			node = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n) {
				return nil, fmt.Errorf("no element %q", tok)
			}
			node = n[i]
		default:
			return nil, fmt.Errorf("%q: not a container", tok)
		}
	}
	return node, nil
}

func patchNode(node any, toks []string, op string, val any) (any, error) {
	if len(toks) == 0 {
		return nil, errors.New("the whole document")
	}
	tok, last := toks[0], len(toks) == 1
	switch n := node.(type) {
	case map[string]any:
		child, ok := n[tok]
		switch {
		case last && op == "add":
			n[tok] = val
		case !ok:
			return nil, fmt.Errorf("no member %q", tok)
		case last && op == "replace":
			n[tok] = val
		case last && op == "remove":
			delete(n, tok)
		default:
			c, err := patchNode(child, toks[1:], op, val)
			if err != nil {
				return nil, err
			}
			n[tok] = c
		}
		return n, nil
	case []any:
		if last && op == "add" && tok == "-" {
			return append(n, val), nil
		}
		i, err := strconv.Atoi(tok)
		if err != nil || i < 0 || i > len(n) || (i == len(n) && !(last && op == "add")) {
			return nil, fmt.Errorf("no element %q", tok)
		}
		switch {
		case last && op == "add":
			return slices.Insert(n, i, val), nil
		case last && op == "replace":
			n[i] = val
		case last && op == "remove":
			return slices.Delete(n, i, i+1), nil
		default:
			c, err := patchNode(n[i], toks[1:], op, val)
			if err != nil {
				return nil, err
			}
			n[i] = c
		}
		return n, nil
	}
	return nil, fmt.Errorf("%q: not a container", tok)
}

func objectsOf(objs []map[string]any, kind string) []map[string]any {
	var out []map[string]any
	for _, o := range objs {
		if o["kind"] == kind {
			out = append(out, o)
		}
	}
	return out
}

func onlyObject(t *testing.T, objs []map[string]any, kind string) map[string]any {
	t.Helper()
	found := objectsOf(objs, kind)
	if len(found) != 1 {
		t.Fatalf("%d %s objects, want 1", len(found), kind)
	}
	return found[0]
}

func onlyContainer(t *testing.T, dep map[string]any) map[string]any {
	t.Helper()
	cs := asList(dig(t, dep, "spec", "template", "spec", "containers"))
	if len(cs) != 1 {
		t.Fatalf("%d containers, want 1", len(cs))
	}
	return cs[0].(map[string]any)
}

// containerEnv returns the container's env entries by name.
func containerEnv(t *testing.T, dep map[string]any) map[string]any {
	t.Helper()
	env := map[string]any{}
	for _, e := range asList(onlyContainer(t, dep)["env"]) {
		name := e.(map[string]any)["name"].(string)
		if _, dup := env[name]; dup {
			t.Errorf("env %s twice", name)
		}
		env[name] = e
	}
	return env
}

// volumeAt returns the pod volume the container mounts at path.
func volumeAt(t *testing.T, dep map[string]any, path string) map[string]any {
	t.Helper()
	for _, m := range asList(onlyContainer(t, dep)["volumeMounts"]) {
		m := m.(map[string]any)
		if m["mountPath"] != path {
			continue
		}
		for _, v := range asList(dig(t, dep, "spec", "template", "spec", "volumes")) {
			if v := v.(map[string]any); v["name"] == m["name"] {
				return v
			}
		}
		t.Fatalf("volume %v of %s is not defined", m["name"], path)
	}
	t.Fatalf("nothing is mounted at %s", path)
	return nil
}

// selects reports whether a matchLabels selector selects labels.
func selects(selector, labels map[string]any) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func byKindName(t *testing.T, objs []map[string]any) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, o := range objs {
		out[fmt.Sprintf("%v/%v", o["kind"], dig(t, o, "metadata", "name"))] = o
	}
	return out
}

// ---- YAML ----

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decodeYAMLDocs decodes every document of a YAML stream (merge keys
// resolved), skipping empty ones.
func decodeYAMLDocs(t *testing.T, name string, b []byte) []map[string]any {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var docs []map[string]any
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
}

// dig returns the value at the path of mapping keys, failing the test if
// it is missing.
func dig(t *testing.T, v any, keys ...string) any {
	t.Helper()
	got, ok := digOK(v, keys...)
	if !ok {
		t.Fatalf("%s: missing", strings.Join(keys, "."))
	}
	return got
}

func digOK(v any, keys ...string) (any, bool) {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

// asList returns v as a list: a single value is a list of one.
func asList(v any) []any {
	switch v := v.(type) {
	case nil:
		return nil
	case []any:
		return v
	}
	return []any{v}
}

func asStrings(v any) []string {
	var out []string
	for _, e := range asList(v) {
		out = append(out, fmt.Sprint(e))
	}
	return out
}
