//go:build race

package qrscan

// raceEnabled is true under -race, where memory figures are not
// meaningful (the detector's shadow memory dwarfs the decode's).
const raceEnabled = true
