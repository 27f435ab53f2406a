package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"

	"github.com/verdictbot/verdictbot/sim"
)

// runSim serves the simulator of both analysis services until ctx is
// cancelled. It prints one line with the two base URLs first.
func runSim(ctx context.Context, env environment, args []string, stdout, stderr io.Writer) error {
	cfg, addr, err := parseSimFlags(env, args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	base := "http://" + ln.Addr().String()
	if ta, ok := ln.Addr().(*net.TCPAddr); ok && ta.IP.IsUnspecified() {
		// Listening on every interface (--addr 0.0.0.0:…): the line names
		// the loopback address, the one a bot on this machine may reach
		// over plain http (REPUTATION_URL must be https otherwise).
		base = "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(ta.Port))
	}
	fmt.Fprintf(stdout, "REPUTATION_URL=%s SANDBOX_URL=%s\n", base, base)
	return sim.Serve(ctx, ln, cfg)
}

// parseSimFlags reads the flags of `verdictbot sim` into a simulator
// configuration and a listen address.
func parseSimFlags(env environment, args []string, stderr io.Writer) (sim.Config, string, error) {
	fs, f := newSimFlags()
	fs.SetOutput(io.Discard) // Main prints the error and where help is
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			writeCommandHelp(stderr, env, findCLICommand("sim"))
			return sim.Config{}, "", err
		}
		return sim.Config{}, "", fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return sim.Config{}, "", fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	cfg, err := f.Config()
	if err != nil {
		return sim.Config{}, "", err
	}
	return cfg, f.Addr(), nil
}

// newSimFlags is sim's flag set (also printed by its help).
func newSimFlags() (*flag.FlagSet, *sim.Flags) {
	fs := flag.NewFlagSet("verdictbot sim", flag.ContinueOnError)
	return fs, sim.AddFlags(fs)
}
