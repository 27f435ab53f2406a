//go:build race

package notify

// raceEnabled lets heavy generated tests draw fewer cases under the race
// detector, which slows them about tenfold.
const raceEnabled = true
