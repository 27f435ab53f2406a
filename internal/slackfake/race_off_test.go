//go:build !race

package slackfake_test

// raceDetector tells timing checks that the race detector slows the code.
const raceDetector = false
