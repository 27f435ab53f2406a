package cards

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/verdictbot/verdictbot/scan"
)

// AllowanceStore counts uses of a key's allowance per sliding window
// (store.State.TakeAllowance: on PostgreSQL, shared by the replicas).
type AllowanceStore interface {
	TakeAllowance(key string, limit int, window time.Duration) (bool, error)
}

// UserCap is VERDICTBOT_USER_LINKS_PER_HOUR: the scan.Allowance that caps
// what one requester may have sent to the services per hour, links and
// file uploads together (what is actually sent: the pipelines never ask
// for a cached verdict, a join of an analysis in flight or a file the
// sandbox knows). The requester is a person (their user id, in whichever
// channels they post), an integration (its bot id) or, for a message with
// neither, its channel. Admins are not capped: they are the ones who check
// links in bulk (/scan), and the fair queues already keep their bursts from
// delaying anyone else's. Scheduled rechecks and resumed analyses are made
// for nobody and never counted.
//
// Past the cap the target is not sent now: a link's check is deferred to
// the recheck, which makes it later at low priority (its card says "not
// checked yet: too many links from you this hour; it will be checked at
// low priority" until then, see Messages.deferCheck), a file's card says
// "not checked: too many links and files from you this hour" (files are
// not deferred). A line goes to the alert channel once per requester per
// hour (across replicas: FirstTime), and OnRefused counts each target.
type UserCap struct {
	// Store counts the uses; PerHour is the cap (0: no cap).
	Store   AllowanceStore
	PerHour int
	// IsAdmin, if set, says whether a user is exempt.
	IsAdmin func(user string) bool
	// Replier posts the alert to AlertChannel ("" or nil: no alert).
	Replier      Replier
	AlertChannel string
	// FirstTime records a key and reports whether it is new (the store's
	// SeenEvent): one alert per requester and hour, whatever the replica.
	FirstTime func(key string) (bool, error)
	// OnRefused, if set, is called for every target not sent (metrics);
	// service is "reputation" or "sandbox".
	OnRefused func(service string)
	Log       *slog.Logger
	Now       func() time.Time

	mu      sync.Mutex
	alerted map[string]time.Time // requester key → the hour alerted, in this process
}

var _ scan.Allowance = (*UserCap)(nil)

// capKey is a requester's key for the cap.
func capKey(r scan.Requester) string {
	if r.User != "" {
		return r.User
	}
	if r.Channel != "" {
		return "#" + r.Channel
	}
	return ""
}

// Take implements scan.Allowance. A store that cannot answer lets the
// submission through (logged): the cap protects the quota, and a link
// left unchecked for a database hiccup would weaken the watch.
func (u *UserCap) Take(r scan.Requester) bool {
	key := capKey(r)
	if u.PerHour <= 0 || key == "" || (r.User != "" && u.IsAdmin != nil && u.IsAdmin(r.User)) {
		return true
	}
	ok, err := u.Store.TakeAllowance("links:"+key, u.PerHour, time.Hour)
	if err != nil {
		u.log().Warn("could not count a submission against the per-user cap; sending it", "error", err)
		return true
	}
	return ok
}

// Refused implements scan.Allowance: it counts the refusal and alerts,
// once per requester and hour.
func (u *UserCap) Refused(ctx context.Context, service string, who []scan.Requester) {
	if u.OnRefused != nil {
		u.OnRefused(service)
	}
	for _, r := range who {
		if key := capKey(r); key != "" && u.firstAlert(key) {
			u.log().Warn("a requester went over VERDICTBOT_USER_LINKS_PER_HOUR: their links are checked later at low priority, their files not at all, for the rest of the hour",
				"requester", key, "cap", u.PerHour, "channel", r.Channel)
			u.alert(ctx, r)
		}
	}
}

// firstAlert reports whether key's refusal is the first this hour: in this
// process (no store write per refusal), then across replicas.
func (u *UserCap) firstAlert(key string) bool {
	now := time.Now
	if u.Now != nil {
		now = u.Now
	}
	hour := now().UTC().Truncate(time.Hour)
	u.mu.Lock()
	if u.alerted == nil {
		u.alerted = map[string]time.Time{}
	}
	if u.alerted[key].Equal(hour) {
		u.mu.Unlock()
		return false
	}
	u.alerted[key] = hour
	for k, h := range u.alerted { // keep this hour's only
		if !h.Equal(hour) {
			delete(u.alerted, k)
		}
	}
	u.mu.Unlock()
	if u.FirstTime == nil {
		return true
	}
	first, err := u.FirstTime("links-cap-alert:" + key + ":" + hour.Format("2006-01-02T15"))
	if err != nil {
		return true // better a second line than none
	}
	return first
}

// alert posts one line about r to the alert channel.
func (u *UserCap) alert(ctx context.Context, r scan.Requester) {
	if u.Replier == nil || u.AlertChannel == "" {
		return
	}
	var who string
	switch {
	case strings.HasPrefix(r.User, BotRequester):
		who = fmt.Sprintf("The integration `%s`", strings.TrimPrefix(r.User, BotRequester))
	case r.User != "":
		who = fmt.Sprintf("<@%s>", r.User)
	default:
		who = "Messages without an author"
	}
	where := ""
	if r.Channel != "" {
		where = fmt.Sprintf(" (the latest in <#%s>)", r.Channel)
	}
	text := fmt.Sprintf(":warning: %s%s sent more than %d links and files to the analysis services within an hour "+
		"(VERDICTBOT_USER_LINKS_PER_HOUR). Until the hour has passed, their further links are checked later, at low priority, "+
		"and their files are not checked; their cards say so.",
		who, where, u.PerHour)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := u.Replier.Reply(ctx, u.AlertChannel, "", text); err != nil {
		u.log().Warn("per-user cap alert failed", "channel", u.AlertChannel, "error", err)
	}
}

func (u *UserCap) log() *slog.Logger {
	if u.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return u.Log
}
