//go:build race

package slackfake_test

// raceDetector tells timing checks that the race detector slows the code
// (5-10 times, by its documentation).
const raceDetector = true
