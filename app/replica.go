package app

import (
	"crypto/rand"
	"encoding/hex"
	"os"
)

// replicaID names this process among the replicas sharing the database:
// the host name (the pod's name on Kubernetes) and 8 random hex digits,
// new at every start, so a restarted replica never mistakes its
// predecessor's work for its own running work.
func replicaID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "verdictbot"
	}
	var b [4]byte
	rand.Read(b[:])
	return host + "-" + hex.EncodeToString(b[:])
}
