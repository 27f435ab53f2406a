//go:build benchprofile

package main

import (
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
)

// A binary built with -tags benchprofile (BenchmarkThroughputEndToEnd
// builds one when VERDICTBOT_BENCH_CPUPROFILE is set) takes a CPU profile
// of the span the benchmark measures: SIGUSR1 starts it, SIGUSR2 stops it
// and renames VERDICTBOT_TEST_CPUPROFILE.tmp to VERDICTBOT_TEST_CPUPROFILE,
// which tells the benchmark it is complete; the allocations since the
// process started go to VERDICTBOT_TEST_CPUPROFILE.allocs beside it. (VERDICTBOT_TEST_* are not
// settings; production builds do not contain this file.) The goroutine
// lives as long as the process: it belongs to the benchmark's binary.
func init() {
	path := os.Getenv("VERDICTBOT_TEST_CPUPROFILE")
	if path == "" {
		return
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGUSR2)
	go func() {
		var f *os.File
		for sig := range sigs {
			switch {
			case sig == syscall.SIGUSR1 && f == nil:
				var err error
				if f, err = os.Create(path + ".tmp"); err != nil {
					f = nil
					continue
				}
				if err := pprof.StartCPUProfile(f); err != nil {
					_ = f.Close()
					f = nil
				}
			case sig == syscall.SIGUSR2 && f != nil:
				pprof.StopCPUProfile()
				// Beside it, the allocations since the start (path.allocs).
				if af, err := os.Create(path + ".allocs"); err == nil {
					_ = pprof.Lookup("allocs").WriteTo(af, 0)
					_ = af.Close()
				}
				if err := f.Close(); err == nil {
					_ = os.Rename(path+".tmp", path)
				}
				f = nil
			}
		}
	}()
}
