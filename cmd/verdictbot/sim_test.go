package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// startSim runs `verdictbot sim` with args on a free port and returns the
// base URL it printed and a function that stops it and returns its error.
func startSim(t *testing.T, args ...string) (string, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := runSim(ctx, mapEnv(nil), append([]string{"--addr", "127.0.0.1:0"}, args...), pw, io.Discard)
		pw.Close()
		done <- err
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	go io.Copy(io.Discard, pr)
	if err != nil {
		cancel()
		t.Fatalf("no address line: %v (run error: %v)", err, <-done)
	}
	m := regexp.MustCompile(`^REPUTATION_URL=(http://127\.0\.0\.1:\d+) SANDBOX_URL=(http://127\.0\.0\.1:\d+)\n$`).FindStringSubmatch(line)
	if m == nil || m[1] != m[2] {
		cancel()
		t.Fatalf("address line %q", line)
	}
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			return errors.New("sim did not stop")
		}
	}
	t.Cleanup(func() { stop() })
	return m[1], stop
}

func simGetJSON(t *testing.T, method, url, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, b)
	}
	return resp.StatusCode, m
}

func TestRunSimServesBothServices(t *testing.T) {
	t.Parallel()
	base, stop := startSim(t, "--profile", "fast", "--keys", "a, b", "--score-scale", "100", "--cape-compat")

	_, m := simGetJSON(t, "POST", base+"/api/a/scan/", `{"url":"https://login.phish.test/"}`)
	id, _ := m["task_id"].(string)
	if id == "" {
		t.Fatalf("scan: %v", m)
	}
	var statuses []string
	for range 3 {
		_, m := simGetJSON(t, "GET", base+"/api/b/status/"+id+"/", "")
		statuses = append(statuses, m["status"].(string))
	}
	if strings.Join(statuses, ",") != "pending,processing,completed" {
		t.Errorf("fast profile statuses %v", statuses)
	}
	_, m = simGetJSON(t, "GET", base+"/api/a/result/"+id+"/", "")
	if v := m["verdict"].(map[string]any); v["phishing"] != 97.0 {
		t.Errorf("result on scale 100: %v", m)
	}
	if code, m := simGetJSON(t, "GET", base+"/api/c/status/"+id+"/", ""); code != 403 || m["msg"] != "invalid api key" {
		t.Errorf("unlisted key: %d %v", code, m)
	}

	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	w, _ := mw.CreateFormFile("file", "x.exe")
	w.Write([]byte("MZ hello"))
	mw.Close()
	resp, err := http.Post(base+"/apineo/a/tasks/create/file/", mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	var created struct {
		Data struct {
			TaskIDs []int `json:"task_ids"`
		} `json:"data"`
	}
	json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if len(created.Data.TaskIDs) != 1 || created.Data.TaskIDs[0] != 1000 {
		t.Errorf("create with --cape-compat: %+v", created)
	}
	if _, m := simGetJSON(t, "GET", base+"/apineo/a/tasks/status/1000/", ""); m["data"] != "pending" {
		t.Errorf("sandbox status %v", m)
	}
	resp, err = http.Get(base + "/_sim/counts")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("admin: %d", resp.StatusCode)
	}

	if err := stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	if _, err := http.Get(base + "/api/a/scan/"); err == nil {
		t.Error("server still answers after cancel")
	}
}

func TestRunSimDefaultsAreRealisticAndLimited(t *testing.T) {
	t.Parallel()
	base, _ := startSim(t)
	_, m := simGetJSON(t, "POST", base+"/api/k/scan/", `{"url":"https://example.com/"}`)
	id := m["task_id"].(string)
	for range 3 {
		if _, m := simGetJSON(t, "GET", base+"/api/k/status/"+id+"/", ""); m["status"] != "pending" {
			t.Errorf("realistic profile moved on a poll: %v", m)
		}
	}
	// The default run rate is 2/s: a burst of scans hits 429.
	limited := false
	for range 4 {
		code, m := simGetJSON(t, "POST", base+"/api/k/scan/", `{"url":"https://example.com/"}`)
		if code == 429 && m["msg"] == "rate limit exceeded" {
			limited = true
		}
	}
	if !limited {
		t.Error("no 429 in a burst of 5 scans at the default 2/s")
	}
}

func TestRunSimFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args  []string
		usage bool
		want  string
	}{
		{[]string{"--bogus"}, true, "flag provided but not defined"},
		{[]string{"extra"}, true, "unexpected arguments"},
		{[]string{"--profile", "slow"}, false, "--profile: want fast, demo or realistic"},
		{[]string{"--score-scale", "10"}, false, "--score-scale: want 1 or 100"},
		{[]string{"--throttle-style", "xml"}, false, "--throttle-style"},
		{[]string{"--fail-rate", "2"}, false, "--fail-rate"},
		{[]string{"--tz", "Mars/Base"}, false, "--tz"},
		{[]string{"--addr", "256.0.0.1:1"}, false, "listen"},
	} {
		err := runSim(t.Context(), mapEnv(nil), tc.args, io.Discard, io.Discard)
		if err == nil || errors.Is(err, errUsage) != tc.usage || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want usage=%v containing %q", tc.args, err, tc.usage, tc.want)
		}
	}
	var help bytes.Buffer
	if err := runSim(t.Context(), mapEnv(nil), []string{"-h"}, io.Discard, &help); err != nil || !strings.Contains(help.String(), "-report-rate") {
		t.Errorf("-h: %v\n%s", err, help.String())
	}
	if code := Main([]string{"sim", "--bogus"}, nil, io.Discard, io.Discard); code != 2 {
		t.Errorf("Main exit code %d for a bad flag, want 2", code)
	}
}

// TestRunSimOnEveryInterfacePrintsALoopbackURL: `verdictbot sim --addr
// 0.0.0.0:…` (Compose, a container) prints the loopback address, which a
// bot on the same machine may use over plain http (an unspecified address
// is not loopback: REPUTATION_URL=http://0.0.0.0:… is refused).
func TestRunSimOnEveryInterfacePrintsALoopbackURL(t *testing.T) {
	t.Parallel()
	base, stop := startSim(t, "--addr", "0.0.0.0:0") // startSim wants http://127.0.0.1:port
	defer stop()
	if _, err := loadValidConfig(mapEnv(map[string]string{"REPUTATION_URL": base + "/"}), false); err != nil {
		t.Errorf("the printed URL is refused: %v", err)
	}
}
