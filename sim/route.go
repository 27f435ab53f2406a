package sim

import (
	"net/http"
	"strconv"
	"strings"
)

// route is a request path resolved against the two services' address
// layouts. op is OpNotFound when the path is under a service prefix but has
// no matching shape.
type route struct {
	service string
	key     string
	op      string
	bucket  string
	methods []string // allowed methods; HEAD is implied by GET
	params  []string // path parameters, in path order
	slash   bool     // the path ended in "/"
	logPath string   // the path with the key replaced by <key>
}

// Path prefixes of the two services (specs §4).
const (
	reputationPrefix = "/api/"
	sandboxPrefix    = "/apineo/"
)

// parseRoute resolves path. It returns nil for a path outside both
// service prefixes.
func parseRoute(path string) *route {
	var rt route
	var rest string
	switch {
	case strings.HasPrefix(path, reputationPrefix):
		rt.service, rest = ServiceReputation, path[len(reputationPrefix):]
	case strings.HasPrefix(path, sandboxPrefix):
		rt.service, rest = ServiceSandbox, path[len(sandboxPrefix):]
	default:
		return nil
	}
	prefix := path[:len(path)-len(rest)]
	key, tail, ok := strings.Cut(rest, "/")
	rt.key = key
	rt.logPath = prefix + "<key>"
	rt.op = OpNotFound
	rt.bucket = BucketReport
	if !ok {
		return &rt
	}
	rt.logPath += "/" + tail
	if tail == "" {
		return &rt
	}
	rt.slash = strings.HasSuffix(tail, "/")
	seg := strings.Split(strings.TrimSuffix(tail, "/"), "/")
	if rt.service == ServiceReputation {
		matchReputation(&rt, seg)
	} else {
		matchSandbox(&rt, seg)
	}
	return &rt
}

var (
	onlyGET  = []string{http.MethodGet}
	onlyPOST = []string{http.MethodPost}
)

// matchReputation fills rt from the URL service's paths (URL spec §4). Task
// id segments are not validated here: a malformed id is the JSON error
// "wrong task id", not a 404.
func matchReputation(rt *route, seg []string) {
	set := func(op, bucket string, methods []string, params ...string) {
		rt.op, rt.bucket, rt.methods, rt.params = op, bucket, methods, params
	}
	switch {
	case len(seg) == 1 && seg[0] == "scan":
		set(OpScan, BucketRun, onlyPOST)
	case len(seg) == 2 && seg[0] == "status":
		set(OpStatus, BucketReport, onlyGET, seg[1])
	case len(seg) == 3 && seg[0] == "result" && seg[1] == "detail":
		set(OpDetail, BucketReport, onlyGET, seg[2])
	case len(seg) == 2 && seg[0] == "result":
		set(OpResult, BucketReport, onlyGET, seg[1])
	case len(seg) == 2 && seg[0] == "search" && seg[1] == "task_id":
		set(OpSearch, BucketReport, onlyPOST)
	case len(seg) >= 3 && len(seg) <= 5 && seg[0] == "verdict" && seg[1] == "report":
		// task, type and option; a missing type or option is reported by
		// the checks in spec order rather than as a 404.
		set(OpVerdictReport, BucketReport, onlyGET, seg[2:]...)
	}
}

// hashLen is the hex length of each hash route (CAPE apiv2 urls.py).
var hashLen = map[string]int{"md5": 32, "sha1": 40, "sha256": 64}

// matchSandbox fills rt from the sandbox's paths (sandbox spec §4). The
// shapes follow CAPE's URL patterns (CAPEv2's URL routes): ids are \d+, hashes are
// hex of the exact length, a screenshot number is \d{1,4}.
func matchSandbox(rt *route, seg []string) {
	set := func(op, bucket string, methods []string, params ...string) {
		rt.op, rt.bucket, rt.methods, rt.params = op, bucket, methods, params
	}
	switch {
	case len(seg) == 3 && seg[0] == "tasks" && seg[1] == "create" && seg[2] == "file":
		set(OpCreateFile, BucketRun, onlyPOST)
	case len(seg) == 4 && seg[0] == "files" && seg[1] == "view" && isHash(seg[2], seg[3]):
		set(OpFileView, BucketReport, onlyGET, seg[2], seg[3])
	case len(seg) == 4 && seg[0] == "tasks" && seg[1] == "search" && isHash(seg[2], seg[3]):
		set(OpTaskSearch, BucketReport, onlyGET, seg[2], seg[3])
	case len(seg) == 3 && seg[0] == "tasks" && seg[1] == "view" && isDigits(seg[2], 0):
		set(OpTaskView, BucketReport, onlyGET, seg[2])
	case len(seg) == 3 && seg[0] == "tasks" && seg[1] == "status" && isDigits(seg[2], 0):
		set(OpStatus, BucketReport, onlyGET, seg[2])
	case len(seg) == 4 && seg[0] == "tasks" && seg[1] == "get" && seg[2] == "simple_report" && isDigits(seg[3], 0):
		set(OpSimpleReport, BucketReport, onlyGET, seg[3])
	case len(seg) == 4 && seg[0] == "tasks" && seg[1] == "get" && seg[2] == "screenshot" && isDigits(seg[3], 0):
		set(OpScreenshotArchive, BucketReport, onlyGET, seg[3])
	case len(seg) == 5 && seg[0] == "tasks" && seg[1] == "get" && seg[2] == "screenshot" && isDigits(seg[3], 0) && isDigits(seg[4], 4):
		set(OpScreenshot, BucketReport, onlyGET, seg[3], seg[4])
	}
}

// isDigits reports whether s is 1 or more ASCII digits, at most max of
// them when max > 0.
func isDigits(s string, max int) bool {
	if s == "" || (max > 0 && len(s) > max) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isHash(alg, h string) bool {
	n, ok := hashLen[alg]
	return ok && len(h) == n && isHex(h)
}

// isHex reports whether s is hex digits of either case.
func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// allows reports whether the route accepts method.
func (rt *route) allows(method string) bool {
	for _, m := range rt.methods {
		if m == method || (m == http.MethodGet && method == http.MethodHead) {
			return true
		}
	}
	return false
}

// allowHeader is the Allow header of a 405 answer, as DRF writes it.
func (rt *route) allowHeader() string {
	var out []string
	for _, m := range rt.methods {
		out = append(out, m)
		if m == http.MethodGet {
			out = append(out, http.MethodHead)
		}
	}
	return strings.Join(out, ", ")
}

// parseTaskID parses a sandbox task id segment; ok is false when it does
// not fit an int (such a task cannot exist).
func parseTaskID(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	return n, err == nil
}
