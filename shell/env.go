package shell

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/verdictbot/verdictbot/app"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/sim"

	"github.com/verdictbot/verdictbot/config"
)

// shellEnv is what the shell runs in: its state directory and log file,
// and the two services (the environment's, else the built-in simulator).
type shellEnv struct {
	dir      string
	keepLogs bool // dir is VERDICTBOT_DATA_DIR: say where the logs are
	logFile  *os.File

	repURL, repName string
	repKey          config.Secret
	sbURL, sbName   string
	sbKey           config.Secret

	closers []func() // run by close, last first
}

// builtinSim names the simulator the shell starts itself.
const builtinSim = "built-in simulator"

// openShellEnv reads VERDICTBOT_DATA_DIR and the services' settings from
// procEnv, and starts the simulator for a service the environment does
// not name.
func openShellEnv(procEnv environment, profile sim.Profile) (_ *shellEnv, err error) {
	env := &shellEnv{}
	defer func() {
		if err != nil {
			env.close()
		}
	}()
	// State: VERDICTBOT_DATA_DIR, or a directory removed on the way out.
	env.dir = strings.TrimSpace(procEnv.get("VERDICTBOT_DATA_DIR"))
	env.keepLogs = env.dir != ""
	if env.dir == "" {
		tmp, err := os.MkdirTemp("", "verdictbot-shell-")
		if err != nil {
			return nil, err
		}
		env.closers = append(env.closers, func() { os.RemoveAll(tmp) })
		env.dir = tmp
	} else if err := os.MkdirAll(env.dir, 0o700); err != nil {
		return nil, fmt.Errorf("VERDICTBOT_DATA_DIR: %w", err)
	}
	env.logFile, err = os.OpenFile(filepath.Join(env.dir, "shell.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("VERDICTBOT_DATA_DIR: %w", err)
	}
	env.closers = append(env.closers, func() { env.logFile.Close() })

	// The services: the environment's, else the built-in simulator.
	env.repURL, env.repKey = strings.TrimSpace(procEnv.get("REPUTATION_URL")), config.Secret(procEnv.get("REPUTATION_API_KEY"))
	env.sbURL, env.sbKey = strings.TrimSpace(procEnv.get("SANDBOX_URL")), config.Secret(procEnv.get("SANDBOX_API_KEY"))
	if env.repURL != "" && env.repKey == "" {
		return nil, errors.New("REPUTATION_API_KEY is not set (REPUTATION_URL is)")
	}
	env.repName, env.sbName = env.repURL, env.sbURL
	if env.repURL == "" || env.sbURL == "" {
		base, stop, err := sim.StartLocal(sim.Config{Profile: profile})
		if err != nil {
			return nil, err
		}
		env.closers = append(env.closers, stop)
		if env.repURL == "" {
			env.repURL, env.repKey, env.repName = base, shellSimKey, builtinSim
		}
		if env.sbURL == "" {
			env.sbURL, env.sbKey, env.sbName = base, shellSimKey, builtinSim
		}
	}
	return env, nil
}

// close stops the simulator, closes the log and removes a temporary
// state directory.
func (env *shellEnv) close() {
	for i := len(env.closers) - 1; i >= 0; i-- {
		env.closers[i]()
	}
	env.closers = nil
}

// shellPerson is someone the shell can act as (`as @name`).
type shellPerson struct {
	id, name string
	admin    bool // in VERDICTBOT_ADMINS
}

// shellPeople are the fake workspace's members of #security: you (an
// admin, the default) and two analysts who are not admins.
var shellPeople = []shellPerson{
	{shellUser, shellUserName, true},
	{"U0ALICE", "alice", false},
	{"U0BOB", "bob", false},
}

// findPerson finds a person by @name, name or user id.
func findPerson(who string) (shellPerson, bool) {
	who = strings.TrimPrefix(strings.TrimSpace(who), "@")
	for _, p := range shellPeople {
		if strings.EqualFold(who, p.name) || strings.EqualFold(who, p.id) {
			return p, true
		}
	}
	return shellPerson{}, false
}

// startShellSlack starts the fake Slack on a free loopback port, with the
// shell's channel and its members.
func startShellSlack() (*slackfake.Server, error) {
	fake, err := slackfake.New() // 127.0.0.1, a free port
	if err != nil {
		return nil, err
	}
	var members []string
	for _, p := range shellPeople {
		members = append(members, p.id)
		fake.AddUser(slackfake.User{ID: p.id, Name: p.name, RealName: p.name, IsAdmin: p.admin})
	}
	fake.AddChannel(slackfake.Channel{ID: Channel, Name: shellChannelName, Members: members})
	return fake, nil
}

// config is the bot's configuration in the shell: the defaults (the
// channel mode included: quiet, as in production), pointed at the fake
// Slack and the services, no ops port.
func (env *shellEnv) config(fake *slackfake.Server) (config.Config, error) {
	cfg := config.Default()
	cfg.SlackBotToken, cfg.SlackAppToken, cfg.SlackAPIURL = config.Secret(fake.BotToken()), config.Secret(fake.AppToken()), fake.APIURL()
	cfg.ReputationURL, cfg.ReputationAPIKey = env.repURL, env.repKey
	cfg.SandboxURL, cfg.SandboxAPIKey = env.sbURL, env.sbKey
	cfg.DataDir = env.dir
	cfg.Admins = nil
	for _, p := range shellPeople {
		if p.admin {
			cfg.Admins = append(cfg.Admins, p.id)
		}
	}
	cfg.HTTPAddr = "off" // no health or metrics port
	if err := cfg.Validate(true); err != nil {
		return config.Config{}, err
	}
	return cfg, nil
}

// shellBot is the app running for the shell.
type shellBot struct {
	app    *app.App      // the wired app: the shell reads cards from its store
	served chan struct{} // closed when Run returns and the app is closed, with err set
	err    error
	cancel context.CancelFunc
	stderr io.Writer
}

// startShellBot wires the app and runs it, the same as `run`, and waits
// until the bot is connected to the fake. The shell reads the cards
// through the app's store: bbolt lets one handle per file, so the shell
// cannot open the store a second time.
func startShellBot(ctx context.Context, cfg config.Config, o app.Options, logger *slog.Logger, fake *slackfake.Server, stderr io.Writer) (*shellBot, error) {
	o.Logger = logger
	a, err := app.New(cfg, o)
	if err != nil {
		return nil, fmt.Errorf("the bot did not start: %w", err)
	}
	botCtx, cancel := context.WithCancel(ctx)
	b := &shellBot{app: a, served: make(chan struct{}), cancel: cancel, stderr: stderr}
	go func() {
		defer close(b.served)
		defer a.Close()
		b.err = a.Run(botCtx)
	}()
	cctx, cancelWait := context.WithTimeout(ctx, 15*time.Second)
	go func() { // stop waiting if Run gives up
		select {
		case <-b.served:
			cancelWait()
		case <-cctx.Done():
		}
	}()
	err = fake.WaitConnected(cctx, 1)
	cancelWait()
	select {
	case <-b.served:
		b.stop()
		return nil, fmt.Errorf("the bot did not start: %w", errOrStopped(b.err))
	default:
	}
	if err != nil {
		b.stop()
		return nil, fmt.Errorf("the bot did not connect: %w", err)
	}
	return b, nil
}

// stopped is the error for the bot having stopped on its own.
func (b *shellBot) stopped() error {
	return fmt.Errorf("the bot stopped: %w", errOrStopped(b.err))
}

// stop stops the bot and waits for Run to return, for at most 20s.
func (b *shellBot) stop() {
	b.cancel()
	select {
	case <-b.served:
	case <-time.After(20 * time.Second):
		fmt.Fprintln(b.stderr, "verdictbot shell: the bot did not stop within 20s")
	}
}

func errOrStopped(err error) error {
	if err == nil {
		return errors.New("it stopped")
	}
	return err
}

// isTerminal reports whether f is an *os.File open on a terminal.
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	if !ok {
		return false
	}
	st, err := file.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// flip makes the reputation service's next scan of url give scores,
// through the simulator's admin API (POST /_sim/flip at the service's
// origin). A service that is not the simulator answers something else:
// the error says flip needs the simulator.
func (env *shellEnv) flip(ctx context.Context, url string, scores sim.Scores) error {
	base, err := neturl.Parse(env.repURL)
	if err != nil || base.Host == "" {
		return errors.New("flip needs the simulator as the URL service")
	}
	admin := &neturl.URL{Scheme: base.Scheme, Host: base.Host, Path: "/_sim/flip"}
	body, _ := json.Marshal(map[string]any{"url": url, "scores": scores})
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, admin.String(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		// The admin URL holds no key; still, say no more than the host.
		return fmt.Errorf("flip: the URL service at %s did not answer", base.Host)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("flip needs the simulator as the URL service (%s answered %s to POST /_sim/flip)", base.Host, resp.Status)
	}
	return nil
}
