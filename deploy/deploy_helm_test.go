package deploy_test

// Checks of the Helm chart (deploy/helm/verdictbot). No schema can be
// downloaded here and no cluster runs, so the tests run `helm template`
// and check the rendered objects as the Kubernetes tests check the
// manifests (checkPodBasics, checkSettingNames, the secrets), then compare
// them with deploy/kubernetes and deploy/kubernetes-postgres so that the
// two ways to deploy cannot drift apart.

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const (
	chartDir = repoRoot + "deploy/helm/verdictbot"
	// helmKubeVersion is the Kubernetes version helm template renders for
	// (the Makefile's KUBE_VERSION): helm built by go install assumes
	// 1.20, below the chart's kubeVersion.
	helmKubeVersion = "1.31.0"
	// helmRelease names the release like deploy/kubernetes's objects.
	helmRelease = "verdictbot"
)

// monitoringAPIs are the APIs of the Prometheus Operator the chart looks for.
var monitoringAPIs = []string{"--api-versions", "monitoring.coreos.com/v1/ServiceMonitor", "--api-versions", "monitoring.coreos.com/v1/PrometheusRule"}

// helmBinary finds helm: $HELM_BINARY, the one `make tools` installs
// (bin/tools/helm@VERSION/helm), or helm on PATH. Without it the test
// skips, but not with VERDICTBOT_TEST_HELM=required (.ci/run's chart step,
// once it has installed helm).
func helmBinary(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("HELM_BINARY"); h != "" {
		return h
	}
	if m, _ := filepath.Glob(repoRoot + "bin/tools/helm@*/helm"); len(m) > 0 {
		slices.Sort(m)
		abs, err := filepath.Abs(m[len(m)-1])
		if err != nil {
			t.Fatal(err)
		}
		return abs
	}
	if h, err := exec.LookPath("helm"); err == nil {
		return h
	}
	if os.Getenv("VERDICTBOT_TEST_HELM") == "required" {
		t.Fatal("helm not found (HELM_BINARY, bin/tools/helm@*/helm, PATH): .ci/run installs it with make tools")
	}
	t.Skip("helm not found: `make tools` installs it (the chart is then rendered and checked)")
	return ""
}

// helmTemplate renders the chart with args and returns its objects, or
// the error helm reported (its stderr).
func helmTemplate(t *testing.T, args ...string) ([]map[string]any, error) {
	t.Helper()
	helm := helmBinary(t)
	cmd := exec.Command(helm, append([]string{"template", helmRelease, chartDir, "--kube-version", helmKubeVersion}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, errors.New(strings.TrimSpace(stderr.String()))
	}
	return decodeYAMLDocs(t, "helm template "+strings.Join(args, " "), out), nil
}

func mustHelmTemplate(t *testing.T, args ...string) []map[string]any {
	t.Helper()
	objs, err := helmTemplate(t, args...)
	if err != nil {
		t.Fatalf("helm template %v: %v", args, err)
	}
	return objs
}

// TestHelmChartFileStoreIsOneReplica: by default the chart keeps the state
// in the embedded file: one replica whatever replicaCount says, Recreate,
// its claim at /data, no database, no PodDisruptionBudget; and what every
// pod of the manifests must have.
func TestHelmChartFileStoreIsOneReplica(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{nil, {"--set", "replicaCount=5"}} {
		objs := mustHelmTemplate(t, args...)
		dep := onlyObject(t, objs, "Deployment")
		if r := dig(t, dep, "spec", "replicas"); r != 1 {
			t.Errorf("%v: replicas = %v, want 1 (the file has one writer)", args, r)
		}
		if s := dig(t, dep, "spec", "strategy", "type"); s != "Recreate" {
			t.Errorf("%v: strategy = %v, want Recreate", args, s)
		}
		pvc := onlyObject(t, objs, "PersistentVolumeClaim")
		if claim, _ := digOK(volumeAt(t, dep, "/data"), "persistentVolumeClaim", "claimName"); claim != dig(t, pvc, "metadata", "name") {
			t.Errorf("%v: /data is not the chart's claim %v", args, dig(t, pvc, "metadata", "name"))
		}
		if keep, _ := digOK(pvc, "metadata", "annotations", "helm.sh/resource-policy"); keep != "keep" {
			t.Errorf("%v: helm uninstall would delete the claim (the state)", args)
		}
		if _, ok := containerEnv(t, dep)["VERDICTBOT_DATABASE_URL"]; ok {
			t.Errorf("%v: the file store reads VERDICTBOT_DATABASE_URL", args)
		}
		if n := len(objectsOf(objs, "PodDisruptionBudget")); n != 0 {
			t.Errorf("%v: %d PodDisruptionBudget(s) for one replica (it would block every drain)", args, n)
		}
		checkPodBasics(t, dep)
		checkSettingNames(t, objs)
		checkServiceSelectsPods(t, objs, dep)
	}
	objs := mustHelmTemplate(t, "--set", "persistence.existingClaim=old-data")
	if n := len(objectsOf(objs, "PersistentVolumeClaim")); n != 0 {
		t.Errorf("existingClaim: the chart still makes %d claim(s)", n)
	}
	if claim, _ := digOK(volumeAt(t, onlyObject(t, objs, "Deployment"), "/data"), "persistentVolumeClaim", "claimName"); claim != "old-data" {
		t.Errorf("existingClaim: /data is %v", claim)
	}
}

// TestHelmChartPostgresStore: store=postgres runs replicaCount replicas
// with a rolling update that never goes below it, a PodDisruptionBudget
// of one at a time over the pods, a spread over nodes, no claim, /data an
// emptyDir, and the database URL from the Secret.
func TestHelmChartPostgresStore(t *testing.T) {
	t.Parallel()
	objs := mustHelmTemplate(t, "--set", "store=postgres", "--set", "replicaCount=4", "--set", "existingSecret=bot-tokens")
	dep := onlyObject(t, objs, "Deployment")
	if r := dig(t, dep, "spec", "replicas"); r != 4 {
		t.Errorf("replicas = %v, want 4", r)
	}
	want := map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxUnavailable": 0, "maxSurge": 1}}
	if s := dig(t, dep, "spec", "strategy"); !reflect.DeepEqual(s, want) {
		t.Errorf("strategy = %v, want %v", s, want)
	}
	if n := len(objectsOf(objs, "PersistentVolumeClaim")); n != 0 {
		t.Errorf("%d PersistentVolumeClaim(s): the state is in PostgreSQL", n)
	}
	if vol := volumeAt(t, dep, "/data"); vol["emptyDir"] == nil {
		t.Errorf("/data is %v, want an emptyDir", vol)
	}
	if name, _ := digOK(containerEnv(t, dep)["VERDICTBOT_DATABASE_URL"], "valueFrom", "secretKeyRef", "name"); name != "bot-tokens" {
		t.Errorf("VERDICTBOT_DATABASE_URL is not read from the Secret bot-tokens: %v", containerEnv(t, dep)["VERDICTBOT_DATABASE_URL"])
	}
	podLabels := dig(t, dep, "spec", "template", "metadata", "labels").(map[string]any)
	pdb := onlyObject(t, objs, "PodDisruptionBudget")
	if m := dig(t, pdb, "spec", "maxUnavailable"); m != 1 {
		t.Errorf("PodDisruptionBudget maxUnavailable = %v, want 1", m)
	}
	if !selects(dig(t, pdb, "spec", "selector", "matchLabels").(map[string]any), podLabels) {
		t.Error("the PodDisruptionBudget does not select the pods")
	}
	hostSpread := false
	for _, c := range asList(dig(t, dep, "spec", "template", "spec", "topologySpreadConstraints")) {
		c := c.(map[string]any)
		if c["topologyKey"] == "kubernetes.io/hostname" && selects(dig(t, c, "labelSelector", "matchLabels").(map[string]any), podLabels) {
			hostSpread = true
		}
	}
	if !hostSpread {
		t.Error("no topology spread of the pods over nodes")
	}
	checkPodBasics(t, dep)
	checkSettingNames(t, objs)
	checkServiceSelectsPods(t, objs, dep)
}

// TestHelmChartSecretsNotInlined: the chart makes no Secret; every secret
// the container reads comes from existingSecret by key; the ConfigMap
// holds none; and a secret, or a setting the chart owns, put in settings
// is refused, as is an unknown store.
func TestHelmChartSecretsNotInlined(t *testing.T) {
	t.Parallel()
	for _, store := range []string{"file", "postgres"} {
		objs := mustHelmTemplate(t, "--set", "store="+store, "--set", "existingSecret=bot-tokens")
		if n := len(objectsOf(objs, "Secret")); n != 0 {
			t.Errorf("%s: the chart renders %d Secret(s): tokens would be in the release's history", store, n)
		}
		dep := onlyObject(t, objs, "Deployment")
		for name, e := range containerEnv(t, dep) {
			if !secretName(name) {
				continue
			}
			ref, _ := digOK(e, "valueFrom", "secretKeyRef")
			if r, _ := ref.(map[string]any); r["name"] != "bot-tokens" || r["key"] != name {
				t.Errorf("%s: %s is not the key %s of the Secret bot-tokens: %v", store, name, name, e)
			}
		}
		for _, n := range []string{"SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "REPUTATION_API_KEY"} {
			if optional, _ := digOK(containerEnv(t, dep)[n], "valueFrom", "secretKeyRef", "optional"); optional == true {
				t.Errorf("%s: %s is optional: the pod would start without it", store, n)
			}
		}
		for _, cm := range objectsOf(objs, "ConfigMap") {
			data, _ := cm["data"].(map[string]any)
			for name := range data {
				if secretName(name) {
					t.Errorf("%s: the ConfigMap holds %s", store, name)
				}
			}
		}
	}
	for _, bad := range []struct{ set, want string }{
		{"settings.SLACK_BOT_TOKEN=xoxb-test", "settings.SLACK_BOT_TOKEN is a secret"},
		{"settings.VERDICTBOT_EVENTS_SECRET=s", "settings.VERDICTBOT_EVENTS_SECRET is a secret"},
		{"settings.VERDICTBOT_DATA_DIR=/x", "settings.VERDICTBOT_DATA_DIR: the chart sets it"},
		{"store=sqlite", `store: "sqlite"; want file`},
	} {
		if _, err := helmTemplate(t, "--set", bad.set); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("--set %s: %v, want an error saying %q", bad.set, err, bad.want)
		}
	}
}

// TestHelmChartMonitoring: the ServiceMonitor and the PrometheusRule are
// rendered only where the Prometheus Operator's API exists and their
// values allow; the ServiceMonitor scrapes the metrics Service's port at
// /metrics; the PrometheusRule's spec is today's alert rules
// (deploy/prometheus/alerts.yaml, whose metrics
// TestDeployAlertsAndDashboardNameExportedMetrics checks against the
// bot), and the chart's copy of that file is identical.
func TestHelmChartMonitoring(t *testing.T) {
	t.Parallel()
	if !bytes.Equal(readFile(t, chartDir+"/files/alerts.yaml"), readFile(t, alertsFile)) {
		t.Errorf("%s/files/alerts.yaml differs from %s: cp %s %s/files/alerts.yaml", chartDir, alertsFile, alertsFile, chartDir)
	}
	without := mustHelmTemplate(t)
	if n := len(objectsOf(without, "ServiceMonitor")) + len(objectsOf(without, "PrometheusRule")); n != 0 {
		t.Errorf("%d Prometheus Operator objects without its API: the install would fail", n)
	}
	off := mustHelmTemplate(t, append(slices.Clone(monitoringAPIs), "--set", "serviceMonitor.enabled=false", "--set", "prometheusRule.enabled=false")...)
	if n := len(objectsOf(off, "ServiceMonitor")) + len(objectsOf(off, "PrometheusRule")); n != 0 {
		t.Errorf("%d Prometheus Operator objects though disabled", n)
	}

	objs := mustHelmTemplate(t, append(slices.Clone(monitoringAPIs), "--set", "store=postgres")...)
	sm := onlyObject(t, objs, "ServiceMonitor")
	svc := onlyObject(t, objs, "Service")
	if !selects(dig(t, sm, "spec", "selector", "matchLabels").(map[string]any), dig(t, svc, "metadata", "labels").(map[string]any)) {
		t.Error("the ServiceMonitor does not select the metrics Service")
	}
	endpoints := asList(dig(t, sm, "spec", "endpoints"))
	if len(endpoints) != 1 {
		t.Fatalf("%d endpoints", len(endpoints))
	}
	ep := endpoints[0].(map[string]any)
	portNames := []any{}
	for _, p := range asList(dig(t, svc, "spec", "ports")) {
		portNames = append(portNames, p.(map[string]any)["name"])
	}
	if ep["path"] != "/metrics" || !slices.Contains(portNames, ep["port"]) {
		t.Errorf("ServiceMonitor endpoint %v: want /metrics on one of the Service's ports %v", ep, portNames)
	}

	rule := onlyObject(t, objs, "PrometheusRule")
	var alerts map[string]any
	if err := yaml.Unmarshal(readFile(t, alertsFile), &alerts); err != nil {
		t.Fatal(err)
	}
	if spec := dig(t, rule, "spec"); !reflect.DeepEqual(spec, alerts) {
		t.Errorf("the PrometheusRule's spec is not %s", alertsFile)
	}
	rendered := 0
	for _, g := range asList(dig(t, rule, "spec", "groups")) {
		for _, r := range asList(dig(t, g, "rules")) {
			if r.(map[string]any)["alert"] != nil {
				rendered++
				if _, err := seriesIn(r.(map[string]any)["expr"].(string)); err != nil {
					t.Error(err)
				}
			}
		}
	}
	if want := len(readAlerts(t)); rendered != want {
		t.Errorf("the PrometheusRule has %d alerts, %s %d", rendered, alertsFile, want)
	}
}

// TestHelmChartMatchesManifests: the chart's defaults render what
// deploy/kubernetes holds, and store=postgres with 3 replicas what
// deploy/kubernetes-postgres does: the same Deployment (but for the image,
// labels and selectors, which the chart derives from the release), the
// same ConfigMap data, Service, claim and PodDisruptionBudget. A change to
// one that is not made to the other fails here.
func TestHelmChartMatchesManifests(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		dir  string
		args []string
	}{
		{k8sFileDir, nil},
		{k8sPostgresDir, []string{"--set", "store=postgres", "--set", "replicaCount=3"}},
	} {
		chart := essentials(t, mustHelmTemplate(t, tc.args...))
		manifests := essentials(t, kustomizeBuild(t, tc.dir))
		if !reflect.DeepEqual(chart, manifests) {
			for k := range manifests {
				if !reflect.DeepEqual(chart[k], manifests[k]) {
					g, _ := json.MarshalIndent(chart[k], "", " ")
					w, _ := json.MarshalIndent(manifests[k], "", " ")
					t.Errorf("%s: %s differs:\nchart:\n%s\nmanifests:\n%s", tc.dir, k, g, w)
				}
			}
			for k := range chart {
				if _, ok := manifests[k]; !ok {
					t.Errorf("%s: the chart renders %s, the manifests do not", tc.dir, k)
				}
			}
		}
	}
}

// essentials returns, by kind/name, what the chart and the manifests must
// agree on: objects without their metadata, the Deployment without its
// image, selector and pod labels and annotations, the spread constraints
// without their label selectors (TestHelmChartPostgresStore checks that
// they select the pods), env as a map by name.
func essentials(t *testing.T, objs []map[string]any) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, o := range objs {
		var c map[string]any
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatal(err)
		}
		key := c["kind"].(string) + "/" + dig(t, c, "metadata", "name").(string)
		delete(c, "metadata")
		switch c["kind"] {
		case "Deployment":
			spec := c["spec"].(map[string]any)
			delete(spec, "selector")
			delete(spec["template"].(map[string]any), "metadata")
			pod := spec["template"].(map[string]any)["spec"].(map[string]any)
			for _, tsc := range asList(pod["topologySpreadConstraints"]) {
				delete(tsc.(map[string]any), "labelSelector")
			}
			ctr := asList(pod["containers"])[0].(map[string]any)
			delete(ctr, "image")
			env := map[string]any{}
			for _, e := range asList(ctr["env"]) {
				env[e.(map[string]any)["name"].(string)] = e
			}
			ctr["env"] = env
		case "Service", "PodDisruptionBudget":
			spec := c["spec"].(map[string]any)
			delete(spec, "selector")
		case "ServiceMonitor", "PrometheusRule":
			continue // the chart's only, TestHelmChartMonitoring
		}
		out[key] = c
	}
	return out
}

// checkServiceSelectsPods: the metrics Service selects the Deployment's
// pods and targets their http port.
func checkServiceSelectsPods(t *testing.T, objs []map[string]any, dep map[string]any) {
	t.Helper()
	svc := onlyObject(t, objs, "Service")
	if !selects(dig(t, svc, "spec", "selector").(map[string]any), dig(t, dep, "spec", "template", "metadata", "labels").(map[string]any)) {
		t.Error("the metrics Service does not select the pods")
	}
	if !selects(dig(t, dep, "spec", "selector", "matchLabels").(map[string]any), dig(t, dep, "spec", "template", "metadata", "labels").(map[string]any)) {
		t.Error("the Deployment's selector does not select its pods")
	}
}
