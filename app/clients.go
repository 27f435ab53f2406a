package app

import (
	"log/slog"
	"net/http"

	"github.com/verdictbot/verdictbot/reputation"
	"github.com/verdictbot/verdictbot/sandbox"

	"github.com/verdictbot/verdictbot/config"
)

// NewReputation builds the URL service client from the settings (budgets,
// TLS options, logger); observe, if set, receives every request for metrics.
func NewReputation(cfg config.Config, log *slog.Logger, observe func(reputation.Event)) (*reputation.Client, error) {
	opts := []reputation.Option{
		reputation.WithRateLimits(
			reputation.Limit{Rate: cfg.ReputationRunRate, Burst: max(1, int(cfg.ReputationRunRate))},
			reputation.Limit{Rate: cfg.ReputationReportRate, Burst: max(1, int(cfg.ReputationReportRate*2))}),
		reputation.WithLogger(log.With("service", "reputation")),
	}
	if observe != nil {
		opts = append(opts, reputation.WithObserver(observe))
	}
	if cfg.ServiceCAFile != "" {
		opts = append(opts, reputation.WithCAFile(cfg.ServiceCAFile))
	}
	if cfg.ServiceInsecureTLS {
		opts = append(opts, reputation.WithInsecureTLS())
	}
	return reputation.New(cfg.ReputationURL, cfg.ReputationAPIKey.Reveal(), opts...)
}

// NewSandbox builds the sandbox client from the settings, like NewReputation.
func NewSandbox(cfg config.Config, log *slog.Logger, observe func(sandbox.Event)) (*sandbox.Client, error) {
	opts := []sandbox.Option{
		sandbox.WithRateLimits(
			sandbox.Limit{Rate: cfg.SandboxRunRate, Burst: max(1, int(cfg.SandboxRunRate))},
			sandbox.Limit{Rate: cfg.SandboxReportRate, Burst: max(1, int(cfg.SandboxReportRate*2))}),
		sandbox.WithLogger(log.With("service", "sandbox")),
	}
	if observe != nil {
		opts = append(opts, sandbox.WithObserver(observe))
	}
	if cfg.ServiceCAFile != "" {
		opts = append(opts, sandbox.WithCAFile(cfg.ServiceCAFile))
	}
	if cfg.ServiceInsecureTLS {
		opts = append(opts, sandbox.WithInsecureTLS())
	}
	return sandbox.New(cfg.SandboxURL, cfg.SandboxAPIKey.Reveal(), opts...)
}

// slackHTTP is the Slack Web API's HTTP client: the default transport's
// settings with the proxy from the environment (HTTPS_PROXY, NO_PROXY)
// stated, so that a change of transport cannot drop it.
func slackHTTP() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyFromEnvironment
	return &http.Client{Transport: tr}
}
