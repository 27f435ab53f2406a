package doctor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/verdictbot/verdictbot/app"
	"github.com/verdictbot/verdictbot/reputation"
	"github.com/verdictbot/verdictbot/sandbox"
)

// Task ids no service has, asked about to prove a key without starting
// anything: the URL service's ids are 32 hex digits (the simulator's
// shape; the spec, docs/specs/url-reputation-api.md §2, calls them
// opaque), the sandbox's are CAPE's database ids, which start at 1.
const (
	unknownURLTask  = "00000000000000000000000000000000"
	unknownFileTask = "0"
)

// services checks both analysis services: a status of a task that does
// not exist, authenticated by the key in the path. The service's "task
// not found" proves the key was accepted: the simulator checks the key
// before the task (403 "invalid api key"), and what the real services
// answer to a wrong key is not documented (specs §5, §7), so any answer
// about the task counts as accepted and a 401, a 403 or "invalid api
// key" as refused.
func (r *run) services(ctx context.Context) []Result {
	return []Result{r.reputation(ctx), r.sandbox(ctx)}
}

const fixServiceNetwork = "check the base URL, and that this host reaches it (docs/configuration.md, \"Network: outbound hosts and proxies\"; an appliance's own CA: VERDICTBOT_SERVICE_CA_FILE)"

func (r *run) reputation(ctx context.Context) Result {
	res := Result{Section: secServices, Name: "reputation service"}
	switch {
	case r.cfg.ReputationURL == "":
		res.Status, res.Detail, res.Fix = Fail, "REPUTATION_URL is not set", "set REPUTATION_URL and REPUTATION_API_KEY (docs/configuration.md, \"The two services\")"
		return res
	case r.cfg.ReputationAPIKey == "":
		res.Status, res.Detail, res.Fix = Fail, "REPUTATION_API_KEY is not set", "set REPUTATION_API_KEY to the key the service gave you"
		return res
	}
	c, err := app.NewReputation(r.cfg, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		res.Status, res.Detail, res.Fix = Fail, err.Error(), "correct REPUTATION_URL (https://host[/prefix], without /api/<key>)"
		return res
	}
	var rl rateHeaders
	_, err = within(reputation.WithResponseHeaders(ctx, rl.keep), r, func(ctx context.Context) (reputation.Status, error) {
		return c.Status(ctx, unknownURLTask)
	})
	host := hostOf(r.cfg.ReputationURL)
	var api *reputation.APIError
	switch reason := reputation.ReasonOf(err); {
	case err == nil, errors.Is(err, reputation.ErrTaskNotFound), errors.Is(err, reputation.ErrWrongTaskID):
		res.Status, res.Detail = Pass, fmt.Sprintf("%s accepted the key (status of an unknown task: %s)", host, answerWords(err))
	case reason == reputation.ReasonAuth, errors.Is(err, reputation.ErrInvalidKey):
		res.Status, res.Detail = Fail, fmt.Sprintf("%s refused the key: %v", host, err)
		res.Fix = "check REPUTATION_API_KEY: the key the service gave you, whole, for this base URL"
	case reason == reputation.ReasonRateLimited, reason == reputation.ReasonQuota:
		res.Status, res.Detail = Warn, fmt.Sprintf("%s did not refuse the key but throttles it now: %v", host, err)
		res.Fix = "see the service's limits for this key (VERDICTBOT_REPUTATION_RUN_RATE and _REPORT_RATE keep the bot below them)"
	case errors.As(err, &api):
		res.Status, res.Detail = Warn, fmt.Sprintf("%s answered with an error other than \"task not found\": %v", host, err)
		res.Fix = "the key was not refused; if the service's answers look wrong, check REPUTATION_URL"
	default:
		res.Status, res.Detail, res.Fix = Fail, fmt.Sprintf("%s: %v", host, err), fixServiceNetwork
	}
	res.Detail += rl.words()
	return res
}

func (r *run) sandbox(ctx context.Context) Result {
	res := Result{Section: secServices, Name: "sandbox service"}
	switch {
	case r.cfg.SandboxURL == "":
		res.Status, res.Detail = Skip, "SANDBOX_URL not set (optional): files shared in Slack are not analysed"
		return res
	case r.cfg.SandboxAPIKey == "":
		res.Status, res.Detail, res.Fix = Fail, "SANDBOX_API_KEY is not set (SANDBOX_URL is)", "set SANDBOX_API_KEY to the key the sandbox gave you"
		return res
	}
	c, err := app.NewSandbox(r.cfg, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		res.Status, res.Detail, res.Fix = Fail, err.Error(), "correct SANDBOX_URL (https://host[/prefix], without /apineo/<key>)"
		return res
	}
	var rl rateHeaders
	_, err = within(sandbox.WithResponseHeaders(ctx, rl.keep), r, func(ctx context.Context) (sandbox.Status, error) {
		return c.Status(ctx, unknownFileTask)
	})
	host := hostOf(r.cfg.SandboxURL)
	var api *sandbox.APIError
	switch reason := sandbox.ReasonOf(err); {
	case err == nil, errors.Is(err, sandbox.ErrTaskDoesNotExist), errors.Is(err, sandbox.ErrTaskNotFound):
		res.Status, res.Detail = Pass, fmt.Sprintf("%s accepted the key (status of an unknown task: %s)", host, answerWords(err))
	case reason == sandbox.ReasonAuth, errors.Is(err, sandbox.ErrInvalidKey):
		res.Status, res.Detail = Fail, fmt.Sprintf("%s refused the key: %v", host, err)
		res.Fix = "check SANDBOX_API_KEY: the key the sandbox gave you, whole, for this base URL"
	case reason == sandbox.ReasonRateLimited, reason == sandbox.ReasonQuota:
		res.Status, res.Detail = Warn, fmt.Sprintf("%s did not refuse the key but throttles it now: %v", host, err)
		res.Fix = "see the sandbox's limits for this key (VERDICTBOT_SANDBOX_RUN_RATE and _REPORT_RATE keep the bot below them)"
	case errors.As(err, &api):
		res.Status, res.Detail = Warn, fmt.Sprintf("%s answered with an error other than \"task does not exist\": %v", host, err)
		res.Fix = "the key was not refused; if the sandbox's answers look wrong, check SANDBOX_URL"
	default:
		res.Status, res.Detail, res.Fix = Fail, fmt.Sprintf("%s: %v", host, err), fixServiceNetwork
	}
	res.Detail += rl.words()
	return res
}

// answerWords is what the status of the unknown task answered.
func answerWords(err error) string {
	if err == nil {
		return "a status"
	}
	var rep *reputation.APIError
	var sb *sandbox.APIError
	switch {
	case errors.As(err, &rep):
		return fmt.Sprintf("%q", rep.Message)
	case errors.As(err, &sb):
		return fmt.Sprintf("%q", sb.Message)
	}
	return err.Error()
}

// rateHeaders keeps the rate-limit headers of the last answer a service
// gave (the RateLimit fields of the IETF httpapi draft, the common
// X-RateLimit-* and X-Rate-Limit-*, and Retry-After).
type rateHeaders struct {
	mu       sync.Mutex
	answered bool // an answer came
	seen     []string
}

// keep is the WithResponseHeaders hook.
func (h *rateHeaders) keep(_ int, hdr http.Header) {
	var seen []string
	for name, vs := range hdr {
		l := strings.ToLower(name)
		if strings.HasPrefix(l, "ratelimit") || strings.HasPrefix(l, "x-ratelimit") || strings.HasPrefix(l, "x-rate-limit") || l == "retry-after" {
			v := strings.Join(vs, ", ")
			if len(v) > 80 {
				v = v[:80] + "…"
			}
			seen = append(seen, name+": "+v)
		}
	}
	slices.Sort(seen)
	h.mu.Lock()
	h.answered, h.seen = true, seen
	h.mu.Unlock()
}

// words is "; rate-limit headers: …", "; no rate-limit headers", or ""
// when no answer came.
func (h *rateHeaders) words() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case !h.answered:
		return ""
	case len(h.seen) == 0:
		return "; no rate-limit headers"
	}
	return "; rate-limit headers: " + strings.Join(h.seen, ", ")
}

// hostOf is a base URL's scheme and host, for messages.
func hostOf(raw string) string {
	for _, p := range []string{"https://", "http://"} {
		if rest, ok := strings.CutPrefix(raw, p); ok {
			host, _, _ := strings.Cut(rest, "/")
			if i := strings.LastIndex(host, "@"); i >= 0 {
				host = host[i+1:]
			}
			return p + host
		}
	}
	return "the service"
}
