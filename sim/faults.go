package sim

import (
	"math"
	"math/rand/v2"
	"net/http"
	"time"

	"golang.org/x/time/rate"
)

// Faults are failures injected in front of the services, before routing,
// key and rate checks. They apply to requests under the service prefixes
// only (never to /_sim/). The zero value injects nothing.
type Faults struct {
	// Service scopes Delay and the 5xx errors: "" for both services,
	// ServiceReputation or ServiceSandbox.
	Service string

	// Delay holds every in-scope answer back this long (real time; the
	// wait ends early when the client goes away).
	Delay time.Duration

	// ErrorEvery fails every Nth in-scope request (counted from SetFaults).
	ErrorEvery int
	// ErrorRate fails this share of in-scope requests, drawn from a PCG
	// generator seeded with Seed, so a fixed request order gives a fixed
	// failure pattern.
	ErrorRate float64
	Seed      uint64
	// ErrorStatus is the status of an injected failure; its body is always
	// an HTML page, as a gateway or proxy sends. Default 502. 200 gives the
	// "HTML page with status 200" case (captive portal, broken proxy).
	ErrorStatus int

	// Throttle forces 429 answers regardless of the configured limits.
	Throttle []Throttle

	// ShotsCorrupt breaks the screenshots of reported sandbox tasks that
	// have some, as a middlebox that mangles the vendor's file downloads
	// does: both screenshot endpoints answer 200 with their usual headers,
	// but the archive is cut short (so it cannot be read) and every
	// numbered shot, whatever the number (existing or not), is a JPEG that
	// lost its first bytes (so it is not an image). Other endpoints, and
	// the JSON errors of tasks not reported or without shots, are not
	// affected.
	ShotsCorrupt bool
	// ShotsDelay holds back the answers of both screenshot endpoints (only)
	// this long (real time; the wait ends early when the client goes away).
	ShotsDelay time.Duration
}

// Throttle forces the next Count requests of a service and bucket to be
// answered with 429 and the given Retry-After.
type Throttle struct {
	Service    string        // "" for both services
	Bucket     string        // BucketRun, BucketReport, or "" for both
	Count      int           // how many requests to throttle
	RetryAfter time.Duration // rounded up to whole seconds, at least 1
}

// faultState is the live form of Faults, guarded by Server.mu.
type faultState struct {
	f    Faults
	n    int // in-scope requests seen since SetFaults
	rng  *rand.Rand
	left []int // remaining count per Throttle
}

func newFaultState(f Faults) faultState {
	f.Throttle = append([]Throttle(nil), f.Throttle...)
	fs := faultState{f: f, rng: rand.New(rand.NewPCG(f.Seed, f.Seed^0x9e3779b97f4a7c15))}
	for _, t := range f.Throttle {
		fs.left = append(fs.left, t.Count)
	}
	return fs
}

// faultDecision is what the fault set does to one request.
type faultDecision struct {
	delay      time.Duration
	status     int // injected failure status, 0 for none
	retryAfter int // forced 429 with this Retry-After, 0 for none
}

// decide consumes the fault set for one request of rt. Caller holds mu.
func (fs *faultState) decide(rt *route) faultDecision {
	var d faultDecision
	f := &fs.f
	if rt.op == OpScreenshot || rt.op == OpScreenshotArchive {
		d.delay = f.ShotsDelay
	}
	if f.Service == "" || f.Service == rt.service {
		d.delay += f.Delay
		fs.n++
		fail := f.ErrorEvery > 0 && fs.n%f.ErrorEvery == 0
		if f.ErrorRate > 0 && fs.rng.Float64() < f.ErrorRate {
			fail = true
		}
		if fail {
			d.status = f.ErrorStatus
			if d.status == 0 {
				d.status = http.StatusBadGateway
			}
			return d
		}
	}
	for i, t := range f.Throttle {
		if fs.left[i] > 0 && (t.Service == "" || t.Service == rt.service) && (t.Bucket == "" || t.Bucket == rt.bucket) {
			fs.left[i]--
			d.retryAfter = retryAfterSeconds(t.RetryAfter)
			return d
		}
	}
	return d
}

// retryAfterSeconds rounds d up to whole seconds, at least 1.
func retryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// keyLimits are the buckets and quota use of one key of one service.
type keyLimits struct {
	run, report *rate.Limiter // nil means unlimited
	used        int
}

func newKeyLimits(l Limits) *keyLimits {
	mk := func(r float64, burst int) *rate.Limiter {
		if r <= 0 {
			return nil
		}
		if burst <= 0 {
			burst = max(1, int(math.Ceil(r)))
		}
		return rate.NewLimiter(rate.Limit(r), burst)
	}
	return &keyLimits{run: mk(l.RunRate, l.RunBurst), report: mk(l.ReportRate, l.ReportBurst)}
}

// admit charges one request of bucket at now. It returns quota true when
// the quota is spent, or retryAfter > 0 when the bucket is empty.
func (k *keyLimits) admit(l Limits, bucket string, now time.Time) (quota bool, retryAfter int) {
	if l.Quota > 0 && k.used >= l.Quota {
		return true, 0
	}
	lim := k.report
	if bucket == BucketRun {
		lim = k.run
	}
	if lim != nil {
		r := lim.ReserveN(now, 1)
		if delay := r.DelayFrom(now); delay > 0 {
			r.CancelAt(now)
			return false, retryAfterSeconds(delay)
		}
	}
	k.used++
	return false, 0
}
